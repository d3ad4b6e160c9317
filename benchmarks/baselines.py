#!/usr/bin/env python3
"""Record C-Vise baselines for benchmark cases (serially, one case at a time).

usage: python benchmarks/baselines.py [CASE_DIR ...] [--timeout S] [--jobs N]

For each case: copy variant.EXT into a fresh scratch dir, run
``cvise --n N --tidy --skip-key-off [--not-c] <wrapper> variant.EXT`` there
(the wrapper appends one line to a counter file, then execs the case's
interesting.sh), and store the figures in ``benchmarks/baselines/cvise-<case>.json``
and the reduced file in ``benchmarks/baselines/cvise-<case>.EXT``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DEFAULT_CASES_ROOT = (REPO / ".." / "shared" / "bench" / "cases").resolve()
TOKENS_PY = (REPO / ".." / "shared" / "bench" / "tools" / "tokens.py").resolve()
PYTHON = "/work/venv/bin/python" if Path("/work/venv/bin/python").exists() else sys.executable
BASELINE_DIR = HERE / "baselines"
LOG_DIR = HERE / "out" / "logs"
C_LIKE = {".c", ".h", ".i", ".cc", ".cpp", ".cxx", ".hpp", ".C"}
MACHINE_NOTE = "2 cores, shared machine"


def find_variant(case: Path) -> Path:
    variants = sorted(p for p in case.glob("variant.*") if p.is_file())
    if len(variants) != 1:
        raise SystemExit(f"{case}: expected exactly one variant.* file, found {variants}")
    return variants[0]


def count_tokens(path: Path) -> int:
    out = subprocess.run(
        [PYTHON, str(TOKENS_PY), str(path)], capture_output=True, text=True, check=True
    )
    return int(out.stdout.strip())


def run_test(case: Path, path: Path, timeout: float = 120) -> int:
    """Exit status of the case's test.sh on ``path`` (git-bisect-run convention)."""
    try:
        return subprocess.run(
            [str(case / "test.sh"), str(path)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=timeout,
            check=False,
        ).returncode
    except subprocess.TimeoutExpired:
        return 124


def write_counting_wrapper(path: Path, counter: Path, target: Path) -> None:
    """A script that appends one line to ``counter`` then execs ``target``."""
    path.write_text(f"#!/bin/bash\necho x >> '{counter}'\nexec '{target}' \"$@\"\n")
    path.chmod(0o755)


def count_lines(path: Path) -> int:
    if not path.exists():
        return 0
    with path.open("rb") as fh:
        return sum(1 for _ in fh)


def cvise_version() -> str:
    try:
        out = subprocess.run(["cvise", "--version"], capture_output=True, text=True, check=False)
        return out.stdout.strip() or out.stderr.strip()
    except OSError:
        return "unavailable"


def loadavg() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def run_group(
    cmd: list[str], cwd: Path, log: Path, timeout: float | None
) -> tuple[int | None, float, bool]:
    """Run ``cmd`` in its own process group; return (rc, wall seconds, timed_out)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as fh:
        t0 = time.monotonic()
        proc = subprocess.Popen(
            cmd, cwd=cwd, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            rc: int | None = proc.wait(timeout=timeout)
            timed_out = False
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
    return rc, wall, timed_out


def run_cvise(
    case: Path, scratch: Path, jobs: int, timeout: float | None, log: Path
) -> dict[str, Any]:
    """Reduce the case's variant with C-Vise in ``scratch``; return the measured figures."""
    variant = find_variant(case)
    work = scratch / variant.name
    shutil.copyfile(variant, work)
    counter = scratch / "test-runs.count"
    wrapper = scratch / "counting-interesting.sh"
    write_counting_wrapper(wrapper, counter, (case / "interesting.sh").resolve())
    cmd = ["cvise", "--n", str(jobs), "--tidy", "--skip-key-off"]
    if variant.suffix not in C_LIKE:
        cmd.append("--not-c")
    cmd += [str(wrapper), variant.name]
    load_before = loadavg()
    rc, wall, timed_out = run_group(cmd, scratch, log, timeout)
    test_rc = run_test(case, work)
    return {
        "case": case.name,
        "tool": "cvise",
        "command": " ".join(cmd),
        "cvise_exit_status": rc,
        "timed_out": timed_out,
        "timeout_seconds": timeout,
        "initial_tokens": count_tokens(variant),
        "final_tokens": count_tokens(work),
        "wall_seconds": round(wall, 2),
        "tests_run": count_lines(counter),
        "final_test_sh_exit": test_rc,
        "reproduces": test_rc == 1,
        "loadavg_before": load_before,
        "loadavg_after": loadavg(),
        "result_path": str(work),
    }


def record_baseline(case: Path, jobs: int, timeout: float) -> dict[str, Any]:
    variant = find_variant(case)
    BASELINE_DIR.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f"cvise-{case.name}-") as tmp:
        res = run_cvise(case, Path(tmp), jobs, timeout, LOG_DIR / f"cvise-{case.name}.log")
        reduced = BASELINE_DIR / f"cvise-{case.name}{variant.suffix}"
        shutil.copyfile(res.pop("result_path"), reduced)
    res.update(
        {
            "cvise_version": cvise_version(),
            "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "machine": MACHINE_NOTE,
            "cpu_count": os.cpu_count(),
            "jobs": jobs,
            "reduced_file": reduced.name,
            "note": "run serially (one case at a time); other work (e.g. pytest runs) "
            "may have shared the CPU, see loadavg_before/after",
        }
    )
    out = BASELINE_DIR / f"cvise-{case.name}.json"
    out.write_text(json.dumps(res, indent=2) + "\n")
    return res


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("cases", nargs="*", type=Path, help="case dirs (default: all public cases)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=40 * 60, help="per case, seconds")
    args = ap.parse_args(argv)
    cases = args.cases or sorted(p for p in DEFAULT_CASES_ROOT.iterdir() if p.is_dir())
    for case in cases:
        case = case.resolve()
        print(f"[{dt.datetime.now():%H:%M:%S}] cvise on {case.name} ...", flush=True)
        res = record_baseline(case, args.jobs, args.timeout)
        print(json.dumps(res, indent=2), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
