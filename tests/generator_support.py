"""Shared helpers for the generator tests: recording, replaying and reducing in this process.

The session runs generators in killable workers; these run them in the test's
own process, with Python predicates, which is enough for toy generators.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from gitreduce.generator.plan import Edits, Unit, canonical
from gitreduce.generator.recorder import execute
from gitreduce.generator.replay import Alignment, Replayed, replay
from gitreduce.generator.search import Strategy, reduce_trace
from gitreduce.generator.trace import Trace


def record(entry: Callable[..., Any], seed: int) -> Trace:
    return execute(lambda: entry, seed)


def loops(trace: Trace) -> list[tuple[int | None, int]]:
    """(count decision, iterations) per loop region, in order."""
    found = []
    for region in trace.regions:
        if region.kind == "loop":
            iterations = [r for r in trace.regions if r.parent == region.id]
            found.append((region.init, len(iterations)))
    return found


def again(
    entry: Callable[..., Any], base: Trace, removed: set[Unit], alignment: Alignment, seed: int
) -> Replayed:
    return replay(lambda: entry, base, frozenset(removed), alignment, seed)


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
    """Re-executes in this process and asks a Python predicate.

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
        self._seen: set[tuple[int, Edits]] = set()
        # Keyed by id, so every base must outlive the search: a collected base's id
        # could come back for a new trace and skip candidates never tried.
        self._bases: dict[int, Trace] = {}
        self.result = LocalResult(original.output, original, original, runs=1)

    @property
    def current(self) -> Trace:
        return self._best

    def first_success(self, base: Trace, removals: Sequence[Edits]) -> int | None:
        for index, removed in enumerate(removals):
            self._bases[id(base)] = base
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
