"""Deletions ddmin's aligned chunks miss: short unaligned token runs and bracket pairs.

ddmin removes contiguous chunks at fixed boundaries, so `( x )` losing just
its parentheses, or two adjacent tokens that straddle a chunk boundary, are
never tried. Both are cheap here: most such candidates fail the syntax check
before any test runs.
"""

from __future__ import annotations

from collections.abc import Iterator

from gitreduce.core.current import Current, render_deletions

BRACKETS = {b"(": b")", b"[": b"]", b"{": b"}", b"<": b">"}
WINDOW_SIZES = (3, 2)


def _bracket_candidates(current: Current) -> Iterator[bytes]:
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
    return current.try_until_none(_bracket_candidates)


def delete_windows(current: Current) -> bool:
    """Every run of 3, then 2, adjacent tokens, resuming after each success where it was."""
    progress = False
    for size in WINDOW_SIZES:
        position = 0
        while True:
            found = current.try_candidates(_window_candidates(current, size, position))
            if found is None:
                break
            progress = True
            position += found
    return progress
