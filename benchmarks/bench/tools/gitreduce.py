"""git-reduce, the tool under test: finding it, its stats, and one run on a case.

Job: the adapter of git-reduce for the single-program runner (its stats come
from its own JSON report, or from a counting wrapper when it has none), and
what pairwise mode also needs: the git-reduce command and its version.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

from bench.cases import Case, safe
from bench.measure import (
    loadavg,
    parse_json_output,
    run_group,
    tool_version,
    write_timing_wrapper,
)
from bench.paths import REPO, VENV_GITREDUCE
from bench.results import Result
from bench.tools.base import Tool, apply_wrapper_counts, finish


def resolve_gitreduce(cmd: str | None) -> list[str] | None:
    if cmd:
        return shlex.split(cmd)
    found = shutil.which("git-reduce")
    if found:
        return [found]
    if VENV_GITREDUCE.exists():
        return [str(VENV_GITREDUCE)]
    return None


def tool_environment(cache: Path | None = None) -> dict[str, str]:
    """The environment git-reduce runs in: a fresh verdict cache (`XDG_CACHE_HOME`), and
    Python's bytecode cache allowed, as it is wherever the package is installed.

    `pip install` compiles a wheel's modules, and Python caches an editable
    checkout's on first use, unless PYTHONDONTWRITEBYTECODE says not to (as on
    some CI machines, this one among them): then every run would compile the
    whole package again, 0.17 s here, a cost no installed copy pays. The first
    call (`--help`, `--version`, before any case) writes the cache.
    """
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if cache is not None:
        env["XDG_CACHE_HOME"] = str(cache)
    return env


def _ask(argv: list[str], option: str) -> subprocess.CompletedProcess[str]:
    """What git-reduce prints for one option (`--help`, `--version`), run as the cases are."""
    return subprocess.run(
        [*argv, option],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
        env=tool_environment(),
    )


def gitreduce_stats_mode(cmd: list[str]) -> str | None:
    """How git-reduce reports its stats: "file" (--json-stats FILE), "stdout" (--json), None."""
    try:
        out = _ask(cmd, "--help")
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = out.stdout + out.stderr
    if "--json-stats" in text:
        return "file"
    if re.search(r"--json(?![-\w])", text):
        return "stdout"
    return None


def gitreduce_version(argv: list[str]) -> str:
    """``git-reduce --version``, else the commit of this checkout (+ dirty marker)."""
    try:
        out = _ask(argv, "--version")
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


def prepare(args: argparse.Namespace, notes: list[str]) -> None:
    """Find git-reduce and how it reports its stats; note what is missing."""
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
    env = tool_environment(scratch / "cache")
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
        apply_wrapper_counts(res, timing_log, t0, t1, res.overhead_seconds is None)
    final = output if output.is_file() else work
    if not output.is_file():
        res.extra["note"] = "no --output file; measured the input file (maybe reduced in place)"
    finish(res, case, final, args, args.out / "results" / f"{safe(case.name)}-gitreduce{case.ext}")
    if rc not in (0, None) and not res.error:
        res.error = f"git-reduce exited with {rc}"
    return res


TOOL = Tool(
    run=run_gitreduce,
    prepare=prepare,
    available=lambda args: args.gitreduce_argv is not None,
    version=lambda args: (
        tool_version([*args.gitreduce_argv, "--version"]) if args.gitreduce_argv else None
    ),
)
