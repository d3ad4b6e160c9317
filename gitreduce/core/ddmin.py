"""Minimising delta debugging over abstract units, written against a batch oracle.

The algorithm only decides *which* subsets to try next; `first_success` tries an
ordered batch of candidates and says which is the first interesting one. That
keeps ddmin free of I/O and lets the engine evaluate a batch in parallel while
the outcome stays what a sequential run would give (the first success in order
wins, whatever finishes first).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

Subset = tuple[int, ...]


def _chunks(units: Subset, count: int) -> list[Subset]:
    size, extra = divmod(len(units), count)
    chunks, start = [], 0
    for index in range(count):
        stop = start + size + (1 if index < extra else 0)
        chunks.append(units[start:stop])
        start = stop
    return [chunk for chunk in chunks if chunk]


@dataclass(frozen=True)
class _Step:
    """Where one planned candidate sits in ddmin's search: its batch's granularity and
    resume point, its place in that batch, and what it keeps."""

    granularity: int
    resume: int
    index: int
    chunks: int
    kept: Subset


def _planned(
    current: Subset,
    granularity: int,
    resume: int,
    plan: list[_Step | None],
    *,
    empty: bool,
    one_batch: bool,
) -> Iterator[Subset]:
    """The subsets ddmin tries from here if every one fails, in its order: the empty set
    (when `empty`), then each granularity's complements down to single units; with
    `one_batch`, only the first of those batches. Each one's step is appended to
    `plan` as it is yielded."""
    if empty:
        plan.append(None)
        yield ()
        if one_batch or len(current) == 1:
            return
    while True:
        chunks = _chunks(current, granularity)
        order = chunks[resume:] + chunks[:resume]
        for index, chunk in enumerate(order):
            removed = set(chunk)
            kept = tuple(unit for unit in current if unit not in removed)
            plan.append(_Step(granularity, resume, index, len(chunks), kept))
            yield kept
        if one_batch or granularity >= len(current):
            return
        granularity = min(granularity * 2, len(current))
        resume = 0


class Plan(Iterator[Subset]):
    """The subsets ddmin tries from where it stands until its next success, read lazily;
    and, for any subset already read, what ddmin tries next if that one is the first
    success (`after`), so that a caller may test those ahead while it still runs."""

    def __init__(
        self, current: Subset, granularity: int, resume: int, *, empty: bool, one_batch: bool
    ) -> None:
        self._steps: list[_Step | None] = []
        self._one_batch = one_batch
        self._subsets = _planned(
            current, granularity, resume, self._steps, empty=empty, one_batch=one_batch
        )

    def __next__(self) -> Subset:
        return next(self._subsets)

    def step(self, index: int) -> _Step | None:
        """Where the `index`-th subset read sits in the search (None: the empty set)."""
        return self._steps[index]

    def last(self) -> _Step | None:
        """The last subset's step, once the plan is read to its end (None: only the empty
        set, or nothing, was planned)."""
        for _ in self:
            pass
        return self._steps[-1] if self._steps else None

    def after(self, index: int) -> Iterator[Subset]:
        """What ddmin reads next if the `index`-th subset is the first success; nothing
        when ddmin then ends (the empty set won, or nothing is left to remove)."""
        step = self._steps[index]
        if step is None or not step.kept:
            return iter(())
        return Plan(*_resumed(step), empty=False, one_batch=self._one_batch)


# The index of the first interesting subset of a plan, in order, or None; reads no further
# than it needs
FirstSuccess = Callable[[Plan], int | None]


def _resumed(step: _Step) -> tuple[Subset, int, int]:
    """Where ddmin goes on after `step` succeeded: its kept units, at one granularity
    coarser, resuming at the chunk that succeeded instead of from the front."""
    current = step.kept
    resume = (step.resume + step.index) % step.chunks
    granularity = max(step.granularity - 1, 2)
    granularity = min(granularity, len(current)) if current else granularity
    resume = min(resume, max(granularity - 1, 0))
    return current, granularity, resume


def opening(count: int, *, try_empty: bool = True) -> Iterator[Subset]:
    """The subsets `ddmin` over `count` units reads first (with `ahead`), in its order:
    what it tries if none of them wins, for a caller that looks ahead to it."""
    units = tuple(range(count))
    if not units:
        return iter(())
    return _planned(units, min(2, count), 0, [], empty=try_empty, one_batch=False)


def ddmin(
    units: Subset, first_success: FirstSuccess, *, try_empty: bool = True, ahead: bool = True
) -> Subset:
    """A 1-minimal subset of `units` that stays interesting (the full set is assumed to be).

    Complements are tried before subsets (they remove more when most units are
    needed, which is typical deep in a tree); after a removal the search resumes
    at the chunk that succeeded instead of restarting from the front, which
    saves re-testing chunks that just failed. `try_empty` first tries removing
    every unit at once, a single cheap test that often empties dead lists.

    With `ahead`, `first_success` gets, lazily, every candidate ddmin would
    try until its next success, not one batch: a batch of one (the empty set)
    or the last candidates of a batch would otherwise leave all but one job
    idle while the next batch is already known. The first success in order is
    the same either way, so neither the result nor the candidates tried at one
    job change. Without `ahead`, one batch at a time, for a `first_success`
    that reads all it is given.
    """
    current = tuple(units)
    if not current:
        return current
    granularity = min(2, len(current))
    resume = 0
    empty = try_empty
    while current:
        plan = Plan(current, granularity, resume, empty=empty, one_batch=not ahead)
        winner = first_success(plan)
        if winner is None:
            if ahead:
                break
            last = plan.last()
            if last is None and len(current) == 1:
                break
            if last is not None:
                if last.granularity >= len(current):
                    break
                granularity = min(last.granularity * 2, len(current))
                resume = 0
            empty = False
            continue
        step = plan.step(winner)
        if step is None:
            return ()
        current, granularity, resume = _resumed(step)
        empty = False
    return current
