"""C-Vise, the reference reducer: live runs, and the stored baselines of its runs.

Job: the adapter of C-Vise (run on the case's interestingness script, ``--not-c``
for anything but C and C++), reading a stored baseline instead of running it
(``--use-baselines``, re-checked on the stored file), and recording a live run
as the baseline (``--record-baselines``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
from pathlib import Path

from bench.cases import C_LIKE, Case, run_test, safe
from bench.measure import MACHINE_NOTE, count_tokens, tool_version
from bench.results import Result
from bench.tools.base import Tool, run_on_interesting


def run_cvise(case: Case, scratch: Path, args: argparse.Namespace) -> Result:
    res = Result(case=case.name, tool="cvise")
    if shutil.which("cvise") is None:
        res.error = "cvise not on PATH"
        return res
    argv = ["cvise", "--n", str(args.jobs), "--tidy", "--skip-key-off"]
    if case.ext not in C_LIKE:
        argv.append("--not-c")
    return run_on_interesting(res, case, scratch, args, argv)


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


TOOL = Tool(
    run=run_cvise,
    version=lambda args: tool_version(["cvise", "--version"]) if shutil.which("cvise") else None,
    baseline=cvise_from_baseline,
    record=record_cvise_baseline,
)
