"""Trace reduction: choosing which iterations and blocks of a trace to label removed.

The reducible parts of a trace (the iterations of a loop whose count is a
decision, the block a random guard let run; see trace.py) nest: a statement
loop inside a function loop inside a program. Two searches, as in the paper:

- tree-based: HDD over that nesting, ddmin over the parts at one depth, then
  one level deeper among what survived, repeated until a sweep changes
  nothing. Removing a whole function first makes its statements cost no
  tests at all, so this is the default.
- sequence-based: one ddmin over all parts in trace order, nesting ignored
  (removing a part also removes what it contains), repeated until stable.

Each candidate is "the base trace with these parts removed"; the searcher
re-executes it and answers which candidate of a batch was the first to stay
interesting. Within one ddmin run the base stays fixed, so ddmin's subsets
keep meaning the same parts; between runs the base moves to the trace of the
best re-execution, whose parts are what the next run works on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from gitreduce.ddmin import ddmin
from gitreduce.generator.replay import Alignment, canonical, removable, replay
from gitreduce.generator.trace import ROOT, Trace, execute

Strategy = Literal["tree", "sequence"]
MAX_ROUNDS = 16


class Searcher(Protocol):
    """Evaluates batches of reduced traces; `current` is the trace of the best input so far."""

    @property
    def current(self) -> Trace: ...

    def first_success(self, base: Trace, removals: Sequence[frozenset[int]]) -> int | None:
        """Index of the first removal set whose re-execution is interesting (and smaller);
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
    """Shrink `searcher.current` until a whole sweep of `strategy` removes nothing."""
    if strategy == "tree":
        _tree(searcher, max_rounds)
    elif strategy == "sequence":
        _sequence(searcher, max_rounds)
    else:
        raise ValueError(f"unknown strategy {strategy!r}")


def _ddmin_parts(searcher: Searcher, base: Trace, units: list[int]) -> bool:
    """ddmin over `units` of `base`; True if any part went."""

    def first_success(subsets: Sequence[tuple[int, ...]]) -> int | None:
        removals = []
        for subset in subsets:
            keep = set(subset)
            removals.append(frozenset(u for i, u in enumerate(units) if i not in keep))
        return searcher.first_success(base, removals)

    kept = ddmin(tuple(range(len(units))), first_success)
    return len(kept) < len(units)


def _tree(searcher: Searcher, max_rounds: int) -> None:
    for _ in range(max_rounds):
        progress = False
        level = 0
        while True:
            base = searcher.current
            by_depth = depths(base)
            units = [unit for unit in removable(base) if by_depth[unit] == level]
            if not units:
                break  # nothing at this depth means nothing deeper either
            progress |= _ddmin_parts(searcher, base, units)
            level += 1
        if not progress:
            return


def _sequence(searcher: Searcher, max_rounds: int) -> None:
    for _ in range(max_rounds):
        base = searcher.current
        units = removable(base)
        if not units or not _ddmin_parts(searcher, base, units):
            return


# -- in-process reduction ---------------------------------------------------------------


@dataclass
class LocalResult:
    """What an in-process reduction did."""

    output: bytes
    trace: Trace
    original: Trace
    tests: int = 0  # predicate calls
    runs: int = 0  # generator executions, the original included
    failures: dict[str, int] = field(default_factory=dict)


class LocalSearcher:
    """Re-executes in this process and asks a Python predicate: for tests and library use.

    No timeouts and no isolation: a generator that loops forever hangs it.
    The session runs generators in killable workers instead.
    """

    def __init__(
        self,
        factory: Callable[[], Callable[..., Any]],
        seed: int,
        original: Trace,
        interesting: Callable[[bytes], bool],
        alignment: Alignment,
    ) -> None:
        self._factory = factory
        self._seed = seed
        self._interesting = interesting
        self._alignment = alignment
        self._best = original
        self._verdicts: dict[bytes, bool] = {}
        self._seen: set[tuple[int, frozenset[int]]] = set()
        self.result = LocalResult(original.output, original, original, runs=1)

    @property
    def current(self) -> Trace:
        return self._best

    def first_success(self, base: Trace, removals: Sequence[frozenset[int]]) -> int | None:
        for index, removed in enumerate(removals):
            key = (id(base), canonical(base, removed))
            if key in self._seen:
                continue
            self._seen.add(key)
            replayed = replay(self._factory, base, removed, self._alignment, self._seed)
            self.result.runs += replayed.runs
            if replayed.trace is None:
                reason = replayed.failure or "failed"
                self.result.failures[reason] = self.result.failures.get(reason, 0) + 1
                continue
            output = replayed.trace.output
            if len(output) >= len(self._best.output):
                continue
            verdict = self._verdicts.get(output)
            if verdict is None:
                self.result.tests += 1
                verdict = self._verdicts[output] = self._interesting(output)
            if verdict:
                self._best = replayed.trace
                self.result.output, self.result.trace = output, replayed.trace
                return index
        return None


def reduce_in_process(
    entry: Callable[..., Any],
    seed: int,
    interesting: Callable[[bytes], bool],
    *,
    strategy: Strategy = "tree",
    alignment: Alignment = Alignment.REALIGN,
) -> LocalResult:
    """GReduce on a Python entry function with a Python predicate, all in this process."""

    def factory() -> Callable[..., Any]:
        return entry

    original = execute(factory, seed)
    if not interesting(original.output):
        raise ValueError("the original output is not interesting")
    searcher = LocalSearcher(factory, seed, original, interesting, alignment)
    reduce_trace(searcher, strategy)
    return searcher.result
