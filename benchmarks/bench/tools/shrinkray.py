"""shrinkray, an optional second reducer to compare with (skipped when not on PATH).

Job: the adapter of shrinkray: offline, without its language model or
history, the path of the candidate as the interestingness script's argument.
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from bench.cases import Case
from bench.results import Result
from bench.tools.base import Tool, run_on_interesting


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
    return run_on_interesting(res, case, scratch, args, argv)


def prepare(args: argparse.Namespace, notes: list[str]) -> None:
    if shutil.which("shrinkray") is None:
        notes.append("shrinkray not on PATH: skipped.")


TOOL = Tool(
    run=run_shrinkray,
    prepare=prepare,
    available=lambda args: shutil.which("shrinkray") is not None,
)
