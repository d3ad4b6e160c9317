"""Deletions ddmin's aligned chunks miss: short unaligned token runs and bracket pairs.

ddmin removes contiguous chunks at fixed boundaries, so `( x )` losing just
its parentheses, or two adjacent tokens that straddle a chunk boundary, are
never tried. Both are cheap here: most such candidates fail the syntax check
before any test runs.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator

from gitreduce.core.current import Current, render_deletions

BRACKETS = {b"(": b")", b"[": b"]", b"{": b"}", b"<": b">"}
WINDOW_SIZES = (3, 2)


def bracket_candidates(current: Current) -> Iterator[bytes]:
    parsed = current.parsed
    assert parsed is not None
    pending = [parsed.tree.root_node]
    while pending:
        node = pending.pop()
        children = node.children
        pending.extend(reversed(children))
        if len(children) < 2:
            continue
        first, last = children[0], children[-1]
        if first.is_named or last.is_named or BRACKETS.get(first.text or b"") != last.text:
            continue
        yield render_deletions(
            parsed.text,
            [(first.start_byte, first.end_byte), (last.start_byte, last.end_byte)],
        )


def _window_candidates(current: Current, size: int, start_at: int) -> Iterator[bytes]:
    parsed = current.parsed
    assert parsed is not None
    starts, ends = parsed.token_starts, parsed.token_ends
    for first in range(start_at, len(starts) - size + 1):
        yield render_deletions(parsed.text, [(starts[first], ends[first + size - 1])])


def delete_brackets(current: Current) -> bool:
    return current.try_until_none(bracket_candidates)


def first_windows(current: Current) -> Iterator[bytes]:
    """The candidates `delete_windows` tries first."""
    return _window_candidates(current, WINDOW_SIZES[0], 0)


def delete_windows(current: Current) -> bool:
    """Every run of 3, then 2, adjacent tokens, resuming after each success where it was.

    A batch that takes nothing ends its size: what is read next is the next size's
    windows from the start, and after the last size the schedule's next pass
    (`Current.then`), the lookahead of each batch.
    """
    progress = False
    for index, size in enumerate(WINDOW_SIZES):
        position = 0

        def ahead(smaller: tuple[int, ...] = WINDOW_SIZES[index + 1 :]) -> Iterator[bytes]:
            for later in smaller:
                yield from _window_candidates(current, later, 0)
            if current.then is not None:
                yield from current.then()

        while True:
            found = current.try_candidates(_window_candidates(current, size, position), ahead)
            if found is None:
                break
            progress = True
            position += found
    return progress


# Deletions within a window of this many tokens, every subset the windows and ddmin
# above leave out: those with a gap (`a _ c`), and the whole window.
EXHAUSTIVE_WINDOW = 4
# Past this many tokens the program is not yet near a fixpoint worth enumerating around.
EXHAUSTIVE_MAX_TOKENS = 1500


def _gapped_subsets(size: int) -> list[tuple[int, ...]]:
    """Subsets of range(size) holding 0 (each window owns the subsets it starts), with
    a gap in them or spanning the whole window."""
    found = []
    for mask in range(1, 1 << size):
        chosen = tuple(i for i in range(size) if mask >> i & 1)
        if chosen[0] != 0:
            continue
        gapped = chosen[-1] - chosen[0] + 1 != len(chosen)
        if gapped or len(chosen) == size:
            found.append(chosen)
    return sorted(found, key=lambda chosen: (-len(chosen), chosen))


def _subset_deletions(current: Current, start_at: int) -> list[list[tuple[int, int]]]:
    parsed = current.parsed
    assert parsed is not None
    text, starts, ends = parsed.text, parsed.token_starts, parsed.token_ends
    return [
        [_with_space(text, starts[first + i], ends[first + i]) for i in chosen]
        for first in range(start_at, len(starts))
        for chosen in _gapped_subsets(EXHAUSTIVE_WINDOW)
        if first + chosen[-1] < len(starts)
    ]


def _with_space(text: bytes, start: int, end: int) -> tuple[int, int]:
    """A token's span with the blanks after it, when blanks also stand before it: a
    token cut from between two others leaves one space, not two."""
    if start and text[start - 1 : start] in (b" ", b"\t"):
        while end < len(text) and text[end : end + 1] in (b" ", b"\t"):
            end += 1
    return start, end


def small_enough(current: Current) -> bool:
    return current.parsed is not None and current.tokens <= EXHAUSTIVE_MAX_TOKENS


def first_window_subsets(current: Current) -> Iterator[bytes]:
    """The candidates `delete_window_subsets` tries first."""
    return _rendered_subsets(current, _subset_deletions(current, 0))


def _rendered_subsets(current: Current, deletions: list[list[tuple[int, int]]]) -> Iterator[bytes]:
    text = current.text
    return (render_deletions(text, spans) for spans in deletions)


def delete_window_subsets(current: Current) -> bool:
    """Local exhaustive search (Vulcan): every gapped subset of every window of
    `EXHAUSTIVE_WINDOW` tokens deleted, resuming after each success where it was.

    Such deletions (`const int * p` losing `const` and `*` together) are beyond
    runs of adjacent tokens; most fail the syntax check before any test runs.
    """
    position = 0
    progress = False
    while True:
        deletions = _subset_deletions(current, position)
        found = current.try_candidates(_rendered_subsets(current, deletions), current.then)
        if found is None:
            return progress
        progress = True
        position = _token_at(current, deletions[found][0][0])


def _token_at(current: Current, byte: int) -> int:
    """Index of the first token of the current text at or after `byte`."""
    parsed = current.parsed
    assert parsed is not None
    return bisect.bisect_left(parsed.token_starts, byte)
