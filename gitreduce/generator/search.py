"""Trace reduction: which iterations and blocks to remove, calls to hoist, values to simplify.

The reducible parts of a trace (the iterations of a loop whose count is a
decision, the block a random guard let run; see recorder.py) nest: a statement
loop inside a function loop inside a program. Two searches, as in the paper:

- tree-based: HDD over that nesting, ddmin over the parts at one depth, then
  one level deeper among what survived, repeated until a sweep changes
  nothing. Removing a whole function first makes its statements cost no
  tests at all, so this is the default.
- sequence-based: one ddmin over all parts in trace order, nesting ignored
  (removing a part also removes what it contains), repeated until stable.

Either way, each round then goes beyond the paper's two patterns, on the
trace that is left (so they cost few tests):

- hoisting: a call of a recursive generator function replays along the
  decisions of a nested call of the same function, so `(a | (b ? c : d))`
  can become `(b ? c : d)` and an `if` statement the statement in its body;
  the candidates are tried one by one, the largest first, until none is
  interesting;
- simplification: ddmin over the remaining decisions that are neither counts
  nor guards, a decision "removed" meaning it takes its simplest value (the
  first alternative of a choice, the number nearest 0). The size gate keeps
  only what makes the input smaller.

Each candidate is "the base trace with these edits"; the searcher re-executes
it and answers which candidate of a batch was the first to stay interesting.
Within one ddmin run the base stays fixed, so ddmin's subsets keep meaning the
same parts; between runs the base moves to the trace of the best
re-execution, whose parts are what the next run works on.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Literal, Protocol

from gitreduce.core.ddmin import ddmin
from gitreduce.generator.plan import Edits, Unit, hoists, removable, simplifiable
from gitreduce.generator.trace import ROOT, Trace

Strategy = Literal["tree", "sequence"]
MAX_ROUNDS = 16


class Searcher(Protocol):
    """Evaluates batches of reduced traces; `current` is the trace of the best input so far."""

    @property
    def current(self) -> Trace: ...

    def first_success(self, base: Trace, removals: Sequence[Edits]) -> int | None:
        """Index of the first set of edits whose re-execution is interesting (and smaller);
        `current` becomes that re-execution's trace. None if no candidate is."""
        ...


def depths(trace: Trace) -> dict[int, int]:
    """Each removable part's depth: how many removable parts contain it."""
    units = removable(trace)
    unit_set = set(units)
    found: dict[int, int] = {}
    for unit in units:
        depth = 0
        region = trace.regions[unit].parent
        while region != ROOT:
            if region in unit_set:
                depth += 1
            region = trace.regions[region].parent
        found[unit] = depth
    return found


def reduce_trace(searcher: Searcher, strategy: Strategy, *, max_rounds: int = MAX_ROUNDS) -> None:
    """Shrink `searcher.current` until a round (removals by `strategy`, hoists,
    simplifications) changes nothing."""
    if strategy == "tree":
        _rounds(searcher, _tree, max_rounds)
    elif strategy == "sequence":
        _rounds(searcher, _sequence, max_rounds)
    else:
        raise ValueError(f"unknown strategy {strategy!r}")


def _ddmin_parts(searcher: Searcher, base: Trace, units: Sequence[Unit]) -> bool:
    """ddmin over `units` of `base`, a unit left out of the kept subset being applied; True if
    any was."""

    def first_success(subsets: Iterable[tuple[int, ...]]) -> int | None:
        removals = []
        for subset in subsets:
            keep = set(subset)
            removals.append(frozenset(u for i, u in enumerate(units) if i not in keep))
        return searcher.first_success(base, removals)

    kept = ddmin(tuple(range(len(units))), first_success, ahead=False)
    return len(kept) < len(units)


def _rounds(searcher: Searcher, structure: Callable[[Searcher], bool], max_rounds: int) -> None:
    """Removals and hoists until neither changes anything, then simplification; another
    round only if simplifying changed the shape of the execution (fewer decisions): new
    values alone open no new removals, and re-testing them would cost tests for nothing."""
    for _ in range(max_rounds):
        progress = structure(searcher)
        progress |= _hoist(searcher)
        if progress:
            continue
        before = len(searcher.current.decisions)
        if not _simplify(searcher) or len(searcher.current.decisions) == before:
            return


def _tree(searcher: Searcher) -> bool:
    progress = False
    level = 0
    while True:
        base = searcher.current
        by_depth = depths(base)
        units = [unit for unit in removable(base) if by_depth[unit] == level]
        if not units:
            return progress  # nothing at this depth means nothing deeper either
        progress |= _ddmin_parts(searcher, base, units)
        level += 1


def _sequence(searcher: Searcher) -> bool:
    base = searcher.current
    units = removable(base)
    return bool(units) and _ddmin_parts(searcher, base, units)


def _hoist(searcher: Searcher) -> bool:
    """One hoist at a time, the first interesting one of the base's candidates, until none is."""
    progress = False
    while True:
        base = searcher.current
        candidates = [frozenset({hoist}) for hoist in hoists(base)]
        if not candidates or searcher.first_success(base, candidates) is None:
            return progress
        progress = True


def _simplify(searcher: Searcher) -> bool:
    base = searcher.current
    units = simplifiable(base)
    return bool(units) and _ddmin_parts(searcher, base, units)
