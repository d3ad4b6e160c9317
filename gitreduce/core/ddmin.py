"""Minimising delta debugging over abstract units, written against a batch oracle.

The algorithm only decides *which* subsets to try next; `first_success` tries an
ordered batch of candidates and says which is the first interesting one. That
keeps ddmin free of I/O and lets the engine evaluate a batch in parallel while
the outcome stays what a sequential run would give (the first success in order
wins, whatever finishes first).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

Subset = tuple[int, ...]
FirstSuccess = Callable[[Sequence[Subset]], int | None]


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
        if first_success([()]) == 0:
            return ()
        if len(current) == 1:
            return current
    granularity = min(2, len(current))
    resume = 0
    while current:
        chunks = _chunks(current, granularity)
        order = chunks[resume:] + chunks[:resume]
        complements = []
        for chunk in order:
            removed = set(chunk)
            complements.append(tuple(unit for unit in current if unit not in removed))
        winner = first_success(complements)
        if winner is not None:
            resume = (resume + winner) % len(chunks)
            current = complements[winner]
            granularity = max(granularity - 1, 2)
            granularity = min(granularity, len(current)) if current else granularity
            resume = min(resume, max(granularity - 1, 0))
            continue
        if granularity >= len(current):
            break
        granularity = min(granularity * 2, len(current))
        resume = 0
    return current
