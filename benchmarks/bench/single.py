"""Single-program mode: every selected tool on every case, one run at a time.

Job: the run of the benchmark proper: readies the tools, sets aside the cases
this machine cannot run, then runs (or, with ``--use-baselines``, reads) each
tool on each case in a fresh scratch dir, strictly one after another, and
writes results.md and results.json.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.cases import discover_cases, safe, usable_cases
from bench.measure import MACHINE_NOTE
from bench.report import fmt, write_report
from bench.results import Result
from bench.tools import TOOLS


def main_single(args: argparse.Namespace) -> int:
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
        "is reused; with Python's bytecode cache allowed, as installed (no "
        "PYTHONDONTWRITEBYTECODE).",
    ]
    args.gitreduce_argv = None
    args.gitreduce_stats_mode = None
    for name, tool in TOOLS.items():
        if name in args.tool_list and tool.prepare is not None:
            tool.prepare(args, notes)
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
    for name in sorted(TOOLS):  # listed by name in results.json
        tool = TOOLS[name]
        version = tool.version(args) if name in args.tool_list and tool.version else None
        if version is not None:
            meta["versions"][name] = version

    results: list[Result] = []
    for case in cases:
        for name in args.tool_list:
            tool = TOOLS[name]
            if tool.available is not None and not tool.available(args):
                continue
            stamp = f"{dt.datetime.now():%H:%M:%S}"
            res: Result | None = None
            if args.use_baselines and tool.baseline is not None:
                res = tool.baseline(case, args)
                if res is None:
                    print(
                        f"[{stamp}] {case.name}: no {name} baseline, running {name}",
                        file=sys.stderr,
                        flush=True,
                    )
            if res is None:
                print(f"[{stamp}] {case.name}: {name} ...", file=sys.stderr, flush=True)
                with tempfile.TemporaryDirectory(prefix=f"bench-{safe(case.name)}-{name}-") as tmp:
                    res = tool.run(case, Path(tmp), args)
                if args.record_baselines and tool.record is not None:
                    js = tool.record(case, res, args)
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

    write_report(args, results, meta)
    return 0
