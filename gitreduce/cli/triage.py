"""`git reduce triage`: the command-line front of `sessions.triage`.

Job: options (with defaults from git config, see `cli.defaults`:
`gitreduce.triage.workers`, `gitreduce.executor`, `gitreduce.jobs`,
`gitreduce.timeout`), a progress line for the batch (findings done /
running / queued, buckets, tests/s over all reductions, ETA; plain lines
when stderr is not a terminal), a line per finding as it ends, the bucket
table at the end, `--json` and the `--html` index page.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from gitreduce.cli import EXIT_INTERRUPTED
from gitreduce.cli.options import Debug, Quiet, TestTimeout, reported_errors
from gitreduce.cli.terminal import Terminal, shown
from gitreduce.core.errors import UserError
from gitreduce.sessions.triage_state import INTERRUPTED, REDUCED, FindingResult, TriageState

HELP = (
    "Reduce many findings, a bounded number at a time, and group them by failure signature."
    "\n\nA finding is a commit whose message ends with a 'Reduce-Test: NAME' trailer: its "
    "parent holds the passing seed, the commit the failing variant of the files it changes, "
    "plus one per 'Reduce-Path: PATH' trailer. NAME's command comes from your git "
    "config (git config gitreduce.test.NAME.command 'CMD'), never from a commit; --test CMD "
    "serves the commits in RANGE without a trailer. RANGE defaults to everything reachable "
    "from HEAD; --all takes every branch and tag. With --seed FILE --variants DIR, each file "
    "in DIR is a finding against FILE.\n\n"
    "Each finding is reduced as `git reduce C^..C -- PATH...` would (one file, or a pair "
    "of file sets), and gets what the "
    "post-commit hook writes: the branch reduce/<short sha> and a note (git log "
    "--notes=reduce). Findings settled by an earlier triage are not redone; an interrupted "
    "one resumes from the cached verdicts. Tests run locally (--executor local), on a Dask "
    "cluster started for the run (dask-local) or on an existing one (dask://HOST:PORT).\n\n"
    "Defaults from git config: gitreduce.triage.workers (--workers), gitreduce.executor "
    "(--executor), gitreduce.jobs (--jobs), gitreduce.timeout (--timeout).\n\n"
    "Exit codes: 0 done (also when findings were not reproduced), 2 bad input, 129 usage, "
    "130 interrupted."
)

_STATUS_MARKS = {
    REDUCED: "reduced",
    "not-reproduced": "not reproduced",
    "not-run": "not run",
    "failed": "failed",
    INTERRUPTED: "interrupted",
}


def triage_command(
    revisions: Annotated[
        str | None,
        typer.Argument(
            metavar="[RANGE]",
            help="Commits to look at: A..B, or a revision and all it reaches (default HEAD).",
            show_default=False,
        ),
    ] = None,
    everything: Annotated[
        bool, typer.Option("--all", help="Every branch and tag instead of RANGE.")
    ] = False,
    test: Annotated[
        str | None,
        typer.Option(
            "--test", metavar="CMD", help="Test command for commits without a Reduce-Test trailer."
        ),
    ] = None,
    seed: Annotated[
        Path | None,
        typer.Option(
            "--seed", metavar="FILE", help="The passing program the variants derive from."
        ),
    ] = None,
    variants: Annotated[
        Path | None,
        typer.Option(
            "--variants", metavar="DIR", help="A directory of failing variants of --seed."
        ),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            metavar="DIR",
            help="Where --variants results go (default DIR.reduced).",
        ),
    ] = None,
    jobs: Annotated[
        int | None,
        typer.Option(
            "--jobs",
            "-j",
            min=1,
            metavar="N",
            help="Tests in flight per reduction (default: gitreduce.jobs, else the executor's "
            "slots / --workers).",
        ),
    ] = None,
    workers: Annotated[
        int | None,
        typer.Option(
            "--workers",
            "-w",
            min=1,
            metavar="N",
            help="Reductions at once (default: gitreduce.triage.workers, else 1).",
        ),
    ] = None,
    executor: Annotated[
        str | None,
        typer.Option(
            "--executor",
            metavar="local|dask-local|dask://HOST:PORT",
            help="Where tests run: local, dask-local or dask://HOST:PORT "
            "(default: gitreduce.executor, else local).",
        ),
    ] = None,
    timeout: TestTimeout = None,
    representatives_first: Annotated[
        bool,
        typer.Option(
            "--representatives-first/--commit-order",
            help="Reduce the first finding of each failure signature before its duplicates.",
        ),
    ] = True,
    retry: Annotated[
        bool,
        typer.Option("--retry", help="Redo findings an earlier triage found not reproduced."),
    ] = False,
    queue: Annotated[
        bool,
        typer.Option("--queue", help="Reduce what the post-commit hook queued, until it is empty."),
    ] = False,
    html: Annotated[
        Path | None,
        typer.Option(
            "--html",
            metavar="FILE",
            help="Write an index page (and a report per finding beside it).",
        ),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the findings and buckets as JSON on stdout.")
    ] = False,
    quiet: Quiet = False,
    debug: Debug = False,
) -> None:
    # Loaded when the command runs, not with every `git reduce`.
    from gitreduce.cli.triage_html import write_index
    from gitreduce.sessions.triage import triage
    from gitreduce.sessions.triage_findings import TriageSettings

    console = Terminal(stderr=True, quiet=quiet, soft_wrap=True)
    with reported_errors(console, debug):
        if html is not None and (html.is_dir() or not html.parent.is_dir()):
            raise UserError(f"--html {html}: not a file in an existing directory")
        settings = TriageSettings(
            revisions=revisions,
            everything=everything,
            test=test,
            seed=seed,
            variants=variants,
            output=output,
            jobs=jobs,
            workers=workers or 1,
            executor=executor or "local",
            timeout=timeout,
            representatives_first=representatives_first,
            retry=retry,
            reports=html.with_name(html.stem + "-reports") if html is not None else None,
            queue=queue,
        )
        printer = TriagePrinter(console)
        try:
            state = triage(settings, printer)
        finally:
            printer.stop()
        print_buckets(console, state)
        index = write_index(html, state) if html is not None else None
        if as_json:
            record = state.as_dict() | {"html": str(index) if index else None}
            sys.stdout.write(json.dumps(record, indent=2) + "\n")
    if state.interrupted:
        raise typer.Exit(EXIT_INTERRUPTED)


class TriagePrinter:
    """The batch's progress: one status line, and one permanent line per finding that ends."""

    def __init__(self, console: Console) -> None:
        self._console = console
        self._live = console.is_terminal
        self._interval = 0.2 if self._live else 10.0
        self._last_shown = 0.0
        self._status = console.status("") if self._live else None
        self._started = False
        self._announced: set[str] = set()

    def __call__(self, state: TriageState) -> None:
        last = state.last
        if last is not None and last.status in _STATUS_MARKS and last.key not in self._announced:
            self._announced.add(last.key)
            self._console.print(_finding_line(last), highlight=False, markup=False)
        if self._status is None and last is not None:
            return  # in a log, a finding's own line says what changed
        if last is None and state.elapsed - self._last_shown < self._interval:
            return
        self._last_shown = state.elapsed
        line = status_line(state)
        if self._status is None:
            self._console.print(line, highlight=False, markup=False)
            return
        self._status.update(line)
        if not self._started:
            self._status.start()
            self._started = True

    def stop(self) -> None:
        if self._status is not None and self._started:
            self._status.stop()


def status_line(state: TriageState) -> str:
    done = sum(state.count(status) for status in _STATUS_MARKS)
    rate = state.tests_run / max(state.elapsed, 1e-6)
    eta = state.eta_seconds()
    return (
        f"findings {done}/{len(state.findings)} done, {len(state.running)} running, "
        f"{state.count('queued')} queued  buckets {len(state.buckets())}  "
        f"tests {state.tests_run} ({rate:.1f}/s)  {state.elapsed:.0f}s"
        + (f"  ETA {_duration(eta)}" if eta is not None else "")
    )


def _duration(seconds: float) -> str:
    minutes, rest = divmod(int(seconds + 0.5), 60)
    return f"{minutes}m{rest:02d}s" if minutes else f"{rest}s"


def _finding_line(finding: FindingResult) -> str:
    where = f"{finding.label} {finding.where}".rstrip()
    if finding.status == REDUCED and finding.diff_tokens:
        before, after = finding.diff_tokens
        return (
            f"{where}: reduced, diff {before} -> {after} tokens"
            + (f" [{finding.signature}]" if finding.signature else "")
            + (f" -> {finding.branch}" if finding.branch else "")
        )
    return f"{where}: {_STATUS_MARKS[finding.status]}" + (
        f": {finding.reason}" if finding.reason else ""
    )


def print_buckets(console: Console, state: TriageState) -> None:
    buckets = state.buckets()
    counts = ", ".join(
        f"{state.count(status)} {mark}"
        for status, mark in _STATUS_MARKS.items()
        if state.count(status)
    )
    console.print(
        f"{len(state.findings)} findings ({counts or 'none done'}), {len(buckets)} "
        f"bucket{'' if len(buckets) == 1 else 's'}, {state.tests_run} tests, "
        f"{state.elapsed:.1f}s",
        highlight=False,
        markup=False,
    )
    if not buckets:
        return
    table = Table(show_edge=False, pad_edge=False)
    for column in ("bucket", "findings", "representative", "diff", "signature"):
        table.add_column(column, overflow="fold")
    for bucket in buckets:
        best = bucket.representative
        table.add_row(
            str(bucket.number),
            str(len(bucket.findings)),
            shown(best.branch or best.label),
            "" if best.reduced_diff is None else f"{best.reduced_diff} tokens",
            shown(bucket.signature or "(no signature)"),  # the test's own words
        )
    console.print(table)
    for warning in state.warnings:
        console.print(f"warning: {warning}", highlight=False, markup=False)
