"""Passes as data: a pass is declared once (name, function, when it applies) and run here.

A schedule (see `gitreduce.passes.schedule` and `gitreduce.pair.ppr`) is a
declared tuple of `Pass` values and a loop over them; `run_pass` is the one
place that labels a pass's batches, skips a switched-off pass, and records
its wall time and the tokens it removed. The rules every pass keeps are in
docs/passes.md.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from gitreduce.core.engine import Engine


class PassTarget(Protocol):
    """What a pass works on: the best program (or pair) so far, with its engine.

    `label` names the pass whose batches are running; the engine counts
    every test a batch runs for that label.
    """

    engine: Engine
    label: str

    @property
    def tokens(self) -> int: ...


T = TypeVar("T")


@dataclass(frozen=True)
class Pass(Generic[T]):
    """One pass of a schedule: `run` shrinks the target and says whether it did.

    `applies` decides, each time the schedule reaches the pass, whether it runs
    at all (a grammar pass on a file without a grammar does not). `first_batch`,
    where the pass knows it from the target alone, gives the candidates its
    first batch tries, in order: while the pass before it tests its last
    candidates, the engine starts on those (`Current.then`). `idle_if_first_empty`
    says that a pass whose first batch is empty tries nothing at all (a pass that
    derives each batch from the text alone), so a lookahead reads on past it.
    """

    name: str
    run: Callable[[T], bool]
    summary: str
    applies: Callable[[T], bool] = lambda target: True
    first_batch: Callable[[T], Iterable[bytes]] | None = None
    idle_if_first_empty: bool = False


def run_pass(declared: Pass[T], target: T, on: PassTarget) -> bool:
    """Run `declared` on `target` (whose best program is `on`), labelled and measured.

    Nested schedules compose labels: the single-program passes that PPR's
    MinCommonality runs on the seed count as `min-commonality/tree`, ... A
    pass is switched off when its name or its full label is in the engine's
    `skipped_passes`.
    """
    if not declared.applies(target) or skipped(declared, on):
        return False
    outer = on.label
    label = pass_label(declared, on.label)
    engine = on.engine
    stats = engine.stats.of_pass(label)  # before its nested passes: the profile reads in order
    tokens_before = on.tokens
    started = time.monotonic()
    on.label = label
    try:
        progress = declared.run(target)
    finally:
        on.label = outer
        stats.runs += 1
        stats.seconds += time.monotonic() - started
        stats.tokens_removed += max(0, tokens_before - on.tokens)
    return progress


def skipped(declared: Pass[T], on: PassTarget) -> bool:
    """Whether the pass's name or its full label (under the label running on `on`) is
    among the engine's skipped passes."""
    switched_off = on.engine.skipped_passes
    return declared.name in switched_off or pass_label(declared, on.label) in switched_off


def pass_label(declared: Pass[T], outer: str) -> str:
    """The label `declared` counts its tests under when it runs inside the pass labelled
    `outer` ("" at the top)."""
    return f"{outer}/{declared.name}" if outer else declared.name
