"""A candidate's token spans from its parent's, re-reading only where the parse changed.

Job: given the parent's token spans (`syntax.leaf_spans`), the splices that
made the candidate, the parent's tree edited by them and the candidate's tree
re-parsed from it, give the spans `leaf_spans` would read from the whole new
tree, walking the new tree only around the changes.

Why: every text a reduction takes becomes the new current text, and its token
spans were read from its whole tree: 2-4 ms on 8,600 JavaScript tokens, 8 ms
on 23,000 C tokens, on the main thread between one test and the next (see
docs/algorithms.md, "Token spans moved past a change"). Around a deletion of
a few nodes, all but a few dozen tokens are the parent's, shifted.

How: outside the splices and the ranges tree-sitter reports as changed
(`Tree.changed_ranges`: outside them every byte has the same ancestors in
both trees), the two texts are the same bytes under the same nodes, so the
same leaves, shifted. Each such region is widened until no leaf of either
tree crosses its edge (a deletion that joins `a` and `b` into `ab` leaves a
new leaf across the point where it deleted: the region takes it in whole,
and the old `a` and `b` with it); inside, the new tree's leaves are read.
Leaves that only touch a region stay out, but for one first widening
(see `respanned`): on C with no white space between tokens (Csmith's
initializers), taking them in every time spread one region over whole lines,
slower than a walk of the whole tree. A region's edges are moved from
one text to the other through the splices (`_mapped`), never by
the region's own shift: widened past a splice that changed the length, that
shift is no longer the one at the edge. Many splices, or overlapping ones,
give None, and the caller reads the whole tree.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Collection, Sequence

import tree_sitter

Spans = tuple[list[int], list[int]]
"""The start and the end byte of each token, in two lists."""

# Past this many splices a walk of the whole tree costs less than the regions': with
# statements deleted from 8,600 JavaScript tokens, 2.0 against 2.7 ms at 32 splices, 3.4
# against 2.6 ms at 64 (23,000 C tokens: 4.4 against 7.9 ms at 32).
MAX_SPLICES = 32

# A region of the change: [old_start, old_end) in the parent, [new_start, new_end) in the
# candidate; a leaf is in one if it overlaps it (an empty region at p: a leaf across p)
_Region = tuple[int, int, int, int]


def respanned(
    parent: Spans,
    splices: Sequence[tuple[int, int, bytes]],
    edited: tree_sitter.Tree,
    tree: tree_sitter.Tree,
    comments: Collection[int],
) -> Spans | None:
    """The token spans of `tree`, parsed from `edited` (the parent's tree told of
    `splices`, in the parent's offsets), from the parent's spans; None when they are
    better read from the whole tree. `comments`: the kinds that are no token."""
    if not splices or len(splices) > MAX_SPLICES:
        return None
    regions = _splice_regions(splices)
    if regions is None:
        return None
    moves = list(regions)  # where the two texts' offsets do not just shift
    for changed in edited.changed_ranges(tree):
        start, end = changed.start_byte, changed.end_byte
        regions.append(
            (
                _mapped(moves, start, True, into_old=True),
                _mapped(moves, end, False, into_old=True),
                start,
                end,
            )
        )
    # once, the leaves that touch a region: a node whose children a change took away is
    # a leaf now, its own bytes a token though they did not change (`10px` less its
    # unit `px` in CSS: `10`), and one that gains a first child at its edge is none any
    # more; either lies next to the change, or next to bytes whose ancestors changed (a
    # space that was inside the node). Every time, they would spread a region over code
    # written with no white space.
    regions = [_widened(region, parent, moves, tree, comments, 1)[0] for region in regions]
    while True:
        regions = _merged(regions)
        widened = [_widened(region, parent, moves, tree, comments, 0) for region in regions]
        if [region for region, _ in widened] == regions:
            return _assembled(parent, widened)
        regions = [region for region, _ in widened]


def _widened(
    region: _Region,
    parent: Spans,
    moves: list[_Region],
    tree: tree_sitter.Tree,
    comments: Collection[int],
    reach: int,
) -> tuple[_Region, list[tuple[int, int]]]:
    """`region` widened to the leaves of the parent's tokens and of `tree` that overlap
    it, or come within `reach` bytes of it (1: that touch it), and the leaves of `tree`
    it was widened by."""
    starts, ends = parent
    old_start, old_end, new_start, new_end = region
    first = bisect_right(ends, old_start - reach)  # the first leaf ending after its start
    last = bisect_left(starts, old_end + reach)  # past the last one starting before its end
    if first < last:
        old_start, old_end = min(old_start, starts[first]), max(old_end, ends[last - 1])
        new_start = min(new_start, _mapped(moves, old_start, True, into_old=False))
        new_end = max(new_end, _mapped(moves, old_end, False, into_old=False))
    leaves = _leaves_across(tree, max(0, new_start - reach), new_end + reach, comments)
    if leaves:
        new_start, new_end = min(new_start, leaves[0][0]), max(new_end, leaves[-1][1])
        old_start = min(old_start, _mapped(moves, new_start, True, into_old=True))
        old_end = max(old_end, _mapped(moves, new_end, False, into_old=True))
    return (old_start, old_end, new_start, new_end), leaves


def _splice_regions(splices: Sequence[tuple[int, int, bytes]]) -> list[_Region] | None:
    """Each splice as a region: what it replaced, and where its replacement lies."""
    regions: list[_Region] = []
    shift = 0
    previous_end = -1
    for start, end, replacement in sorted(splices):
        if start < previous_end:
            return None  # overlapping splices: not an edit tree-sitter was told of
        regions.append((start, end, start + shift, start + shift + len(replacement)))
        shift += len(replacement) - (end - start)
        previous_end = end
    return regions


def _mapped(moves: list[_Region], offset: int, at_start: bool, *, into_old: bool) -> int:
    """The other text's offset of `offset`, a region's start or end (`into_old`: the
    candidate's, taken to the parent's; else the other way): past the splices before
    it, shifted by what they changed in length; inside one, the splice's own start or
    end (the region then takes the splice in)."""
    shift = 0
    for old_start, old_end, new_start, new_end in moves:
        start, end, other_start, other_end = (
            (new_start, new_end, old_start, old_end)
            if into_old
            else (old_start, old_end, new_start, new_end)
        )
        if offset < start or (offset == start and not at_start):
            break
        if offset < end or (offset == end and not at_start):
            return other_start if at_start else other_end
        shift = other_end - end
    return offset + shift


def _merged(regions: list[_Region]) -> list[_Region]:
    """The regions in order, those that overlap or meet (in either text) made one."""
    merged: list[_Region] = []
    for region in sorted(regions):
        if merged and (region[0] <= merged[-1][1] or region[2] <= merged[-1][3]):
            last = merged[-1]
            merged[-1] = (
                min(last[0], region[0]),
                max(last[1], region[1]),
                min(last[2], region[2]),
                max(last[3], region[3]),
            )
        else:
            merged.append(region)
    return merged


def _assembled(parent: Spans, regions: list[tuple[_Region, list[tuple[int, int]]]]) -> Spans:
    """The parent's leaves between the regions, shifted, and the new tree's inside them
    (`regions`: each with those leaves)."""
    starts, ends = parent
    new_starts: list[int] = []
    new_ends: list[int] = []
    kept = 0  # the next parent leaf not yet placed
    shift = 0  # how far the parent's leaves from `kept` on have moved
    for (old_start, old_end, _, new_end), leaves in regions:
        before = bisect_right(ends, old_start)  # leaves ending where the region starts, or before
        _shifted_onto(new_starts, starts[kept:before], shift)
        _shifted_onto(new_ends, ends[kept:before], shift)
        new_starts.extend(start for start, _ in leaves)
        new_ends.extend(end for _, end in leaves)
        kept = bisect_left(starts, old_end)
        shift = new_end - old_end
    _shifted_onto(new_starts, starts[kept:], shift)
    _shifted_onto(new_ends, ends[kept:], shift)
    return new_starts, new_ends


def _shifted_onto(out: list[int], offsets: list[int], shift: int) -> None:
    """`offsets` moved by `shift`, appended to `out`: most are after the last change, where a
    list comprehension costs a third less than a generator (0.5 ms for 23,000)."""
    out.extend([offset + shift for offset in offsets] if shift else offsets)


def _leaves_across(
    tree: tree_sitter.Tree, start: int, end: int, comments: Collection[int]
) -> list[tuple[int, int]]:
    """The token leaves of `tree` that overlap [start, end) (start == end: that lie
    across it), in order: the subtrees wholly before it skipped by byte, the walk ended
    past it."""
    leaves: list[tuple[int, int]] = []
    cursor = tree.walk()
    root = cursor.node
    assert root is not None
    if root.end_byte <= start or root.start_byte >= end:
        return leaves
    while True:
        node = cursor.node
        assert node is not None
        if node.child_count == 0:
            if node.end_byte > max(node.start_byte, start) and node.kind_id not in comments:
                leaves.append((node.start_byte, node.end_byte))
        elif _first_child_after(cursor, start):
            child = cursor.node
            assert child is not None
            if child.start_byte >= end:
                return leaves  # what follows in text order starts later still
            continue
        while True:  # on to the next node in text order: it ends after `start`
            if cursor.goto_next_sibling():
                sibling = cursor.node
                assert sibling is not None
                if sibling.start_byte >= end:
                    return leaves
                break
            if not cursor.goto_parent():
                return leaves


def _first_child_after(cursor: tree_sitter.TreeCursor, offset: int) -> bool:
    """Move `cursor` to the first child of its node that ends after `offset`; False, the
    cursor unmoved, if none does.

    The cursor's own search by byte answers most of these at once, but not all:
    for a byte between two children where the grammar puts a hidden token (bash's
    newlines between commands) it finds nothing, though a later child ends past
    the byte. So its answer is checked (the child before it ends at or before the
    byte), and where it is missing or wrong the children are walked from the
    first."""
    if cursor.goto_first_child_for_byte(offset) is not None:
        node = cursor.node
        assert node is not None
        if node.end_byte > offset:
            if not cursor.goto_previous_sibling():
                return True
            before = cursor.node
            assert before is not None
            cursor.goto_next_sibling()
            if before.end_byte <= offset:
                return True
        cursor.goto_parent()
    if not cursor.goto_first_child():
        return False
    while True:
        node = cursor.node
        assert node is not None
        if node.end_byte > offset:
            return True
        if not cursor.goto_next_sibling():
            cursor.goto_parent()
            return False
