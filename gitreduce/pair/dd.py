"""Zeller's dd: isolate a failure-inducing difference between a passing and a failing input.

This is the baseline the PPR paper compares against. docs/algorithms.md lists two
ways to feed it a seed/variant pair, and both are here:

- `isolate_hunks` (`--algorithm dd`), Zeller's "yesterday it worked" use: the
  changes are the hunks of the token diff, c_pass = no hunk applied (the seed),
  c_fail = every hunk applied (the variant). The one a user with a good and a
  bad commit would reach for, and the stronger baseline for the difference.
- `isolate_tokens` (`--algorithm dd-empty`), the paper's own baseline: the
  changes are the variant's tokens, c_pass = the empty program, the seed
  ignored; the "seed" it returns is the largest passing subset it grew.

dd narrows the difference only: both returned programs stay as big as the
seed and the variant. That weakness is what PPR fixes, and the benchmark shows
it side by side.

Everything here is deterministic and free of I/O: the test is a callback.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Literal, overload

from gitreduce.pair.state import PairState

Verdict = Literal["pass", "fail", "unresolved"]
Subset = tuple[int, ...]
Test = Callable[[Subset], Verdict]
# Given candidates in order and a wanted verdict, the index of the first candidate the test
# gives that verdict (None if none). Lets an engine evaluate a batch in parallel while the
# outcome stays that of a sequential run.
FindFirst = Callable[[Sequence[Subset], Verdict], int | None]


def _split(changes: Subset, parts: int) -> list[Subset]:
    size, extra = divmod(len(changes), parts)
    chunks, start = [], 0
    for index in range(parts):
        stop = start + size + (1 if index < extra else 0)
        chunks.append(changes[start:stop])
        start = stop
    return [chunk for chunk in chunks if chunk]


Step = Callable[[Subset, Subset], None]


class _Lazy(Sequence[Subset]):
    """Candidates built when asked for: at fine granularity there are thousands, each as
    long as the input, and a search usually stops at one of the first."""

    def __init__(self, parts: list[Subset], make: Callable[[Subset], Subset]) -> None:
        self._parts = parts
        self._make = make

    def __len__(self) -> int:
        return len(self._parts)

    @overload
    def __getitem__(self, index: int) -> Subset: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Subset]: ...

    def __getitem__(self, index: int | slice) -> Subset | Sequence[Subset]:
        if isinstance(index, slice):
            return [self._make(part) for part in self._parts[index]]
        return self._make(self._parts[index])


def dd_search(
    changes: Sequence[int],
    find_first: FindFirst,
    *,
    passing: Sequence[int] = (),
    on_step: Step | None = None,
) -> tuple[Subset, Subset]:
    """(c_pass, c_fail) with c_pass ⊆ c_fail, c_fail - c_pass 1-minimal.

    Preconditions, not re-tested: `passing` passes and `changes` (a superset of
    it) fails. Subsets keep the order of `changes`, so candidates are
    canonical and a cache keyed on them hits.

    The four cases are tried in Zeller & Hildebrandt's priority, each over all
    parts before the next: a part that alone turns the pass into a failure, or
    whose removal turns the failure into a pass, shrinks the difference to that
    part (restart at 2 parts); only then are the growing-the-pass and
    shrinking-the-fail moves (one part less, n-1 parts) considered. Cases 3 and 4
    re-ask about the candidates of cases 1 and 2, which a caching `find_first`
    answers without running anything. `on_step` hears every narrower pair, so an
    interrupted run still has its best.
    """
    order = {change: position for position, change in enumerate(changes)}
    if len(order) != len(changes):
        raise ValueError("changes must be distinct")
    missing = [change for change in passing if change not in order]
    if missing:
        raise ValueError(f"passing changes not among the changes: {missing}")
    c_pass: Subset = tuple(sorted(set(passing), key=order.__getitem__))
    c_fail: Subset = tuple(changes)

    def union(base: Subset, part: Subset) -> Subset:
        return tuple(sorted((*base, *part), key=order.__getitem__))

    def minus(base: Subset, part: Subset) -> Subset:
        dropped = set(part)
        return tuple(change for change in base if change not in dropped)

    granularity = 2
    while True:
        if on_step is not None:
            on_step(c_pass, c_fail)
        difference = minus(c_fail, c_pass)
        if len(difference) <= 1:
            return c_pass, c_fail
        granularity = min(granularity, len(difference))
        parts = _split(difference, granularity)
        grown = _Lazy(parts, partial(union, c_pass))
        shrunk = _Lazy(parts, partial(minus, c_fail))
        if (found := find_first(grown, "fail")) is not None:
            c_fail, granularity = grown[found], 2
        elif (found := find_first(shrunk, "pass")) is not None:
            c_pass, granularity = shrunk[found], 2
        elif (found := find_first(grown, "pass")) is not None:
            c_pass, granularity = grown[found], max(granularity - 1, 2)
        elif (found := find_first(shrunk, "fail")) is not None:
            c_fail, granularity = shrunk[found], max(granularity - 1, 2)
        elif granularity < len(difference):
            granularity = min(2 * granularity, len(difference))
        else:
            return c_pass, c_fail


def dd(
    changes: Sequence[int],
    test: Test,
    *,
    passing: Sequence[int] = (),
    on_step: Step | None = None,
) -> tuple[Subset, Subset]:
    """dd with a plain one-candidate test; each distinct subset is tested once."""
    # keyed by (size, hash): subsets of a 25,000-token variant are 25,000 long each
    verdicts: dict[tuple[int, int], Verdict] = {}

    def find_first(candidates: Sequence[Subset], wanted: Verdict) -> int | None:
        for position, candidate in enumerate(candidates):
            key = (len(candidate), hash(candidate))
            verdict = verdicts.get(key)
            if verdict is None:
                verdict = verdicts[key] = test(candidate)
            if verdict == wanted:
                return position
        return None

    return dd_search(changes, find_first, passing=passing, on_step=on_step)


StateStep = Callable[[PairState, PairState], None]


def isolate_hunks(
    state: PairState,
    test: Callable[[PairState], Verdict],
    on_step: StateStep | None = None,
) -> tuple[PairState, PairState]:
    """The DD baseline on a pair: (passing, failing) states one minimal set of hunks apart.

    `test` classifies the *variant* of a state (the seed never changes here):
    "pass" for ψ_s (good), "fail" for ψ_v (bad with the original signature),
    "unresolved" otherwise. c_fail is `state` itself (its applied hunks), c_pass
    its seed. Hunks whose tokens were all reduced away are left as they are on
    both sides: they change nothing, so testing them is waste.
    """
    live = set(state.live_hunks())
    changes = tuple(sorted(live & state.applied))
    dead = tuple(sorted(state.applied - live))

    def as_state(subset: Subset) -> PairState:
        return state.with_hunks((*dead, *subset))

    def step(passing: Subset, failing: Subset) -> None:
        if on_step is not None:
            on_step(as_state(passing), as_state(failing))

    passing, failing = dd(changes, lambda subset: test(as_state(subset)), on_step=step)
    return as_state(passing), as_state(failing)


def isolate_tokens(
    variant: PairState,
    test: Callable[[PairState], Verdict],
    on_step: StateStep | None = None,
) -> tuple[PairState, PairState]:
    """The paper's DD: (passing, failing) subsets of the variant's tokens, grown from nothing.

    `variant` is the full state of an alignment of the empty program with the
    variant, so every variant token is a change and a subset renders with the
    variant's own spacing. The caller checks that the empty program passes.
    """
    count = len(variant.alignment.variant)
    everything = tuple(range(count))

    def as_state(subset: Subset) -> PairState:
        kept = set(subset)
        return variant.without_variant_tokens(i for i in everything if i not in kept)

    def step(passing: Subset, failing: Subset) -> None:
        if on_step is not None:
            on_step(as_state(passing), as_state(failing))

    passing, failing = dd(everything, lambda subset: test(as_state(subset)), on_step=step)
    return as_state(passing), as_state(failing)
