"""What the terminal shows while and after a reduction runs.

Progress redraws at most ten times a second on a terminal and prints a plain
line every few seconds otherwise (CI logs), so reporting never costs the hot
loop more than a clock read.
"""

from __future__ import annotations

import difflib
import time
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.status import Status

from gitreduce.current import Current
from gitreduce.ppr import PairCurrent
from gitreduce.session import PairSummary, Summary


class ProgressPrinter:
    """Shows size, tests and speed as the current best changes."""

    def __init__(self, console: Console) -> None:
        self._console = console
        self._live = console.is_terminal
        self._interval = 0.1 if self._live else 5.0
        self._last = 0.0
        self._original_tokens: int | None = None
        self._status: Status | None = None

    def __call__(self, current: Current) -> None:
        now = time.monotonic()
        if self._original_tokens is not None and now - self._last < self._interval:
            return
        self._last = now
        tokens = current.tokens
        if self._original_tokens is None:
            self._original_tokens = tokens
        stats = current.engine.stats
        share = 100.0 * tokens / max(1, self._original_tokens)
        rate = stats.tests_run / max(stats.elapsed, 1e-6)
        line = (
            f"{tokens} tokens ({share:.1f}%)  tests {stats.tests_run}  "
            f"cached {stats.cache_hits}  {rate:.1f}/s  {stats.elapsed:.0f}s  "
            f"pass {current.engine.pass_name}"
        )
        if self._live:
            if self._status is None:
                self._status = self._console.status(line)
                self._status.start()
            else:
                self._status.update(line)
        else:
            self._console.print(line, highlight=False)

    def stop(self) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None


def print_summary(console: Console, summary: Summary) -> None:
    for warning in summary.warnings:
        console.print(f"[yellow]warning:[/] {warning}")
    state = "interrupted; best so far" if summary.interrupted else "reduced"
    share = 100.0 * summary.tokens_after / max(1, summary.tokens_before)
    console.print(
        f"{state}: {summary.tokens_before} → {summary.tokens_after} tokens ({share:.1f}%), "
        f"{summary.bytes_before} → {summary.bytes_after} bytes; "
        f"{summary.stats.tests_run} tests, {summary.stats.cache_hits} cached, "
        f"{summary.wall_seconds:.1f}s",
        highlight=False,
    )
    _print_destinations(
        console, summary.branch, summary.commits, [Path(summary.output)] if summary.output else None
    )


class PairProgressPrinter:
    """Progress of a pairwise reduction: seed, variant and difference sizes."""

    def __init__(self, console: Console) -> None:
        self._console = console
        self._live = console.is_terminal
        self._interval = 0.1 if self._live else 5.0
        self._last: float | None = None
        self._status: Status | None = None

    def __call__(self, current: PairCurrent) -> None:
        now = time.monotonic()
        if self._last is not None and now - self._last < self._interval:
            return
        self._last = now
        state, stats = current.state, current.engine.stats
        line = (
            f"seed {state.seed_tokens()}  variant {state.variant_tokens()}  "
            f"diff {state.diff_tokens()} tokens  tests {stats.tests_run}  "
            f"cached {stats.cache_hits}  {stats.elapsed:.0f}s  pass {current.engine.pass_name}"
        )
        if self._live:
            if self._status is None:
                self._status = self._console.status(line)
                self._status.start()
            else:
                self._status.update(line)
        else:
            self._console.print(line, highlight=False)

    def stop(self) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None


def write_pair(summary: PairSummary, directory: Path) -> tuple[Path, Path]:
    """The reduced seed and variant as NAME.seed.EXT and NAME.variant.EXT in `directory`."""
    name = Path(summary.name)
    seed_path = directory / f"{name.stem}.seed{name.suffix}"
    variant_path = directory / f"{name.stem}.variant{name.suffix}"
    seed_path.write_bytes(summary.seed)
    variant_path.write_bytes(summary.variant)
    return seed_path, variant_path


def print_pair_summary(
    console: Console, summary: PairSummary, written: tuple[Path, Path] | None
) -> None:
    for warning in summary.warnings:
        console.print(f"[yellow]warning:[/] {warning}")
    diff = difflib.unified_diff(
        summary.seed.decode(errors="replace").splitlines(),
        summary.variant.decode(errors="replace").splitlines(),
        f"seed/{summary.name}",
        f"variant/{summary.name}",
        lineterm="",
    )
    for line in diff:
        style = "green" if line.startswith("+") else "red" if line.startswith("-") else None
        console.print(line, style=style, highlight=False, markup=False)
    state = "interrupted; best so far" if summary.interrupted else "reduced"
    console.print(
        f"{state} ({summary.algorithm}): seed {summary.seed_before} → {summary.seed_after}, "
        f"variant {summary.variant_before} → {summary.variant_after}, "
        f"difference {summary.diff_before} → {summary.diff_after} tokens; "
        f"{summary.stats.tests_run} tests, {summary.stats.cache_hits} cached, "
        f"{summary.wall_seconds:.1f}s",
        highlight=False,
    )
    _print_destinations(console, summary.branch, summary.commits, written)


def _print_destinations(
    console: Console, branch: str | None, commits: list[str], written: Sequence[Path] | None
) -> None:
    if branch is not None:
        console.print(
            f"recorded as branch {branch} ({commits[-1][:12]}): git show {branch}",
            highlight=False,
        )
    if written:
        console.print("written to " + " and ".join(str(path) for path in written), highlight=False)
