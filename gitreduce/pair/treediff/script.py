"""The edit script of a finished mapping: the subtree-level operations MinTdiff works with.

It only reads the mapping the matcher left (and the matcher's anchor chains,
so a reordered child is reported as a move consistently with recovery), after
all three matching phases are done.
"""

from __future__ import annotations

from gitreduce.pair.treediff.matcher import Matcher
from gitreduce.pair.treediff.model import (
    Deletion,
    FlatTree,
    Insertion,
    Move,
    Operation,
    Replacement,
    Span,
    Update,
)


def edit_script(matcher: Matcher) -> list[Operation]:
    """Chawathe's operations at the granularity MinTdiff works at: whole subtrees.

    One pass over the seed in pre-order, skipping isomorphic matches: each
    matched pair lays its children out as anchors and gaps, and a gap's
    unmatched nodes become deletions and insertions (a replacement when the
    gap is one node on each side).
    """
    s, v, ms, mv, clean = matcher.s, matcher.v, matcher.ms, matcher.mv, matcher.clean
    operations: list[Operation] = []
    reordered: set[int] = set()
    index = 0
    count = len(s)
    while index < count:
        b = ms[index]
        if b < 0:
            index += 1
            continue
        pa, pb = s.parents[index], v.parents[b]
        if (pa < 0) != (pb < 0) or (pa >= 0 and (ms[pa] != pb or index in reordered)):
            operations.append(Move(index, b, s.kind(index), s.span(index), v.span(b)))
        if clean[index]:
            index += s.sizes[index]
            continue
        _pair_operations(matcher, index, b, operations, reordered)
        index += 1
    if ms[0] < 0 and mv[0] < 0:
        operations.append(_replacement(matcher, 0, 0))
    elif ms[0] < 0:
        operations.append(Deletion(0, s.kind(0), s.span(0), v.starts[0], _kept(s, ms, 0)))
    elif mv[0] < 0:
        operations.append(Insertion(0, v.kind(0), v.span(0), s.starts[0], _kept(v, mv, 0)))
    return operations


def _pair_operations(
    matcher: Matcher, a: int, b: int, operations: list[Operation], reordered: set[int]
) -> None:
    s, v, ms, mv = matcher.s, matcher.v, matcher.ms, matcher.mv
    seed_children, variant_children = s.children[a], v.children[b]
    if not seed_children or not variant_children:
        if s.source(a) != v.source(b):
            operations.append(Update(a, b, s.kind(a), s.span(a), v.span(b)))
        return
    anchors = matcher.anchors(a, b)
    anchored = {seed_children[i] for i, _ in anchors}
    for child in seed_children:
        partner = ms[child]
        if partner >= 0 and v.parents[partner] == b and child not in anchored:
            reordered.add(child)
    seed_point, variant_point = s.starts[a], v.starts[b]
    previous_i = previous_j = -1
    for i, j in [*anchors, (len(seed_children), len(variant_children))]:
        gap_s = seed_children[previous_i + 1 : i]
        gap_v = variant_children[previous_j + 1 : j]
        if len(gap_s) == 1 and len(gap_v) == 1 and ms[gap_s[0]] < 0 and mv[gap_v[0]] < 0:
            operations.append(_replacement(matcher, gap_s[0], gap_v[0]))
        else:
            for x in gap_s:
                if ms[x] < 0:
                    operations.append(
                        Deletion(x, s.kind(x), s.span(x), variant_point, _kept(s, ms, x))
                    )
            for y in gap_v:
                if mv[y] < 0:
                    operations.append(
                        Insertion(y, v.kind(y), v.span(y), seed_point, _kept(v, mv, y))
                    )
        if i < len(seed_children):
            seed_point = s.ends[seed_children[i]]
            variant_point = v.ends[variant_children[j]]
        previous_i, previous_j = i, j


def _replacement(matcher: Matcher, a: int, b: int) -> Replacement:
    s, v = matcher.s, matcher.v
    return Replacement(
        a,
        b,
        s.kind(a),
        v.kind(b),
        s.span(a),
        v.span(b),
        _kept(s, matcher.ms, a),
        _kept(v, matcher.mv, b),
    )


def _kept(tree: FlatTree, partners: list[int], root: int) -> tuple[Span, ...]:
    """Spans of the outermost matched descendants of an unmatched subtree, in text order."""
    kept: list[Span] = []
    stack = list(reversed(tree.children[root]))
    while stack:
        node = stack.pop()
        if partners[node] >= 0:
            kept.append((tree.starts[node], tree.ends[node]))
            continue
        stack.extend(reversed(tree.children[node]))
    return tuple(kept)
