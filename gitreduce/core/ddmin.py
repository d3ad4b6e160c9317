"""Minimising delta debugging over abstract units, written against a batch oracle.

The algorithm only decides *which* subsets to try next; `first_success` tries an
ordered batch of candidates and says which is the first interesting one. That
keeps ddmin free of I/O and lets the engine evaluate a batch in parallel while
the outcome stays what a sequential run would give (the first success in order
wins, whatever finishes first).

Each batch also says what ddmin would try next if a given subset of it won
(`Batch.after`): an engine with idle workers can test that batch early, while
the winner is still being tested (docs/algorithms.md, "Speculation").
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

Subset = tuple[int, ...]
FirstSuccess = Callable[[Sequence[Subset]], int | None]


class Batch(tuple[Subset, ...]):
    """A batch of subsets to try in order, and `after(i)`: the batch ddmin tries next
    when subset `i` is the first interesting one (empty when nothing would follow)."""

    after: Callable[[int], Sequence[Subset]]

    def __new__(cls, subsets: Sequence[Subset], after: Callable[[int], Sequence[Subset]]) -> Batch:
        batch = super().__new__(cls, subsets)
        batch.after = after
        return batch


def _no_batch(_: int) -> Sequence[Subset]:
    return ()


def _chunks(units: Subset, count: int) -> list[Subset]:
    size, extra = divmod(len(units), count)
    chunks, start = [], 0
    for index in range(count):
        stop = start + size + (1 if index < extra else 0)
        chunks.append(units[start:stop])
        start = stop
    return [chunk for chunk in chunks if chunk]


def ddmin(units: Subset, first_success: FirstSuccess, *, try_empty: bool = True) -> Subset:
    """A 1-minimal subset of `units` that stays interesting (the full set is assumed to be).

    Complements are tried before subsets (they remove more when most units are
    needed, which is typical deep in a tree); after a removal the search resumes
    at the chunk that succeeded instead of restarting from the front, which
    saves re-testing chunks that just failed. `try_empty` first tries removing
    every unit at once, a single cheap test that often empties dead lists.
    """
    current = tuple(units)
    if not current:
        return current
    if try_empty:
        if first_success(Batch([()], _no_batch)) == 0:
            return ()
        if len(current) == 1:
            return current
    granularity = min(2, len(current))
    resume = 0
    while current:
        complements = _complements(current, granularity, resume)
        state = (granularity, resume, complements)

        def after(winner: int, state: tuple[int, int, list[Subset]] = state) -> Sequence[Subset]:
            won = _after_win(*state, winner)
            return _complements(*won) if won[0] else ()

        winner = first_success(Batch(complements, after))
        if winner is not None:
            current, granularity, resume = _after_win(*state, winner)
            continue
        if granularity >= len(current):
            break
        granularity = min(granularity * 2, len(current))
        resume = 0
    return current


def _complements(current: Subset, granularity: int, resume: int) -> list[Subset]:
    """What removing each chunk leaves, starting at chunk `resume` and wrapping around."""
    chunks = _chunks(current, granularity)
    complements = []
    for chunk in chunks[resume:] + chunks[:resume]:
        removed = set(chunk)
        complements.append(tuple(unit for unit in current if unit not in removed))
    return complements


def _after_win(
    granularity: int, resume: int, complements: list[Subset], winner: int
) -> tuple[Subset, int, int]:
    """The state after `complements[winner]` (of `_complements(current, granularity, resume)`,
    one per chunk) stayed interesting: coarser by one, resuming at the chunk that went."""
    kept = complements[winner]
    resume = (resume + winner) % len(complements)
    granularity = max(granularity - 1, 2)
    granularity = min(granularity, len(kept)) if kept else granularity
    return kept, granularity, min(resume, max(granularity - 1, 0))
