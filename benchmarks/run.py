#!/usr/bin/env python3
"""Benchmark git-reduce against C-Vise (and shrinkray, when installed).

usage: python benchmarks/run.py [--cases DIR ...] [--tools gitreduce,cvise,shrinkray]
                                [--jobs 2] [--timeout-per-case S] [--out benchmarks/out]
                                [--use-baselines] [--record-baselines]
                                [--baseline-dir benchmarks/baselines] [--gitreduce-cmd CMD]
       python benchmarks/run.py --pairs [--algorithms ppr,dd,dd-empty] [--dd-timeout S]
                                [--cases ...]

A case is a folder holding ``variant.EXT`` and ``test.sh`` (git-bisect-run convention:
0 good, 1 bad = bug present, 125 unusable) and usually ``interesting.sh`` (exit 0 iff
the bug is present; generated on the fly when missing).  Every tool runs on a copy of
the variant in a fresh scratch dir, cases and tools strictly one after another.  Sizes
are counted only with ``shared/bench/tools/tokens.py``.  Every final file is checked
with the case's ``test.sh`` (it must exit 1).

``--pairs [--algorithms ppr,dd,dd-empty] [--dd-timeout S]`` runs git-reduce's pairwise mode
instead, on cases holding ``seed.EXT``, ``variant.EXT`` and ``test.sh``: each
algorithm on copies in a fresh scratch dir outside any git repository with a fresh
``XDG_CACHE_HOME``; the reduced seed must make ``test.sh`` exit 0 and the reduced
variant exit 1, and ``tokens.py SEED VARIANT`` must agree with the sizes git-reduce
reports.  PPR is compared with the stored C-Vise baselines and with DD
(``pairs.md`` / ``pairs.json`` in ``--out``).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, TypeVar

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SHARED_BENCH = (REPO / ".." / "shared" / "bench").resolve()
DEFAULT_CASES_ROOT = SHARED_BENCH / "cases"
DEFAULT_TOKENS_PY = SHARED_BENCH / "tools" / "tokens.py"
FIXTURES_ROOT = REPO / "fixtures"
BASELINE_DIR = HERE / "baselines"
VENV_PYTHON = Path("/work/venv/bin/python")
VENV_GITREDUCE = Path("/work/venv/bin/git-reduce")
ALL_TOOLS = ("gitreduce", "cvise", "shrinkray")
C_LIKE = {".c", ".h", ".i", ".cc", ".cpp", ".cxx", ".hpp", ".C"}
MACHINE_NOTE = "2 cores, shared machine"
STATS_KEYS = ("tests_run", "cache_hits", "oracle_seconds", "wall_seconds", "overhead_seconds")


# ---------------------------------------------------------------------------- helpers


@dataclass
class Case:
    name: str
    path: Path
    variant: Path
    origin: str  # "shared" (public bench) or "fixtures" or "custom"

    @property
    def ext(self) -> str:
        return self.variant.suffix

    @property
    def test_sh(self) -> Path:
        return self.path / "test.sh"


@dataclass
class Result:
    case: str
    tool: str
    initial_tokens: int | None = None
    final_tokens: int | None = None
    wall_seconds: float | None = None
    tests_run: int | None = None
    tests_counted: int | None = None  # by the counting wrapper, when one was used
    cache_hits: int | None = None
    oracle_seconds: float | None = None
    overhead_seconds: float | None = None
    overhead_percent: float | None = None
    overhead_source: str | None = None  # "stats" (the CLI's own) or "wrapper" (measured)
    final_test_sh_exit: int | None = None
    reproduces: bool = False
    timed_out: bool = False
    exit_status: int | None = None
    command: str = ""
    source: str = "run"  # "run" or "baseline"
    result_file: str | None = None
    log_file: str | None = None
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def python_for_tokens() -> str:
    return str(VENV_PYTHON) if VENV_PYTHON.exists() else sys.executable


def count_tokens(path: Path, tokens_py: Path) -> int | None:
    if not path.is_file():
        return None
    out = subprocess.run(
        [python_for_tokens(), str(tokens_py), str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    try:
        return int(out.stdout.strip())
    except ValueError:
        return None


def run_test(case: Case, path: Path, timeout: float = 300) -> int | None:
    """Exit status of the case's test.sh on ``path`` (None if it could not run)."""
    if not path.is_file():
        return None
    try:
        return subprocess.run(
            [str(case.test_sh), str(path.resolve())],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=timeout,
            check=False,
        ).returncode
    except subprocess.TimeoutExpired:
        return 124
    except OSError:
        return None


def loadavg() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def tool_version(cmd: list[str]) -> str:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return "unavailable"
    text = (out.stdout.strip() or out.stderr.strip()).splitlines()
    return text[0] if text else "unknown"


def write_timing_wrapper(path: Path, log: Path, target: Path) -> None:
    """Script that runs ``target "$@"`` and appends one "start end" line to ``log``.

    The number of lines is the number of test runs; the intervals give the wall time
    during which at least one test was running.
    """
    path.write_text(
        "#!/bin/bash\n"
        "s=$EPOCHREALTIME\n"
        f'{shlex.quote(str(target))} "$@"\n'
        "rc=$?\n"
        f'echo "$s $EPOCHREALTIME $rc" >> {shlex.quote(str(log))}\n'
        "exit $rc\n"
    )
    path.chmod(0o755)


def write_interesting_adapter(path: Path, case: Case) -> None:
    """C-Vise-style adapter (exit 0 iff test.sh exits 1) for cases without interesting.sh."""
    path.write_text(
        "#!/bin/bash\n"
        f"f=${{1:-{shlex.quote(case.variant.name)}}}\n"
        f'{shlex.quote(str(case.test_sh))} "$f"\n'
        "[ $? -eq 1 ]\n"
    )
    path.chmod(0o755)


def read_timing_log(log: Path) -> list[tuple[float, float]]:
    spans: list[tuple[float, float]] = []
    if not log.exists():
        return spans
    for line in log.read_text(errors="replace").splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        try:
            start, end = (float(p.replace(",", ".")) for p in parts[:2])
        except ValueError:
            continue
        spans.append((start, end))
    return spans


def busy_seconds(spans: list[tuple[float, float]], lo: float, hi: float) -> float:
    """Length of the union of ``spans`` clipped to [lo, hi]."""
    total = 0.0
    cur_s: float | None = None
    cur_e = 0.0
    for s, e in sorted((max(s, lo), min(e, hi)) for s, e in spans):
        if e <= s:
            continue
        if cur_s is None or s > cur_e:
            if cur_s is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_s is not None:
        total += cur_e - cur_s
    return total


def run_group(
    cmd: list[str],
    cwd: Path,
    log: Path,
    timeout: float | None,
    stdout: Path | None = None,
    env: dict[str, str] | None = None,
) -> tuple[int | None, float, float, float, bool]:
    """Run ``cmd`` in its own process group (killed as a whole on timeout).

    Output goes to ``log`` (stdout to ``stdout`` instead, when given); ``env`` replaces
    the environment when given.  On timeout the group gets SIGTERM, then SIGKILL.
    Returns (exit status, wall seconds, start epoch, end epoch, timed out).
    """
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as fh, contextlib.ExitStack() as stack:
        out_fh = stack.enter_context(stdout.open("w")) if stdout else fh
        fh.write(f"$ (cd {shlex.quote(str(cwd))} && {shlex.join(cmd)})\n")
        fh.flush()
        t_epoch0 = time.time()
        t0 = time.monotonic()
        try:
            proc = subprocess.Popen(
                cmd,
                cwd=cwd,
                stdout=out_fh,
                stderr=fh if stdout else subprocess.STDOUT,
                start_new_session=True,
                env=env,
            )
        except OSError as exc:
            fh.write(f"cannot start: {exc}\n")
            return None, 0.0, t_epoch0, t_epoch0, False
        timed_out = False
        rc: int | None
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            rc = None
            for sig in (signal.SIGTERM, signal.SIGKILL):
                try:
                    os.killpg(proc.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    proc.wait(timeout=15)
                    break
                except subprocess.TimeoutExpired:
                    continue
        wall = time.monotonic() - t0
        t_epoch1 = time.time()
        # leftover members of the group (e.g. test scripts still running after exit)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
    return rc, wall, t_epoch0, t_epoch1, timed_out


# ---------------------------------------------------------------------------- cases


def is_case_dir(path: Path) -> bool:
    return (path / "test.sh").is_file() and any(p.is_file() for p in path.glob("variant.*"))


def load_case(path: Path, origin: str) -> Case:
    path = path.resolve()
    variants = sorted(p for p in path.glob("variant.*") if p.is_file())
    if len(variants) != 1:
        raise ValueError(f"expected exactly one variant.* file, found {len(variants)}")
    return Case(name=path.name, path=path, variant=variants[0], origin=origin)


CaseT = TypeVar("CaseT", bound=Case)


def _discover(
    dirs: list[Path] | None,
    is_case: Callable[[Path], bool],
    load: Callable[[Path, str], CaseT],
) -> list[CaseT]:
    """Each DIR is a case folder, or a folder whose sub-folders are cases (default: the
    shared public cases, then fixtures/); names stay unique in the tables."""
    roots: list[tuple[Path, str]]
    if dirs:
        roots = [(d, "custom") for d in dirs]
    else:
        roots = [(DEFAULT_CASES_ROOT, "shared"), (FIXTURES_ROOT, "fixtures")]
    cases: list[CaseT] = []
    seen: set[str] = set()
    for root, origin in roots:
        if not root.is_dir():
            if dirs:
                raise SystemExit(f"no such case dir: {root}")
            continue
        found = [root] if is_case(root) else sorted(p for p in root.iterdir() if is_case(p))
        for p in found:
            try:
                case = load(p, origin)
            except ValueError as exc:
                print(f"skipping {p}: {exc}", file=sys.stderr)
                continue
            if case.name in seen:
                case.name = f"{origin}/{case.name}"
            seen.add(case.name)
            cases.append(case)
    return cases


def discover_cases(dirs: list[Path] | None) -> list[Case]:
    return _discover(dirs, is_case_dir, load_case)


def _missing_debian_packages(case: Case) -> list[str]:
    """The Debian packages case.json requires that dpkg does not know as installed."""
    try:
        wanted = json.loads((case.path / "case.json").read_text())["requires"]["debian"]
    except (OSError, ValueError, KeyError, TypeError):
        return []
    missing = []
    for package in wanted:
        status = subprocess.run(
            ["dpkg-query", "-W", "-f=${Status}", package],
            capture_output=True,
            text=True,
            check=False,
        )
        if "install ok installed" not in status.stdout:
            missing.append(package)
    return missing


def unusable_reason(case: Case) -> str | None:
    """Why the case cannot be measured on this machine (test.sh misjudges its originals),
    or None. A missing compiler would otherwise show up as a failed reduction."""
    seeds = sorted(p for p in case.path.glob("seed.*") if p.is_file())
    expected = [(case.variant, 1)] + [(seed, 0) for seed in seeds[:1]]
    for path, want in expected:
        got = run_test(case, path)
        if got != want:
            reason = f"test.sh {path.name} exits {got}, not {want}"
            missing = _missing_debian_packages(case)
            if missing:
                reason += f" (case.json requires, not installed: {', '.join(missing)})"
            return reason
    return None


def usable_cases(cases: list[CaseT], notes: list[str]) -> list[CaseT]:
    """The cases this machine can run; the others are named in the notes and on stderr."""
    usable = []
    for case in cases:
        reason = unusable_reason(case)
        if reason is None:
            usable.append(case)
            continue
        note = f"{case.name}: skipped, {reason}."
        notes.append(note)
        print(note, file=sys.stderr, flush=True)
    return usable


# ---------------------------------------------------------------------------- tools


def resolve_gitreduce(cmd: str | None) -> list[str] | None:
    if cmd:
        return shlex.split(cmd)
    found = shutil.which("git-reduce")
    if found:
        return [found]
    if VENV_GITREDUCE.exists():
        return [str(VENV_GITREDUCE)]
    return None


def gitreduce_stats_mode(cmd: list[str]) -> str | None:
    """How git-reduce reports its stats: "file" (--json-stats FILE), "stdout" (--json), None."""
    try:
        out = subprocess.run(
            [*cmd, "--help"], capture_output=True, text=True, check=False, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = out.stdout + out.stderr
    if "--json-stats" in text:
        return "file"
    if re.search(r"--json(?![-\w])", text):
        return "stdout"
    return None


def parse_json_output(text: str) -> dict[str, Any] | None:
    """The JSON object in a tool's stdout (the whole text, or the last top-level object)."""
    try:
        data = json.loads(text)
        return data if isinstance(data, dict) else None
    except ValueError:
        pass
    lines = text.splitlines()
    for i in range(len(lines) - 1, -1, -1):
        if lines[i].startswith("{"):
            try:
                data = json.loads("\n".join(lines[i:]))
            except ValueError:
                continue
            return data if isinstance(data, dict) else None
    return None


def _finish(
    res: Result,
    case: Case,
    final: Path,
    args: argparse.Namespace,
    keep_as: Path,
) -> None:
    """Count tokens of the final file, check it with test.sh, keep a copy."""
    res.initial_tokens = count_tokens(case.variant, args.tokens_py)
    res.final_tokens = count_tokens(final, args.tokens_py)
    res.final_test_sh_exit = run_test(case, final)
    res.reproduces = res.final_test_sh_exit == 1
    if final.is_file():
        keep_as.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(final, keep_as)
        res.result_file = str(keep_as)


def _apply_wrapper_counts(
    res: Result, timing_log: Path, t0: float, t1: float, set_overhead: bool
) -> None:
    spans = read_timing_log(timing_log)
    res.tests_counted = len(spans)
    if res.tests_run is None:
        res.tests_run = len(spans)
    busy = busy_seconds(spans, t0, t1)
    res.extra["wrapper_busy_seconds"] = round(busy, 3)
    if spans:
        res.extra["wrapper_test_seconds_sum"] = round(sum(e - s for s, e in spans), 3)
    if set_overhead and res.wall_seconds:
        res.overhead_seconds = round(max(0.0, res.wall_seconds - busy), 3)
        res.overhead_percent = round(100.0 * res.overhead_seconds / res.wall_seconds, 1)
        res.overhead_source = "wrapper"


def run_gitreduce(case: Case, scratch: Path, args: argparse.Namespace) -> Result:
    res = Result(case=case.name, tool="gitreduce")
    cmd0 = args.gitreduce_argv
    if cmd0 is None:
        res.error = "git-reduce not found (use --gitreduce-cmd)"
        return res
    work = scratch / case.variant.name
    shutil.copyfile(case.variant, work)
    output = scratch / f"result{case.ext}"
    stats = scratch / "stats.json"
    timing_log = scratch / "test-runs.log"
    mode = args.gitreduce_stats_mode
    use_stats = mode is not None
    if use_stats and not args.count_wrapper:
        test_cmd = f"{shlex.quote(str(case.test_sh))} {{}}"
    else:
        wrapper = scratch / "counting-test.sh"
        write_timing_wrapper(wrapper, timing_log, case.test_sh)
        test_cmd = f"{shlex.quote(str(wrapper))} {{}}"
    cmd = [*cmd0, work.name, "--test", test_cmd, "--jobs", str(args.jobs), "--output", output.name]
    if mode == "file":
        cmd += ["--json-stats", stats.name]
    elif mode == "stdout":
        cmd += ["--json"]
    log = args.out / "logs" / f"{safe(case.name)}-gitreduce.log"
    res.log_file = str(log)
    res.command = shlex.join(cmd)
    load0 = loadavg()
    stdout = scratch / "stdout.json" if mode == "stdout" else None
    # outside a repository verdicts go to the user's cache: a fresh one, or a rerun of a
    # case would replay the last run's verdicts instead of running its tests
    env = dict(os.environ, XDG_CACHE_HOME=str(scratch / "cache"))
    rc, wall, t0, t1, timed_out = run_group(
        cmd, scratch, log, args.timeout_per_case, stdout=stdout, env=env
    )
    res.exit_status, res.wall_seconds, res.timed_out = rc, round(wall, 2), timed_out
    res.extra.update(loadavg_before=load0, loadavg_after=loadavg())
    if stdout is not None and stdout.is_file():
        parsed = parse_json_output(stdout.read_text(errors="replace"))
        if parsed is not None:
            stats.write_text(json.dumps(parsed))
    if stats.is_file():
        try:
            data = json.loads(stats.read_text())
        except (OSError, ValueError) as exc:
            data = {}
            res.extra["stats_error"] = str(exc)
        res.extra["stats"] = data
        for key in ("tests_run", "cache_hits"):
            if isinstance(data.get(key), int):
                setattr(res, key, data[key])
        if isinstance(data.get("oracle_seconds"), int | float):
            res.oracle_seconds = round(float(data["oracle_seconds"]), 3)
        ov, tw = data.get("overhead_seconds"), data.get("wall_seconds")
        if isinstance(ov, int | float):
            res.overhead_seconds = round(float(ov), 3)
            base = tw if isinstance(tw, int | float) and tw > 0 else res.wall_seconds
            if base:
                res.overhead_percent = round(100.0 * float(ov) / float(base), 1)
            res.overhead_source = "stats"
        if isinstance(tw, int | float) and res.wall_seconds is not None:
            # process start-up, parsing, writing the result: outside the CLI's own clock
            res.extra["seconds_outside_stats_wall"] = round(res.wall_seconds - float(tw), 3)
    elif use_stats:
        res.extra["stats_error"] = f"no stats ({mode})"
    if timing_log.exists() or not (use_stats and not args.count_wrapper):
        _apply_wrapper_counts(res, timing_log, t0, t1, res.overhead_seconds is None)
    final = output if output.is_file() else work
    if not output.is_file():
        res.extra["note"] = "no --output file; measured the input file (maybe reduced in place)"
    _finish(res, case, final, args, args.out / "results" / f"{safe(case.name)}-gitreduce{case.ext}")
    if rc not in (0, None) and not res.error:
        res.error = f"git-reduce exited with {rc}"
    return res


def _interesting_script(case: Case, scratch: Path) -> Path:
    script = case.path / "interesting.sh"
    if script.is_file():
        return script
    adapter = scratch / "interesting-adapter.sh"
    write_interesting_adapter(adapter, case)
    return adapter


def _run_on_interesting(
    res: Result, case: Case, scratch: Path, args: argparse.Namespace, argv: list[str]
) -> Result:
    """Run ``argv + [<counting wrapper of interesting.sh>, variant.EXT]`` in ``scratch``.

    Shared by the C-Vise-style tools (they reduce the copy of the variant in place):
    the run is timed in its own process group, test runs and overhead are taken from
    the wrapper, and the final file is measured, checked and kept (``_finish``).
    """
    work = scratch / case.variant.name
    shutil.copyfile(case.variant, work)
    timing_log = scratch / "test-runs.log"
    wrapper = scratch / "counting-interesting.sh"
    write_timing_wrapper(wrapper, timing_log, _interesting_script(case, scratch))
    cmd = [*argv, str(wrapper), work.name]
    log = args.out / "logs" / f"{safe(case.name)}-{res.tool}.log"
    res.log_file, res.command = str(log), shlex.join(cmd)
    load0 = loadavg()
    rc, wall, t0, t1, timed_out = run_group(cmd, scratch, log, args.timeout_per_case)
    res.exit_status, res.wall_seconds, res.timed_out = rc, round(wall, 2), timed_out
    res.extra.update(loadavg_before=load0, loadavg_after=loadavg())
    _apply_wrapper_counts(res, timing_log, t0, t1, set_overhead=True)
    keep_as = args.out / "results" / f"{safe(case.name)}-{res.tool}{case.ext}"
    _finish(res, case, work, args, keep_as)
    if rc not in (0, None):
        res.error = f"{res.tool} exited with {rc}"
    return res


def run_cvise(case: Case, scratch: Path, args: argparse.Namespace) -> Result:
    res = Result(case=case.name, tool="cvise")
    if shutil.which("cvise") is None:
        res.error = "cvise not on PATH"
        return res
    argv = ["cvise", "--n", str(args.jobs), "--tidy", "--skip-key-off"]
    if case.ext not in C_LIKE:
        argv.append("--not-c")
    return _run_on_interesting(res, case, scratch, args, argv)


def cvise_from_baseline(case: Case, args: argparse.Namespace) -> Result | None:
    js = args.baseline_dir / f"cvise-{safe(case.name)}.json"
    if not js.is_file():
        return None
    data = json.loads(js.read_text())
    reduced = args.baseline_dir / data.get("reduced_file", f"cvise-{safe(case.name)}{case.ext}")
    res = Result(case=case.name, tool="cvise", source="baseline")
    res.initial_tokens = data.get("initial_tokens")
    res.final_tokens = data.get("final_tokens")
    res.wall_seconds = data.get("wall_seconds")
    res.tests_run = data.get("tests_run")
    res.timed_out = bool(data.get("timed_out"))
    res.exit_status = data.get("cvise_exit_status")
    res.command = data.get("command", "")
    res.result_file = str(reduced)
    res.extra = {
        k: data[k]
        for k in ("cvise_version", "date", "machine", "loadavg_before", "loadavg_after")
        if k in data
    }
    res.extra["baseline_json"] = str(js)
    # re-check the stored file now (tokens and test.sh), rather than trusting the JSON
    now_tokens = count_tokens(reduced, args.tokens_py)
    if now_tokens is not None and now_tokens != res.final_tokens:
        res.extra["stored_final_tokens"] = res.final_tokens
        res.final_tokens = now_tokens
    res.final_test_sh_exit = run_test(case, reduced)
    res.reproduces = res.final_test_sh_exit == 1
    if res.initial_tokens is None:
        res.initial_tokens = count_tokens(case.variant, args.tokens_py)
    return res


def load_note(before: list[float], after: list[float], jobs: int) -> str:
    """A one-line reading of the 1-minute load averages around a C-Vise run."""
    loads = [x[0] for x in (before, after) if x]
    if not loads:
        return "load average unavailable"
    lo, hi = min(loads), max(loads)
    if hi < 1:
        return "quiet machine (load average < 1 before and after)"
    span = f"load average {lo:.1f}-{hi:.1f}"
    if hi > jobs:
        return (
            f"{span} (> the {jobs} cvise jobs): other work shared the CPU; "
            "wall time may be inflated"
        )
    return f"{span} (<= the {jobs} cvise jobs): no sign of other work sharing the CPU"


def record_cvise_baseline(case: Case, res: Result, args: argparse.Namespace) -> Path | None:
    """Store a live C-Vise result as ``<baseline dir>/cvise-<case>.json`` + reduced file."""
    if res.tool != "cvise" or res.source != "run" or res.result_file is None:
        return None
    stem = f"cvise-{safe(case.name)}"
    args.baseline_dir.mkdir(parents=True, exist_ok=True)
    reduced = args.baseline_dir / f"{stem}{case.ext}"
    shutil.copyfile(res.result_file, reduced)
    timeout = args.timeout_per_case
    before = res.extra.get("loadavg_before", [])
    after = res.extra.get("loadavg_after", [])
    data = {
        "case": case.name,
        "tool": "cvise",
        "command": res.command,
        "cvise_exit_status": res.exit_status,
        "timed_out": res.timed_out,
        "timeout_seconds": int(timeout) if float(timeout).is_integer() else timeout,
        "initial_tokens": res.initial_tokens,
        "final_tokens": res.final_tokens,
        "wall_seconds": res.wall_seconds,
        "tests_run": res.tests_run,
        "final_test_sh_exit": res.final_test_sh_exit,
        "reproduces": res.reproduces,
        "loadavg_before": before,
        "loadavg_after": after,
        "cvise_version": tool_version(["cvise", "--version"]),
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": MACHINE_NOTE,
        "cpu_count": os.cpu_count(),
        "jobs": args.jobs,
        "reduced_file": reduced.name,
        "note": "run serially (one case at a time); other work (e.g. pytest runs) "
        "may have shared the CPU, see loadavg_before/after",
        "observed_concurrent_load": load_note(before, after, args.jobs),
    }
    js = args.baseline_dir / f"{stem}.json"
    js.write_text(json.dumps(data, indent=2) + "\n")
    res.extra["baseline_json"] = str(js)
    return js


def run_shrinkray(case: Case, scratch: Path, args: argparse.Namespace) -> Result:
    res = Result(case=case.name, tool="shrinkray")
    exe = shutil.which("shrinkray")
    if exe is None:
        res.error = "shrinkray not on PATH"
        return res
    argv = [
        exe,
        "--ui",
        "basic",
        "--parallelism",
        str(args.jobs),
        "--no-llm",
        "--no-history",
        "--input-type",
        "arg",
        "--formatter",
        "none",
    ]
    if args.shrinkray_no_restart:
        argv.append("--no-restart")
    return _run_on_interesting(res, case, scratch, args, argv)


def safe(name: str) -> str:
    return name.replace("/", "__")


# ---------------------------------------------------------------------------- report


def ratio(a: float | int | None, b: float | int | None) -> float | None:
    if a is None or b is None or b == 0:
        return None
    return a / b


def fmt(v: Any, digits: int = 1) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)


def compute_ratios(results: list[Result]) -> dict[str, dict[str, float | None]]:
    """Per case: gitreduce/cvise ratios of final tokens and wall seconds."""
    by: dict[tuple[str, str], Result] = {(r.case, r.tool): r for r in results}
    out: dict[str, dict[str, float | None]] = {}
    for case in dict.fromkeys(r.case for r in results):
        g, c = by.get((case, "gitreduce")), by.get((case, "cvise"))
        if g is None or c is None:
            continue
        usable = g.reproduces and c.reproduces
        out[case] = {
            "tokens": ratio(g.final_tokens, c.final_tokens) if usable else None,
            "wall": ratio(g.wall_seconds, c.wall_seconds) if usable else None,
        }
    return out


def summarize(ratios: dict[str, dict[str, float | None]]) -> dict[str, Any]:
    summary: dict[str, Any] = {}
    for key in ("tokens", "wall"):
        vals = [r[key] for r in ratios.values() if r[key] is not None]
        summary[f"median_{key}_ratio"] = statistics.median(vals) if vals else None
        summary[f"n_{key}_ratio"] = len(vals)
    return summary


def markdown(
    results: list[Result],
    ratios: dict[str, dict[str, float | None]],
    summary: dict[str, Any],
    meta: dict[str, Any],
) -> str:
    head = [
        "case",
        "tool",
        "initial tokens",
        "final tokens",
        "wall s",
        "tests run",
        "overhead %",
        "reproduces",
        "tokens gr/cv",
        "wall gr/cv",
    ]
    lines = [
        "# git-reduce benchmark results",
        "",
        f"{meta['date']} · {meta['machine']} · jobs={meta['jobs']} · "
        f"timeout/case={meta['timeout_per_case']} s",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "|".join(["---"] * 2 + ["---:"] * 6 + ["---:"] * 2) + "|",
    ]
    for r in results:
        wall = fmt(r.wall_seconds)
        if r.timed_out:
            wall += " (timeout)"
        if r.source == "baseline":
            wall += " (baseline)"
        rr = ratios.get(r.case, {}) if r.tool == "gitreduce" else {}
        tool = f"{r.tool} ({r.error})" if r.error else r.tool
        lines.append(
            "| "
            + " | ".join(
                [
                    r.case,
                    tool,
                    fmt(r.initial_tokens),
                    fmt(r.final_tokens),
                    wall,
                    fmt(r.tests_run),
                    fmt(r.overhead_percent) if r.tool == "gitreduce" else "",
                    fmt(r.reproduces),
                    fmt(rr.get("tokens"), 2) if rr else "",
                    fmt(rr.get("wall"), 2) if rr else "",
                ]
            )
            + " |"
        )
    lines += [
        "",
        "**Summary:** median gitreduce/cvise ratio: final tokens "
        f"{fmt(summary.get('median_tokens_ratio'), 2)} "
        f"(over {summary.get('n_tokens_ratio', 0)} cases), wall "
        f"{fmt(summary.get('median_wall_ratio'), 2)} "
        f"(over {summary.get('n_wall_ratio', 0)} cases). Ratios < 1 favour git-reduce; "
        "ratios are only computed when both final files reproduce.",
        "",
    ]
    notes = [f"- {n}" for n in meta.get("notes", [])]
    if notes:
        lines += ["Notes:", "", *notes, ""]
    return "\n".join(lines)


# ---------------------------------------------------------------------------- pairs
#
# ``--pairs``: git-reduce's pairwise mode (issue 4) on cases that hold ``seed.EXT``,
# ``variant.EXT`` and ``test.sh``, once per ``--algorithms`` entry (ppr, dd, dd-empty).

PAIR_ALGORITHMS = ("ppr", "dd", "dd-empty")
# the two DD baselines and the key suffix of PPR's ratios against each
DD_BASELINES = {"dd": "dd", "dd-empty": "dd_empty"}
# the acceptance targets of issue 4 (shown next to the medians)
PAIR_TARGETS: dict[str, Any] = {
    "diff_median_c_cpp_max": 10,
    "diff_rust_max": 4,
    "variant_vs_cvise_max": 1.1,
    "wall_vs_cvise_max": 1.0,
    "diff_ppr_vs_dd_max": 0.5,
    "size_dd_vs_ppr_min": 10.0,
}


@dataclass
class PairCase(Case):
    seed: Path


@dataclass
class PairResult:
    case: str
    algorithm: str
    language: str  # "c/c++", "rust", or the extension
    origin: str = "custom"  # "shared" (public bench), "fixtures" or "custom"
    # git-reduce's own report (--json): [before, after]
    seed_tokens: list[int | None] = field(default_factory=lambda: [None, None])
    variant_tokens: list[int | None] = field(default_factory=lambda: [None, None])
    diff_tokens: list[int | None] = field(default_factory=lambda: [None, None])
    # the runner's recount with tokens.py SEED VARIANT: [before, after]
    recount_seed_tokens: list[int | None] = field(default_factory=lambda: [None, None])
    recount_variant_tokens: list[int | None] = field(default_factory=lambda: [None, None])
    recount_diff_tokens: list[int | None] = field(default_factory=lambda: [None, None])
    count_mismatches: list[str] = field(default_factory=list)
    tests_run: int | None = None
    cache_hits: int | None = None
    wall_seconds: float | None = None  # measured by the runner (whole process)
    stats_wall_seconds: float | None = None  # git-reduce's own clock
    overhead_seconds: float | None = None
    overhead_percent: float | None = None  # overhead_seconds / stats_wall_seconds
    seed_test_sh_exit: int | None = None
    variant_test_sh_exit: int | None = None
    seed_good: bool = False
    variant_bad: bool = False
    checks_ok: bool = False
    interrupted: bool = False
    timed_out: bool = False
    timeout_seconds: float | None = None
    exit_status: int | None = None
    command: str = ""
    seed_result: str | None = None
    variant_result: str | None = None
    log_file: str | None = None
    loadavg_before: list[float] = field(default_factory=list)
    loadavg_after: list[float] = field(default_factory=list)
    loadavg_during: dict[str, Any] = field(default_factory=dict)  # LoadSampler.summary()
    error: str | None = None
    stats: dict[str, Any] = field(default_factory=dict)

    @property
    def size_after(self) -> int | None:
        """Program size of the result: reduced seed + reduced variant (tokens.py)."""
        s, v = self.recount_seed_tokens[1], self.recount_variant_tokens[1]
        return None if s is None or v is None else s + v


class LoadSampler:
    """Samples the 1-minute load average every ``every`` seconds while in a ``with``."""

    def __init__(self, every: float = 10.0) -> None:
        self.every = every
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self._stop.wait(self.every):
            now = loadavg()
            if now:
                self.samples.append(now[0])

    def __enter__(self) -> LoadSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def summary(self) -> dict[str, Any]:
        if not self.samples:
            return {}
        return {
            "every_seconds": self.every,
            "samples": len(self.samples),
            "min": min(self.samples),
            "median": round(statistics.median(self.samples), 2),
            "max": max(self.samples),
        }


def language_group(ext: str) -> str:
    if ext in C_LIKE:
        return "c/c++"
    if ext == ".rs":
        return "rust"
    return ext.lstrip(".") or "?"


def is_pair_dir(path: Path) -> bool:
    return (
        (path / "test.sh").is_file()
        and any(p.is_file() for p in path.glob("seed.*"))
        and any(p.is_file() for p in path.glob("variant.*"))
    )


def load_pair_case(path: Path, origin: str) -> PairCase:
    path = path.resolve()
    seeds = sorted(p for p in path.glob("seed.*") if p.is_file())
    variants = sorted(p for p in path.glob("variant.*") if p.is_file())
    if len(seeds) != 1 or len(variants) != 1:
        raise ValueError(
            f"expected one seed.* and one variant.* file, found {len(seeds)} and {len(variants)}"
        )
    if seeds[0].suffix != variants[0].suffix:
        raise ValueError(f"seed and variant extensions differ: {seeds[0].name}, {variants[0].name}")
    return PairCase(name=path.name, path=path, variant=variants[0], origin=origin, seed=seeds[0])


def discover_pair_cases(dirs: list[Path] | None) -> list[PairCase]:
    """Like ``discover_cases``, for folders holding seed.EXT, variant.EXT and test.sh."""
    return _discover(dirs, is_pair_dir, load_pair_case)


def count_pair(seed: Path, variant: Path, tokens_py: Path) -> tuple[int, int, int] | None:
    """(seed tokens, variant tokens, diff tokens) from ``tokens.py SEED VARIANT``."""
    if not (seed.is_file() and variant.is_file()):
        return None
    out = subprocess.run(
        [python_for_tokens(), str(tokens_py), str(seed), str(variant)],
        capture_output=True,
        text=True,
        check=False,
    )
    parts = out.stdout.split()
    if len(parts) != 3:
        return None
    try:
        s, v, d = (int(x) for x in parts)
    except ValueError:
        return None
    return s, v, d


def inside_git_work_tree(path: Path) -> bool:
    try:
        out = subprocess.run(
            ["git", "-C", str(path), "rev-parse", "--is-inside-work-tree"],
            capture_output=True,
            text=True,
            check=False,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0 and out.stdout.strip() == "true"


def _int_pair(value: Any) -> list[int | None]:
    if isinstance(value, list) and len(value) == 2 and all(isinstance(x, int) for x in value):
        return list(value)
    return [None, None]


def run_pair(case: PairCase, algorithm: str, scratch: Path, args: argparse.Namespace) -> PairResult:
    """``git-reduce --seed --variant --algorithm A`` on copies, then re-check the result."""
    res = PairResult(
        case=case.name, algorithm=algorithm, language=language_group(case.ext), origin=case.origin
    )
    if args.gitreduce_argv is None:
        res.error = "git-reduce not found (use --gitreduce-cmd)"
        return res
    work = scratch / "work"
    outdir = scratch / "out"
    cache = scratch / "xdg-cache"  # fresh verdict cache: nothing reused between runs
    for d in (work, outdir, cache):
        d.mkdir()
    if inside_git_work_tree(work):
        res.error = f"scratch dir {work} is inside a git work tree (set TMPDIR elsewhere)"
        return res
    seed = work / f"seed{case.ext}"
    variant = work / f"variant{case.ext}"
    shutil.copyfile(case.seed, seed)
    shutil.copyfile(case.variant, variant)
    test_cmd = f"{shlex.quote(str(case.test_sh))} {{}}"
    cmd = [
        *args.gitreduce_argv,
        "--seed",
        seed.name,
        "--variant",
        variant.name,
        "--test",
        test_cmd,
        "--jobs",
        str(args.jobs),
        "--algorithm",
        algorithm,
        "--output",
        str(outdir),
        "--json",
    ]
    env = dict(os.environ, XDG_CACHE_HOME=str(cache))
    timeout = args.dd_timeout if algorithm in DD_BASELINES else args.timeout_per_case
    res.timeout_seconds = timeout
    log = args.out / "logs" / f"{safe(case.name)}-pairs-{algorithm}.log"
    stdout = scratch / "stdout.json"
    res.log_file, res.command = str(log), shlex.join(cmd)
    res.loadavg_before = loadavg()
    with LoadSampler() as sampler:
        rc, wall, _, _, timed_out = run_group(cmd, work, log, timeout, stdout=stdout, env=env)
    res.loadavg_after = loadavg()
    res.loadavg_during = sampler.summary()
    res.exit_status, res.wall_seconds, res.timed_out = rc, round(wall, 2), timed_out
    data = parse_json_output(stdout.read_text(errors="replace")) if stdout.is_file() else None
    if data is None:
        res.error = f"no JSON summary on stdout (exit {rc}{', timed out' if timed_out else ''})"
        return res
    res.stats = {k: v for k, v in data.items() if k not in ("commits",)}
    res.seed_tokens = _int_pair(data.get("seed_tokens"))
    res.variant_tokens = _int_pair(data.get("variant_tokens"))
    res.diff_tokens = _int_pair(data.get("diff_tokens"))
    for key in ("tests_run", "cache_hits"):
        if isinstance(data.get(key), int):
            setattr(res, key, data[key])
    res.interrupted = bool(data.get("interrupted"))
    tw, ov = data.get("wall_seconds"), data.get("overhead_seconds")
    if isinstance(tw, int | float):
        res.stats_wall_seconds = round(float(tw), 3)
    if isinstance(ov, int | float):
        res.overhead_seconds = round(float(ov), 3)
        if isinstance(tw, int | float) and tw > 0:
            res.overhead_percent = round(100.0 * float(ov) / float(tw), 1)

    # the reduced pair: where git-reduce says it wrote it (relative to its cwd)
    outs: list[Path | None] = []
    for key in ("seed_output", "variant_output"):
        value = data.get(key)
        outs.append((work / value).resolve() if isinstance(value, str) and value else None)
    seed_out, variant_out = outs
    if (
        seed_out is None
        or variant_out is None
        or not seed_out.is_file()
        or not variant_out.is_file()
    ):
        res.error = "git-reduce reported no (existing) seed_output/variant_output"
        return res
    kept = args.out / "results"
    kept.mkdir(parents=True, exist_ok=True)
    keep_seed = kept / f"{safe(case.name)}-{algorithm}.seed{case.ext}"
    keep_variant = kept / f"{safe(case.name)}-{algorithm}.variant{case.ext}"
    shutil.copyfile(seed_out, keep_seed)
    shutil.copyfile(variant_out, keep_variant)
    res.seed_result, res.variant_result = str(keep_seed), str(keep_variant)

    # independent checks: test.sh on both results, tokens.py on the originals and results
    res.seed_test_sh_exit = run_test(case, keep_seed)
    res.variant_test_sh_exit = run_test(case, keep_variant)
    res.seed_good = res.seed_test_sh_exit == 0
    res.variant_bad = res.variant_test_sh_exit == 1
    before = count_pair(case.seed, case.variant, args.tokens_py)
    after = count_pair(keep_seed, keep_variant, args.tokens_py)
    for i, counted in ((0, before), (1, after)):
        if counted is None:
            res.count_mismatches.append(f"tokens.py failed on the {('inputs', 'results')[i]}")
            continue
        for name, value in zip(("seed", "variant", "diff"), counted, strict=True):
            getattr(res, f"recount_{name}_tokens")[i] = value
            reported = getattr(res, f"{name}_tokens")[i]
            if reported != value:
                when = ("before", "after")[i]
                res.count_mismatches.append(
                    f"{name} {when}: git-reduce {fmt(reported)} != tokens.py {value}"
                )
    res.checks_ok = res.seed_good and res.variant_bad and not res.count_mismatches
    if rc not in (0, None) and not res.error:
        res.error = f"git-reduce exited with {rc}" + (" (interrupted)" if res.interrupted else "")
    return res


def compute_pair_ratios(
    results: list[PairResult], cvise: dict[str, Result | None]
) -> dict[str, dict[str, float | None]]:
    """Per case, PPR's ratios (issue 4): vs C-Vise's single-program run and vs DD.

    Sizes are the runner's tokens.py counts; a ratio is only computed when the pairs
    involved passed their checks and the C-Vise result reproduces (the wall ratio also
    needs a PPR run that finished).
    """
    by = {(r.case, r.algorithm): r for r in results}
    out: dict[str, dict[str, float | None]] = {}
    for case in dict.fromkeys(r.case for r in results):
        p, c = by.get((case, "ppr")), cvise.get(case)
        if p is None:
            continue
        p_ok = p.checks_ok
        c_ok = c is not None and c.reproduces
        p_var, p_diff, p_size = p.recount_variant_tokens[1], p.recount_diff_tokens[1], p.size_after
        out[case] = {
            "variant_vs_cvise": ratio(p_var, c.final_tokens) if p_ok and c_ok and c else None,
            # a stopped run's wall is only a lower bound: no ratio
            "wall_vs_cvise": (
                ratio(p.wall_seconds, c.wall_seconds)
                if p_ok and c_ok and c and not (p.timed_out or p.interrupted)
                else None
            ),
        }
        for algorithm, key in DD_BASELINES.items():
            d = by.get((case, algorithm))
            both = p_ok and d is not None and d.checks_ok
            out[case][f"diff_ppr_vs_{key}"] = (
                ratio(p_diff, d.recount_diff_tokens[1]) if both and d else None
            )
            out[case][f"size_{key}_vs_ppr"] = ratio(d.size_after, p_size) if both and d else None
    return out


def _median(values: list[float | int | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return statistics.median(vals) if vals else None


def summarize_pairs(
    results: list[PairResult], ratios: dict[str, dict[str, float | None]]
) -> dict[str, Any]:
    """Medians per algorithm over results that passed their checks.

    Only the public cases (../shared/bench/cases) count when there are any: the
    fixtures are small known-answer pairs, reported but kept out of the medians.
    """
    public = [r for r in results if r.origin == "shared"]
    pool = public or results
    counted = list(dict.fromkeys(r.case for r in pool))
    summary: dict[str, Any] = {
        "targets": PAIR_TARGETS,
        "cases_counted": counted,
        "cases_not_counted": [
            c for c in dict.fromkeys(r.case for r in results) if c not in counted
        ],
    }
    for alg in dict.fromkeys(r.algorithm for r in pool):
        ok = [r for r in pool if r.algorithm == alg and r.checks_ok]
        c_cpp = [r.recount_diff_tokens[1] for r in ok if r.language == "c/c++"]
        rust = [r.recount_diff_tokens[1] for r in ok if r.language == "rust"]
        summary[alg] = {
            "median_diff_c_cpp": _median(c_cpp),
            "n_c_cpp": len(c_cpp),
            "diff_rust": _median(rust),  # the Rust case's diff (median if several)
            "n_rust": len(rust),
            "median_variant_tokens": _median([r.recount_variant_tokens[1] for r in ok]),
            "median_wall_seconds": _median([r.wall_seconds for r in ok]),
            "not_verified": [r.case for r in pool if r.algorithm == alg and not r.checks_ok],
            "timed_out": [r.case for r in pool if r.algorithm == alg and r.timed_out],
        }
    ratio_keys = ["variant_vs_cvise", "wall_vs_cvise"]
    for key in DD_BASELINES.values():
        ratio_keys += [f"diff_ppr_vs_{key}", f"size_{key}_vs_ppr"]
    for key in ratio_keys:
        vals = [r[key] for c, r in ratios.items() if c in counted and r[key] is not None]
        summary[f"median_{key}"] = statistics.median(vals) if vals else None
        summary[f"n_{key}"] = len(vals)
    return summary


def _arrow(pair: list[int | None]) -> str:
    return f"{fmt(pair[0])} → {fmt(pair[1])}"


def _checks_cell(r: PairResult) -> str:
    if r.error and r.seed_result is None:
        return f"error: {r.error}"
    problems: list[str] = []
    if not r.seed_good:
        problems.append(f"seed test.sh → {fmt(r.seed_test_sh_exit)} (want 0)")
    if not r.variant_bad:
        problems.append(f"variant test.sh → {fmt(r.variant_test_sh_exit)} (want 1)")
    problems += r.count_mismatches
    return "; ".join(problems) if problems else "ok"


def _load_cell(r: PairResult) -> str:
    b = r.loadavg_before[0] if r.loadavg_before else None
    a = r.loadavg_after[0] if r.loadavg_after else None
    cell = f"{fmt(b, 2)} / {fmt(a, 2)}"
    during = r.loadavg_during
    if during.get("max") is not None:
        cell += f" (median {fmt(during.get('median'), 1)}, max {fmt(during['max'], 1)})"
    return cell


def pair_markdown(
    results: list[PairResult],
    ratios: dict[str, dict[str, float | None]],
    summary: dict[str, Any],
    cvise: dict[str, Result | None],
    meta: dict[str, Any],
) -> str:
    head = [
        "case",
        "algorithm",
        "seed tokens",
        "variant tokens",
        "diff tokens",
        "tests",
        "wall s",
        "overhead %",
        "checks",
        "variant / C-Vise",
        "wall / C-Vise",
        "diff PPR/DD",
        "size DD/PPR",
        "diff PPR/DD-empty",
        "size DD-empty/PPR",
        "load 1m before / after (during)",
    ]
    lines = [
        "# git-reduce pairwise benchmark (seed + variant)",
        "",
        f"{meta['date']} · {meta['machine']} · jobs={meta['jobs']} · "
        f"timeout/case={fmt(meta['timeout_per_case'], 0)} s (dd: "
        f"{fmt(meta['dd_timeout'], 0)} s) · git-reduce {meta.get('gitreduce_version', '?')}",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "|".join(["---"] * 2 + ["---:"] * 6 + ["---"] + ["---:"] * 7) + "|",
    ]
    for r in results:
        wall = fmt(r.wall_seconds)
        if r.timed_out:
            wall += " (timed out)"
        elif r.interrupted:
            wall += " (interrupted)"
        rr = ratios.get(r.case, {}) if r.algorithm == "ppr" else {}
        lines.append(
            "| "
            + " | ".join(
                [
                    r.case,
                    r.algorithm,
                    _arrow(r.seed_tokens),
                    _arrow(r.variant_tokens),
                    _arrow(r.diff_tokens),
                    fmt(r.tests_run),
                    wall,
                    fmt(r.overhead_percent),
                    _checks_cell(r),
                    fmt(rr.get("variant_vs_cvise"), 2) if rr else "",
                    fmt(rr.get("wall_vs_cvise"), 2) if rr else "",
                    fmt(rr.get("diff_ppr_vs_dd"), 2) if rr else "",
                    fmt(rr.get("size_dd_vs_ppr"), 1) if rr else "",
                    fmt(rr.get("diff_ppr_vs_dd_empty"), 2) if rr else "",
                    fmt(rr.get("size_dd_empty_vs_ppr"), 1) if rr else "",
                    _load_cell(r),
                ]
            )
            + " |"
        )
    lines += ["", "C-Vise single-program reference (same variant):", ""]
    lines += [
        "| case | C-Vise final tokens | C-Vise wall s | source | reproduces |",
        "|---|---:|---:|---|---:|",
    ]
    for case, c in cvise.items():
        if c is None:
            lines.append(f"| {case} | - | - | no baseline | - |")
        else:
            src = "baseline" if c.source == "baseline" else "live run"
            lines.append(
                f"| {case} | {fmt(c.final_tokens)} | {fmt(c.wall_seconds)} | {src} | "
                f"{fmt(c.reproduces)} |"
            )
    t = PAIR_TARGETS
    parts = []
    for alg in (a for a in PAIR_ALGORITHMS if a in summary):
        s = summary[alg]
        parts.append(
            f"{alg.upper()}: median diff over C/C++ cases {fmt(s['median_diff_c_cpp'])} "
            f"(n={s['n_c_cpp']}), Rust diff {fmt(s['diff_rust'])}"
        )
    ratio_part = (
        f"PPR medians: variant / C-Vise {fmt(summary.get('median_variant_vs_cvise'), 2)} "
        f"(target ≤ {t['variant_vs_cvise_max']}), wall / C-Vise "
        f"{fmt(summary.get('median_wall_vs_cvise'), 2)} (≤ {t['wall_vs_cvise_max']}), "
        f"diff PPR/DD {fmt(summary.get('median_diff_ppr_vs_dd'), 2)} "
        f"(≤ {t['diff_ppr_vs_dd_max']}), size DD/PPR "
        f"{fmt(summary.get('median_size_dd_vs_ppr'), 1)} (≥ {t['size_dd_vs_ppr_min']}); "
        f"against DD-empty (the paper's baseline): diff PPR/DD-empty "
        f"{fmt(summary.get('median_diff_ppr_vs_dd_empty'), 2)}, size DD-empty/PPR "
        f"{fmt(summary.get('median_size_dd_empty_vs_ppr'), 1)}."
    )
    scope = f"over {', '.join(summary.get('cases_counted', [])) or 'no cases'}"
    if summary.get("cases_not_counted"):
        scope += f"; not counted: {', '.join(summary['cases_not_counted'])}"
    lines += [
        "",
        f"**Summary** ({scope}): "
        + "; ".join(parts)
        + f" (targets: ≤ {t['diff_median_c_cpp_max']} C/C++, ≤ {t['diff_rust_max']} Rust). "
        + ratio_part,
        "",
    ]
    notes = [f"- {n}" for n in meta.get("notes", [])]
    if notes:
        lines += ["Notes:", "", *notes, ""]
    return "\n".join(lines)


def gitreduce_version(argv: list[str]) -> str:
    """``git-reduce --version``, else the commit of this checkout (+ dirty marker)."""
    try:
        out = subprocess.run(
            [*argv, "--version"], capture_output=True, text=True, check=False, timeout=60
        )
        if out.returncode == 0 and out.stdout.strip():
            return out.stdout.strip().splitlines()[0]
    except (OSError, subprocess.TimeoutExpired):
        pass
    try:
        sha = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(REPO), "status", "--porcelain", "--", "gitreduce"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
    except OSError:
        return "unknown"
    if not sha:
        return "unknown"
    return f"{REPO.name}@{sha}" + (" + uncommitted changes in gitreduce/" if dirty else "")


def pair_notes() -> list[str]:
    """The standing notes of pairs.md (per-case notes are appended after them)."""
    return [
        "Tokens: git-reduce's own report (--json), before → after; checks re-count the "
        "inputs and results with tokens.py SEED VARIANT and flag any difference.",
        "checks: ok = test.sh on the reduced seed exits 0, on the reduced variant exits 1, "
        "and tokens.py's seed/variant/diff counts equal git-reduce's.",
        "Each run: copies seed.EXT/variant.EXT in a fresh scratch dir outside any git "
        "repository, XDG_CACHE_HOME a fresh empty dir (no verdicts reused between runs).",
        "wall s: the runner's clock around the whole git-reduce process; overhead %: "
        "git-reduce's overhead_seconds / its own wall_seconds.",
        "Ratios (PPR rows, tokens.py counts, only when the pairs pass their checks): "
        "variant / C-Vise = reduced variant / C-Vise's final tokens on the same variant; "
        "wall / C-Vise = PPR wall / C-Vise wall; diff PPR/DD = PPR diff / DD diff; "
        "size DD/PPR = (DD seed + variant) / (PPR seed + variant).",
        "Medians count only the public cases (when any ran) and only results that pass "
        "their checks; a timed-out run counts with the best pair it had when stopped "
        "(git-reduce writes it on SIGTERM).",
        "load 1m: 1-minute load average before / after the run and, in brackets, its "
        "median and max over samples taken during the run (2 cores; a value above the "
        "jobs count means other work shared the CPU).",
    ]


def write_pair_report(
    args: argparse.Namespace,
    results: list[PairResult],
    cvise: dict[str, Result | None],
    meta: dict[str, Any],
) -> None:
    ratios = compute_pair_ratios(results, cvise)
    summary = summarize_pairs(results, ratios)
    md = pair_markdown(results, ratios, summary, cvise, meta)
    payload = {
        "meta": meta,
        "results": [asdict(r) | {"size_after": r.size_after} for r in results],
        "cvise": {k: (asdict(v) if v is not None else None) for k, v in cvise.items()},
        "ratios": ratios,
        "summary": summary,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "pairs.json").write_text(json.dumps(payload, indent=2) + "\n")
    (args.out / "pairs.md").write_text(md)
    print(md)


def _from_dict(cls: type, data: dict[str, Any]) -> Any:
    names = {f.name for f in fields(cls)}
    return cls(**{k: v for k, v in data.items() if k in names})


def rerender_pairs(args: argparse.Namespace) -> int:
    """``--pairs-report FILE``: rewrite pairs.md/pairs.json from an earlier pairs.json."""
    src = args.pairs_report.resolve()
    payload = json.loads(src.read_text())
    meta = payload["meta"]
    origins = {c["name"]: c.get("origin", "custom") for c in meta.get("cases", [])}
    results: list[PairResult] = []
    for data in payload["results"]:
        res = _from_dict(PairResult, data)
        if "origin" not in data:
            res.origin = origins.get(res.case, "custom")
        results.append(res)
    cvise = {k: (_from_dict(Result, v) if v else None) for k, v in payload["cvise"].items()}
    old_notes = meta.get("notes", [])
    case_notes = [n for n in old_notes if any(n.startswith((f"{c}:", f"{c} ")) for c in origins)]
    now = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    extra_notes = [str(n) for n in meta.get("extra_notes", [])]  # added by hand, kept
    meta["notes"] = [
        *pair_notes(),
        *case_notes,
        *(n for n in extra_notes if n not in case_notes),
        f"Rendered {now} by run.py --pairs-report from the run's pairs.json (nothing re-run).",
    ]
    meta["rendered"] = now
    version = str(meta.get("gitreduce_version", ""))
    if (not version or version.startswith("error")) and meta.get("gitreduce_cmd"):
        # older runs asked ``git-reduce --version``, which the CLI lacks
        meta["gitreduce_version"] = gitreduce_version(meta["gitreduce_cmd"]) + " (when rendered)"
    write_pair_report(args, results, cvise, meta)
    return 0


def main_pairs(args: argparse.Namespace) -> int:
    if args.pairs_report is not None:
        return rerender_pairs(args)
    cases = discover_pair_cases(args.cases)
    if not cases:
        print("no pair cases (seed.EXT + variant.EXT + test.sh) found", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    args.gitreduce_argv = resolve_gitreduce(args.gitreduce_cmd)
    if args.gitreduce_argv is None:
        print("git-reduce not found (see --gitreduce-cmd)", file=sys.stderr)
        return 2
    notes = pair_notes()
    cases = usable_cases(cases, notes)
    meta: dict[str, Any] = {
        "mode": "pairs",
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": MACHINE_NOTE,
        "cpu_count": os.cpu_count(),
        "jobs": args.jobs,
        "timeout_per_case": args.timeout_per_case,
        "dd_timeout": args.dd_timeout,
        "algorithms": args.algorithm_list,
        "baseline_dir": str(args.baseline_dir),
        "gitreduce_cmd": args.gitreduce_argv,
        "gitreduce_version": gitreduce_version(args.gitreduce_argv),
        "cases": [
            {"name": c.name, "path": str(c.path), "origin": c.origin, "language": c.ext}
            for c in cases
        ],
        "loadavg_start": loadavg(),
        "notes": notes,
    }
    cvise: dict[str, Result | None] = {}
    for case in cases:
        cvise[case.name] = cvise_from_baseline(case, args)
        if cvise[case.name] is None:
            notes.append(f"{case.name}: no C-Vise baseline in {args.baseline_dir}: no ratios.")
    results: list[PairResult] = []
    for case in cases:
        for alg in args.algorithm_list:
            stamp = f"{dt.datetime.now():%H:%M:%S}"
            print(
                f"[{stamp}] {case.name}: {alg} (load {loadavg()}) ...", file=sys.stderr, flush=True
            )
            with tempfile.TemporaryDirectory(prefix=f"pairs-{safe(case.name)}-{alg}-") as tmp:
                res = run_pair(case, alg, Path(tmp), args)
            print(
                f"    -> seed {_arrow(res.seed_tokens)}, variant {_arrow(res.variant_tokens)}, "
                f"diff {_arrow(res.diff_tokens)}, {fmt(res.wall_seconds)} s"
                + (" (timed out)" if res.timed_out else "")
                + f", {fmt(res.tests_run)} tests, checks: {_checks_cell(res)}"
                + (f", error: {res.error}" if res.error else ""),
                file=sys.stderr,
                flush=True,
            )
            if res.timed_out:
                notes.append(
                    f"{case.name}: {alg} hit the {fmt(res.timeout_seconds, 0)} s limit; "
                    "reported is the best pair when it was stopped."
                )
            results.append(res)
    meta["loadavg_end"] = loadavg()
    write_pair_report(args, results, cvise, meta)
    return 0


# ---------------------------------------------------------------------------- main


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description="Benchmark git-reduce against C-Vise / shrinkray on reduction cases."
    )
    ap.add_argument(
        "--cases",
        nargs="+",
        type=Path,
        metavar="DIR",
        help="case dirs, or dirs of case dirs (default: ../shared/bench/cases and fixtures/)",
    )
    ap.add_argument(
        "--tools",
        default=",".join(ALL_TOOLS),
        help="comma-separated subset of gitreduce,cvise,shrinkray",
    )
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument(
        "--timeout-per-case",
        type=float,
        default=2400.0,
        metavar="S",
        help="wall-clock limit per case and tool, seconds (default 2400)",
    )
    ap.add_argument("--out", type=Path, default=HERE / "out")
    ap.add_argument(
        "--use-baselines",
        action="store_true",
        help="for cvise, read cvise-<case>.json from the baseline dir instead of "
        "running it (runs it when no baseline exists)",
    )
    ap.add_argument(
        "--record-baselines",
        action="store_true",
        help="after each live cvise run, write cvise-<case>.json and the reduced file "
        "into the baseline dir (with --use-baselines: only for cases that had none)",
    )
    ap.add_argument(
        "--baseline-dir",
        type=Path,
        default=BASELINE_DIR,
        metavar="DIR",
        help="where C-Vise baselines are read and recorded (default: benchmarks/baselines)",
    )
    ap.add_argument(
        "--gitreduce-cmd",
        default=None,
        help=f"git-reduce executable/command (default: git-reduce on PATH, else {VENV_GITREDUCE})",
    )
    ap.add_argument(
        "--count-wrapper",
        action="store_true",
        help="always wrap test.sh for git-reduce to count runs/overhead "
        "independently (default: only when --json-stats is unsupported)",
    )
    ap.add_argument(
        "--shrinkray-no-restart", action="store_true", help="pass --no-restart to shrinkray"
    )
    ap.add_argument("--tokens-py", type=Path, default=DEFAULT_TOKENS_PY)
    ap.add_argument(
        "--pairs",
        action="store_true",
        help="pairwise mode: run git-reduce --seed/--variant on cases with seed.EXT, "
        "variant.EXT and test.sh; writes pairs.md / pairs.json (--tools is ignored)",
    )
    ap.add_argument(
        "--algorithms",
        default=",".join(PAIR_ALGORITHMS),
        help="with --pairs: comma-separated subset of ppr,dd,dd-empty (default all three)",
    )
    ap.add_argument(
        "--dd-timeout",
        type=float,
        default=None,
        metavar="S",
        help="with --pairs: wall-clock limit of a dd run, seconds (default: --timeout-per-case)",
    )
    ap.add_argument(
        "--pairs-report",
        type=Path,
        default=None,
        metavar="PAIRS_JSON",
        help="with --pairs: only re-render pairs.md / pairs.json into --out from an "
        "earlier run's pairs.json (runs nothing)",
    )
    args = ap.parse_args(argv)
    algorithms = [a.strip() for a in args.algorithms.split(",") if a.strip()]
    bad_alg = [a for a in algorithms if a not in PAIR_ALGORITHMS]
    if bad_alg:
        ap.error(f"unknown algorithm(s): {', '.join(bad_alg)}")
    if not algorithms:
        ap.error("--algorithms is empty")
    args.algorithm_list = algorithms
    if args.dd_timeout is None:
        args.dd_timeout = args.timeout_per_case
    if args.pairs_report is not None and not args.pairs:
        ap.error("--pairs-report needs --pairs")
    if args.pairs and args.record_baselines:
        ap.error("--record-baselines does not apply to --pairs")
    tools = [t.strip() for t in args.tools.split(",") if t.strip()]
    bad = [t for t in tools if t not in ALL_TOOLS]
    if bad:
        ap.error(f"unknown tool(s): {', '.join(bad)}")
    if args.record_baselines and "cvise" not in tools:
        ap.error("--record-baselines needs cvise in --tools")
    args.tool_list = tools
    args.out = args.out.resolve()
    args.baseline_dir = args.baseline_dir.resolve()
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.pairs:
        return main_pairs(args)
    cases = discover_cases(args.cases)
    if not cases:
        print("no cases found", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    notes: list[str] = [
        "Sizes: tokens.py (tree-sitter leaves, comments excluded).",
        "Cases and tools run strictly one at a time; the machine is shared, so wall times "
        "are noisy (load averages are in results.json).",
        "git-reduce runs with a fresh, empty XDG_CACHE_HOME: no verdict of an earlier run "
        "is reused.",
    ]
    args.gitreduce_argv = None
    args.gitreduce_stats_mode = None
    if "gitreduce" in args.tool_list:
        args.gitreduce_argv = resolve_gitreduce(args.gitreduce_cmd)
        if args.gitreduce_argv:
            args.gitreduce_stats_mode = gitreduce_stats_mode(args.gitreduce_argv)
            if args.gitreduce_stats_mode == "stdout":
                notes.append(
                    "git-reduce has no --json-stats: its stats are read from --json on stdout."
                )
            elif args.gitreduce_stats_mode is None:
                notes.append(
                    "git-reduce reports no JSON stats: tests counted and overhead "
                    "measured by a wrapper around test.sh."
                )
        else:
            notes.append("git-reduce not found (see --gitreduce-cmd): skipped.")
    if "shrinkray" in args.tool_list and shutil.which("shrinkray") is None:
        notes.append("shrinkray not on PATH: skipped.")
    cases = usable_cases(cases, notes)
    meta: dict[str, Any] = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": MACHINE_NOTE,
        "cpu_count": os.cpu_count(),
        "jobs": args.jobs,
        "timeout_per_case": args.timeout_per_case,
        "tools": args.tool_list,
        "use_baselines": args.use_baselines,
        "record_baselines": args.record_baselines,
        "baseline_dir": str(args.baseline_dir),
        "gitreduce_cmd": args.gitreduce_argv,
        "gitreduce_stats_mode": args.gitreduce_stats_mode,
        "versions": {},
        "cases": [{"name": c.name, "path": str(c.path), "origin": c.origin} for c in cases],
        "notes": notes,
    }
    if "cvise" in args.tool_list and shutil.which("cvise"):
        meta["versions"]["cvise"] = tool_version(["cvise", "--version"])
    if args.gitreduce_argv:
        meta["versions"]["gitreduce"] = tool_version([*args.gitreduce_argv, "--version"])

    runners = {"gitreduce": run_gitreduce, "cvise": run_cvise, "shrinkray": run_shrinkray}
    results: list[Result] = []
    for case in cases:
        for tool in args.tool_list:
            if tool == "shrinkray" and shutil.which("shrinkray") is None:
                continue
            if tool == "gitreduce" and args.gitreduce_argv is None:
                continue
            stamp = f"{dt.datetime.now():%H:%M:%S}"
            res: Result | None = None
            if tool == "cvise" and args.use_baselines:
                res = cvise_from_baseline(case, args)
                if res is None:
                    print(
                        f"[{stamp}] {case.name}: no cvise baseline, running cvise",
                        file=sys.stderr,
                        flush=True,
                    )
            if res is None:
                print(f"[{stamp}] {case.name}: {tool} ...", file=sys.stderr, flush=True)
                with tempfile.TemporaryDirectory(prefix=f"bench-{safe(case.name)}-{tool}-") as tmp:
                    res = runners[tool](case, Path(tmp), args)
                if tool == "cvise" and args.record_baselines:
                    js = record_cvise_baseline(case, res, args)
                    if js is not None:
                        print(f"    recorded baseline {js}", file=sys.stderr, flush=True)
            print(
                f"    -> tokens {fmt(res.initial_tokens)} -> {fmt(res.final_tokens)}, "
                f"{fmt(res.wall_seconds)} s, {fmt(res.tests_run)} tests, "
                f"reproduces {fmt(res.reproduces)}"
                + (f", error: {res.error}" if res.error else ""),
                file=sys.stderr,
                flush=True,
            )
            results.append(res)

    ratios = compute_ratios(results)
    summary = summarize(ratios)
    md = markdown(results, ratios, summary, meta)
    payload = {
        "meta": meta,
        "results": [asdict(r) for r in results],
        "ratios": ratios,
        "summary": summary,
    }
    (args.out / "results.json").write_text(json.dumps(payload, indent=2) + "\n")
    (args.out / "results.md").write_text(md)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
