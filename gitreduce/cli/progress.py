"""What the terminal shows while and after a reduction runs.

Progress redraws at most ten times a second on a terminal and prints a plain
line every few seconds otherwise (CI logs), so reporting never costs the hot
loop more than a clock read.

A pair's result is its change. On a terminal wide enough for both programs
(see `side_by_side_width`) it is drawn side by side, seed left and variant
right, with the differing tokens marked inside their lines, as in the PPR
paper's Figure 1; otherwise, and always when stderr is not a terminal, as a
unified diff (`diff -u` text, byte for byte, so logs and pipes stay plain and
stable), its differing tokens marked too when colour is on.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import os
import re
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, cast

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.status import Status
from rich.table import Table
from rich.text import Text

from gitreduce.cli.html import Line, Row, align, marked_lines, marked_pair
from gitreduce.cli.terminal import shown
from gitreduce.core.current import Current
from gitreduce.core.engine import Engine
from gitreduce.core.errors import UserError
from gitreduce.core.stats import Stats
from gitreduce.sessions.batch import jobs_file

PROGRESS_FILE_SECONDS = 0.5

if TYPE_CHECKING:  # type hints only: a single file's run never loads the pairwise modes
    from gitreduce.pair.current import PairCurrent
    from gitreduce.sessions.pair import PairSummary
    from gitreduce.sessions.setpair import SetPairSummary
    from gitreduce.sessions.setpair_search import SetPairStatus
    from gitreduce.sessions.single import Summary


class _StatusLine:
    """One line of progress: redrawn in place at most ten times a second on a terminal,
    printed as a plain line every few seconds otherwise (CI logs)."""

    def __init__(self, console: Console) -> None:
        self._console = console
        self._live = console.is_terminal
        self._interval = 0.1 if self._live else 5.0
        self._last: float | None = None
        self._status: Status | None = None

    def _due(self) -> bool:
        now = time.monotonic()
        if self._last is not None and now - self._last < self._interval:
            return False
        self._last = now
        return True

    def _show(self, line: str) -> None:
        if not self._live:
            # plain text: markup and emoji codes would be misread, and rich's emoji table
            # loaded for the first line (2.3 ms, while no test runs yet)
            self._console.print(line, highlight=False, markup=False, emoji=False)
        elif self._status is None:
            self._status = self._console.status(line)
            self._status.start()
        else:
            self._status.update(line)

    def stop(self) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None


def _work(stats: Stats, label: str) -> str:
    """Tests, cache hits, speed, time and the pass at work: the part every mode shows."""
    rate = stats.tests_run / max(stats.elapsed, 1e-6)
    return (
        f"tests {stats.tests_run}  cached {stats.cache_hits}  {rate:.1f}/s  "
        f"{stats.elapsed:.0f}s  pass {label or 'start'}"
    )


class ProgressPrinter(_StatusLine):
    """Shows size, tests and speed as the current best changes."""

    def __init__(self, console: Console) -> None:
        super().__init__(console)
        self._original_tokens: int | None = None

    def __call__(self, current: Current) -> None:
        if not self._due():
            return
        tokens = current.tokens
        if self._original_tokens is None:
            self._original_tokens = tokens
        share = 100.0 * tokens / max(1, self._original_tokens)
        engine = current.engine
        self._show(f"{tokens} tokens ({share:.1f}%)  {_work(engine.stats, current.label)}")


def print_warnings(console: Console, warnings: Sequence[str]) -> None:
    """Each warning on a line of its own; a file's name or the test's words in one are
    never read as markup (`[/b]` in a directory's name)."""
    for warning in warnings:
        console.print(f"[yellow]warning:[/] {escape(warning)}", highlight=False)


def print_summary(console: Console, summary: Summary, patch: Path | None = None) -> None:
    print_warnings(console, summary.warnings)
    state = "interrupted; best so far" if summary.interrupted else "reduced"
    share = 100.0 * summary.tokens_after / max(1, summary.tokens_before)
    console.print(
        f"{state}: {summary.tokens_before} → {summary.tokens_after} tokens ({share:.1f}%), "
        f"{summary.bytes_before} → {summary.bytes_after} bytes; "
        f"{summary.stats.tests_run} tests, {summary.stats.cache_hits} cached, "
        f"{summary.wall_seconds:.1f}s{verified_note(summary.verified)}",
        highlight=False,
    )
    print_provenance(console, summary.stats)
    _print_destinations(
        console,
        summary.branch,
        summary.commits,
        [Path(summary.output)] if summary.output else None,
        patch,
    )


def verified_note(verified: bool) -> str:
    """What the summary line says about the final re-verification (sessions/verify.py)."""
    return "; result verified alone" if verified else ""


def print_provenance(console: Console, stats: Stats) -> None:
    """One line on cached verdicts from elsewhere, when the run met any."""
    if stats.foreign_used or stats.confirmations:
        console.print(
            f"cached verdicts from elsewhere: {stats.foreign_used} rejected a candidate "
            f"(a test saved), {stats.confirmations} confirmed by a run first",
            highlight=False,
        )


class PairProgressPrinter(_StatusLine):
    """Progress of a pairwise reduction: seed, variant and difference sizes."""

    def __init__(self, console: Console) -> None:
        super().__init__(console)
        self._original: tuple[int, int, int] | None = None

    def __call__(self, current: PairCurrent | SetPairStatus) -> None:
        if not self._due():
            return
        # Told apart by what they hold, not by class: importing `SetPairStatus` to ask
        # would load the set-pair machinery into every pair's run.
        sizes = getattr(current, "sizes", None)  # a SetPairStatus: summed over each set
        if sizes is None:
            state = cast("PairCurrent", current).state
            sizes = (state.seed_tokens(), state.variant_tokens(), state.diff_tokens())
        if self._original is None:
            self._original = sizes
        seed, variant, diff = (
            f"{now} ({100.0 * now / max(1, before):.0f}%)"
            for now, before in zip(sizes, self._original, strict=True)
        )
        self._show(
            f"seed {seed}  variant {variant}  diff {diff} tokens  "
            f"{_work(current.engine.stats, current.label)}"
        )


def pair_outputs(name: str, directory: Path) -> tuple[Path, Path]:
    """Where a pair named `name` (the variant's file name) is written in `directory`:
    NAME.seed.EXT and NAME.variant.EXT."""
    stem, suffix = Path(name).stem, Path(name).suffix
    return directory / f"{stem}.seed{suffix}", directory / f"{stem}.variant{suffix}"


def write_pair(summary: PairSummary, directory: Path) -> tuple[Path, Path]:
    """The reduced seed and variant as NAME.seed.EXT and NAME.variant.EXT in `directory`,
    created (with its parents) if need be."""
    seed_path, variant_path = pair_outputs(summary.name, directory)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        seed_path.write_bytes(summary.seed)
        variant_path.write_bytes(summary.variant)
    except OSError as error:
        raise UserError(f"cannot write the pair to {directory}: {error.strerror}") from None
    return seed_path, variant_path


def print_pair_summary(
    console: Console,
    summary: PairSummary,
    written: tuple[Path, Path] | None,
    patch: Path | None = None,
) -> None:
    """The change (see `print_change`), then one screen of sizes, figures and destinations."""
    print_warnings(console, summary.warnings)
    print_change(
        console,
        summary.seed.decode(errors="replace"),
        summary.variant.decode(errors="replace"),
        summary.name,
    )
    _print_pair_figures(console, summary, summary.algorithm)
    _print_destinations(console, summary.branch, summary.commits, written, patch)


def _print_pair_figures(
    console: Console, summary: PairSummary, method: str, files: str = ""
) -> None:
    """The line of sizes and figures a pair and a pair of sets share (`files`: what the
    sets add before the figures), then where cached verdicts and the first bad commit
    came from."""
    state = "interrupted; best so far" if summary.interrupted else "reduced"
    console.print(
        f"{state} ({method}): seed {summary.seed_before} → {summary.seed_after}, "
        f"variant {summary.variant_before} → {summary.variant_after}, "
        f"difference {summary.diff_before} → {summary.diff_after} tokens; "
        f"{files}{summary.stats.tests_run} tests, {summary.stats.cache_hits} cached, "
        f"{summary.wall_seconds:.1f}s{verified_note(summary.verified)}",
        highlight=False,
    )
    print_provenance(console, summary.stats)
    if summary.first_bad_commit is not None:
        console.print(f"first bad commit: {summary.first_bad_commit}", highlight=False)


def print_set_pair_summary(
    console: Console, summary: SetPairSummary, patch: Path | None = None
) -> None:
    """Each file's change (see `print_change`), then the sizes, figures and destinations."""
    from gitreduce.sessions.setpair import SEED_DIRECTORY, VARIANT_DIRECTORY

    print_warnings(console, summary.warnings)
    for path in summary.changed_files:
        print_change(
            console,
            summary.seed_files.get(path, b"").decode(errors="replace"),
            summary.variant_files.get(path, b"").decode(errors="replace"),
            path,
        )
    files = (
        f"files: seed {summary.seed_files_before} → {len(summary.seed_files)}, "
        f"variant {summary.variant_files_before} → {len(summary.variant_files)}, "
        f"{len(summary.changed_files)} differ; "
    )
    _print_pair_figures(console, summary, "ppr over file sets", files)
    written = None
    if summary.output is not None:
        written = [Path(summary.output) / SEED_DIRECTORY, Path(summary.output) / VARIANT_DIRECTORY]
    _print_destinations(console, summary.branch, summary.commits, written, patch)


# -- the change: side by side or unified ------------------------------------------------------

# Seed lines are what the variant lost (red), variant lines what it gained
# (green); the differing tokens themselves are inverted so they stand out
# inside a changed line, and survive a terminal without colour as bold.
SEED_LINE, VARIANT_LINE = "red", "green"
SEED_MARK, VARIANT_MARK = "bold reverse red", "bold reverse green"
# Beyond this many aligned rows the whole pair no longer reads at a glance and
# the unified diff's three lines of context around each change serve better
# (a --algorithm dd result keeps most of both programs).
SIDE_BY_SIDE_MAX_ROWS = 200
_TAB_SIZE = 4
_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")


def print_change(console: Console, seed: str, variant: str, name: str) -> None:
    """The reduced pair's difference: side by side when the terminal fits it, else unified.

    Side by side needs a terminal (pipes and logs always get the unified diff),
    at most `SIDE_BY_SIDE_MAX_ROWS` aligned rows, and `console.width` of at
    least `side_by_side_width`: every line of both programs whole, next to each
    other, so nothing is wrapped or cut. Off a terminal no style is drawn, so
    the token diff (up to seconds on a large pair) is skipped there. The
    programs and the name come from strangers: their control characters are
    shown, not sent (`cli.terminal`).
    """
    seed, variant, name = shown(seed), shown(variant), shown(name)
    if console.is_terminal:
        seed_lines, variant_lines = marked_pair(seed, variant)
    else:
        seed_lines, variant_lines = marked_lines(seed, []), marked_lines(variant, [])
    rows = align(seed_lines, variant_lines)
    if (
        console.is_terminal
        and len(rows) <= SIDE_BY_SIDE_MAX_ROWS
        and side_by_side_width(rows, name) <= console.width
    ):
        console.print(side_by_side_table(rows, name), soft_wrap=False)
        return
    for line in unified_lines(seed, variant, name, seed_lines, variant_lines):
        console.print(line, highlight=False, soft_wrap=True)


def _headers(name: str) -> tuple[str, str]:
    return f"seed/{name} (passes)", f"variant/{name} (fails)"


def _number_width(rows: Sequence[Row]) -> int:
    last = max(
        (line.number for row in rows for line in (row.seed, row.variant) if line is not None),
        default=1,
    )
    return len(str(last))


def _code(line: Line | None, line_style: str | None, mark_style: str) -> Text:
    """A line as rich Text, its marked tokens in `mark_style`, tabs expanded."""
    if line is None:
        return Text()
    text = Text(line.text, style=line_style or "", no_wrap=True, end="")
    for start, end in line.marks:
        text.stylize(mark_style, start, end)
    text.expand_tabs(_TAB_SIZE)
    return text


def side_by_side_width(rows: Sequence[Row], name: str) -> int:
    """Columns the side-by-side table takes: two halves of `number code`, and a gutter.

    Each half is as wide as its longest line (tabs at 4) or its header, after
    the line numbers and a space; ` │ ` separates the halves.
    """
    numbers = _number_width(rows)
    seed_header, variant_header = _headers(name)

    def half(lines: Iterator[Line | None], header: str) -> int:
        code = max((_code(line, None, "").cell_len for line in lines), default=0)
        return max(numbers + 1 + code, len(header))

    return (
        half((row.seed for row in rows), seed_header)
        + 3
        + half((row.variant for row in rows), variant_header)
    )


def side_by_side_table(rows: Sequence[Row], name: str) -> Table:
    """Seed left, variant right, aligned by the line diff; changed rows coloured, tokens marked."""
    seed_header, variant_header = _headers(name)
    numbers = _number_width(rows)
    table = Table(
        box=box.MINIMAL,
        show_edge=False,
        pad_edge=False,
        padding=(0, 1),
        header_style="bold",
    )
    table.add_column(seed_header, no_wrap=True)
    table.add_column(variant_header, no_wrap=True)
    for row in rows:
        cells: list[Text] = []
        for line, line_style, mark_style in (
            (row.seed, SEED_LINE, SEED_MARK),
            (row.variant, VARIANT_LINE, VARIANT_MARK),
        ):
            tint = line_style if row.side_changed(line) else None
            number = str(line.number) if line is not None else ""
            cell = Text(end="")
            cell.append(number.rjust(numbers), style="dim")
            cell.append(" ")
            cell.append_text(_code(line, tint, mark_style))
            cells.append(cell)
        table.add_row(*cells)
    return table


def unified_lines(
    seed: str,
    variant: str,
    name: str,
    seed_lines: Sequence[Line],
    variant_lines: Sequence[Line],
) -> Iterator[Text]:
    """`difflib.unified_diff` of the pair, line by line, its differing tokens marked.

    The text is difflib's exactly; the marks come from the token diff of the
    whole pair (`seed_lines`, `variant_lines`), located by following the hunk
    headers, so a token changed inside an otherwise shared line is marked too.
    """
    at_seed = at_variant = 0
    diff = difflib.unified_diff(
        seed.splitlines(), variant.splitlines(), f"seed/{name}", f"variant/{name}", lineterm=""
    )
    for index, raw in enumerate(diff):
        if index < 2:  # the ---/+++ file names
            yield Text(raw, style="bold", end="")
            continue
        hunk = _HUNK.match(raw)
        if hunk is not None:
            at_seed, at_variant = int(hunk[1]) - 1, int(hunk[2]) - 1
            yield Text(raw, style="cyan", end="")
            continue
        marked: list[tuple[Line, str]] = []
        style = ""
        if raw.startswith("-"):
            marked.append((seed_lines[at_seed], SEED_MARK))
            style = SEED_LINE
            at_seed += 1
        elif raw.startswith("+"):
            marked.append((variant_lines[at_variant], VARIANT_MARK))
            style = VARIANT_LINE
            at_variant += 1
        else:  # context: the same text on both sides, tokens may still have moved
            marked += [(seed_lines[at_seed], SEED_MARK), (variant_lines[at_variant], VARIANT_MARK)]
            at_seed += 1
            at_variant += 1
        text = Text(raw, style=style, end="")
        for line, mark in marked:
            for start, end in line.marks:
                text.stylize(mark, start + 1, end + 1)
        yield text


def _print_destinations(
    console: Console,
    branch: str | None,
    commits: list[str],
    written: Sequence[Path] | None,
    patch: Path | None = None,
) -> None:
    if branch is not None:
        console.print(
            f"recorded as branch {branch} ({commits[-1][:12]}): git show {branch}",
            highlight=False,
        )
    if written:
        console.print("written to " + " and ".join(str(path) for path in written), highlight=False)
    if patch is not None and commits:
        console.print(f"patch written to {patch}", highlight=False)


def pass_profile_table(stats: Stats) -> Table:
    """`--stats`: what each pass cost (tests, wall time) and gained (tokens, successes).

    A nested pass (`min-commonality/tree`) is part of its outer pass's time;
    its tests are its own, so the tests column adds up to the run's total.
    """
    table = Table(box=box.SIMPLE_HEAD, title="passes", title_justify="left")
    labels = max((len(label) for label in stats.passes), default=0)
    table.add_column("pass", no_wrap=True, min_width=labels)
    for heading in ("runs", "tests", "cached", "rejected", "successes", "tokens", "s"):
        table.add_column(heading, justify="right", no_wrap=True)
    for label, figures in stats.passes.items():
        table.add_row(
            label,
            str(figures.runs),
            str(figures.tests),
            str(figures.cache_hits),
            str(figures.syntax_rejected),
            str(figures.successes),
            f"-{figures.tokens_removed}" if figures.tokens_removed else "0",
            f"{figures.seconds:.1f}",
        )
    return table


def print_pass_profile(stats: Stats) -> None:
    """`--stats` without `--json`: the pass profile on stdout, after the summary, never
    narrower than its rows (a pipe's 80 columns would cut `min-commonality/...`)."""
    table = pass_profile_table(stats)
    needed = Console(width=10_000).measure(table).maximum
    console = Console()
    if console.width < needed:
        console = Console(width=needed)
    console.print(table)


class ProgressFile:
    """`--progress-file PATH`: the run's test count, rewritten twice a second, for a triage
    that shows tests/s over all its reductions (see `sessions.batch`); and the other way,
    a new `--jobs` from `PATH.jobs` once the triage writes it there (its workers freed by
    reductions that ended go to the ones still running).

    Observing starts a daemon thread on the first call; the file is replaced
    whole (written aside, renamed), so a reader never sees half of it.
    """

    def __init__(self, path: Path) -> None:
        self._path = path
        self._jobs_path = jobs_file(path)
        self._thread: threading.Thread | None = None

    def __call__(self, current: Current | PairCurrent) -> None:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._write_every, args=(current.engine,), name="progress-file", daemon=True
            )
            self._thread.start()

    def _write_every(self, engine: Engine) -> None:
        aside = self._path.with_name(self._path.name + ".tmp")
        while True:
            with contextlib.suppress(OSError):
                aside.write_text(json.dumps({"tests_run": engine.stats.tests_run}))
                os.replace(aside, self._path)
            with contextlib.suppress(OSError, ValueError):
                jobs = int(self._jobs_path.read_text())
                if jobs > engine.jobs:
                    engine.set_jobs(jobs)
            time.sleep(PROGRESS_FILE_SECONDS)
