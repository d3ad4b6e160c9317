"""The command-line options every mode shares, declared once so their names, help and
checks cannot drift apart between `git reduce` and `git reduce generate`."""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Literal

import typer
from rich.console import Console
from rich.markup import escape

from gitreduce.cli import EXIT_INTERRUPTED
from gitreduce.cli.terminal import Terminal
from gitreduce.core.errors import UserError
from gitreduce.oracle.executor import parse_executor
from gitreduce.oracle.repeat import MAX_REPEAT

TestCommand = Annotated[
    str | None,
    typer.Option("--test", metavar="CMD", help="Test command, git-bisect-run convention."),
]
InterestingCommand = Annotated[
    str | None,
    typer.Option(
        "--interesting", metavar="CMD", help="Test command, C-Reduce convention (0 = bug)."
    ),
]
Jobs = Annotated[
    int,
    typer.Option(
        "--jobs",
        "-j",
        min=1,
        metavar="N",
        help=(
            "Tests run in parallel (default: gitreduce.jobs, else the number of CPUs); one "
            "per CPU, each job's tests keep to a CPU of their own (GITREDUCE_PIN=0: not)."
        ),
    ),
]
DEFAULT_JOBS = os.cpu_count() or 1


def positive_seconds(value: float | None) -> float | None:
    """A duration option's check: a timeout of -1, 0, nan or inf would not time anything
    (and nan, inf broke the timeout arithmetic), so it is refused before anything runs."""
    if value is not None and not (math.isfinite(value) and value > 0):
        raise typer.BadParameter(f"must be a positive number of seconds, not {value:g}")
    return value


TestTimeout = Annotated[
    float | None,
    typer.Option(
        "--timeout",
        metavar="SECONDS",
        help="Seconds per test (default: gitreduce.timeout, else 10x the original's run, >= 1s).",
        callback=positive_seconds,
    ),
]
Signature = Annotated[
    str | None,
    typer.Option(
        "--signature",
        metavar="RE",
        help="Regex the failure's output must match (default: auto).",
    ),
]
AnyFailure = Annotated[
    bool, typer.Option("--any-failure", help="Accept any bad exit, not just the same bug.")
]
Repeat = Annotated[
    int,
    typer.Option(
        "--repeat",
        min=1,
        max=MAX_REPEAT,
        metavar="N",
        help="Run the test N times per candidate and go by the majority, for a test that fails "
        "only sometimes (default 1: a test that disagrees with itself is refused as flaky).",
    ),
]


def executor_name(value: str) -> str:
    """`--executor`'s check: a name `parse_executor` takes, refused before anything runs."""
    try:
        parse_executor(value)
    except UserError as error:
        raise typer.BadParameter(str(error)) from None
    return value


ExecutorName = Annotated[
    str,
    typer.Option(
        "--executor",
        metavar="local|dask-local|dask://HOST:PORT",
        help="Where the tests run: local (this machine's threads); dask-local (a Dask "
        "LocalCluster started for the run, one worker per job); dask://HOST:PORT (the workers "
        "of a running Dask scheduler, --jobs tests in flight). See docs/cluster.md.",
        callback=executor_name,
    ),
]
Branch = Annotated[
    str | None,
    typer.Option(
        "--branch",
        metavar="NAME",
        help="Result branch (default: reduce/<name>, under gitreduce.branchPrefix if set).",
    ),
]
Force = Annotated[bool, typer.Option("--force", help="Overwrite an existing result branch.")]
PatchFile = Annotated[
    Path | None,
    typer.Option("--patch", metavar="FILE", help="Also write the result as a mail-ready patch."),
]
AsJson = Annotated[bool, typer.Option("--json", help="Print a machine-readable summary on stdout.")]
ShowStats = Annotated[
    bool,
    typer.Option(
        "--stats",
        help="After the summary, print what each pass cost and gained on stdout "
        "(with --json: its `passes` array).",
    ),
]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No progress output.")]
Debug = Annotated[bool, typer.Option("--debug", help="Show tracebacks.")]


def resolve_test(
    test: str | None, interesting: str | None, signature: str | None, any_failure: bool
) -> tuple[str, Literal["bisect", "interesting"]]:
    """The test to run and its convention, once the options are known to agree."""
    if (test is None) == (interesting is None):
        raise UserError("give exactly one of --test CMD or --interesting CMD")
    if signature is not None and any_failure:
        raise UserError("--signature and --any-failure exclude each other")
    if test is not None:
        return test, "bisect"
    return str(interesting), "interesting"


@contextmanager
def reported_errors(console: Console, debug: bool) -> Iterator[None]:
    """Every failure as one line with its documented exit code: 2 for what the user can
    fix, 130 for Ctrl-C, 1 for a bug of ours (its traceback only with --debug)."""
    errors = Terminal(stderr=True, soft_wrap=True)
    try:
        yield
    except UserError as error:
        errors.print(f"[red]error:[/] {escape(str(error))}", highlight=False)
        raise typer.Exit(error.exit_code) from None
    except KeyboardInterrupt:
        console.print("interrupted", highlight=False)
        raise typer.Exit(EXIT_INTERRUPTED) from None
    except typer.Exit:
        raise
    except Exception as error:
        if debug:
            raise
        errors.print(
            f"[red]internal error:[/] {escape(repr(error))} (rerun with --debug)", highlight=False
        )
        raise typer.Exit(1) from None
