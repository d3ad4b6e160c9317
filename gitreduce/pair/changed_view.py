"""One program of a pair as a `Current` whose candidates may touch only its changed tokens.

MinTdiff (PPR, Algorithm 2) reduces the subtrees only one program has with
MinSubtree, Perses started at that subtree: hoisting a descendant (or a
compatible phrase) into its place as well as deleting its children. Deleting
whole subtrees and single tokens cannot turn `x // (len(s) - len(s))` into
`x // len(s)`; hoisting can. Here the tree reducer of single programs runs on
one side, started at that side's own subtrees, and any candidate whose edits
reach a token both programs share is refused untested, so the other program
never changes and the difference can only shrink.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from itertools import accumulate

import tree_sitter

from gitreduce.core import edits
from gitreduce.pair.alignment import SEED, Alignment
from gitreduce.pair.current import (
    Measure,
    PairCandidate,
    PairCurrent,
    PairJudge,
    SideCurrent,
)
from gitreduce.pair.tokens import tokenize
from gitreduce.passes.catalog import Catalog
from gitreduce.passes.tree import TreeReducer

REMEMBERED_BASES = 64


class _Side:
    """Which tokens of one side's text belong to the difference, with prefix counts."""

    def __init__(self, alignment: Alignment, side: int) -> None:
        self.alignment = alignment
        tokens = alignment.seed if side == SEED else alignment.variant
        hunk = alignment.seed_hunk if side == SEED else alignment.variant_hunk
        self.tokens = tokens
        self.own_before = [0, *accumulate(1 if h >= 0 else 0 for h in hunk)]

    def own_in(self, first: int, last: int) -> int:
        return self.own_before[last] - self.own_before[first]

    def span(self, start: int, end: int) -> tuple[int, int]:
        """Token positions [first, last) of the tokens overlapping bytes [start, end)."""
        return bisect_right(self.tokens.ends, start), bisect_left(self.tokens.starts, end)

    def removed(self, change: edits.Edit) -> int | None:
        """How many tokens `change` removes, all of them changed ones; None if it reaches
        a shared token or cuts one in two."""
        first, last = self.span(change.start, change.end)
        if self.own_in(first, last) != last - first:
            return None
        tokens = self.tokens
        if first < last and (
            tokens.starts[first] < change.start or tokens.ends[last - 1] > change.end
        ):
            return None
        return last - first


class ChangedCurrent(SideCurrent):
    """The `side` program of the pair; an accepted candidate replaces the pair."""

    def __init__(self, pair: PairCurrent, side: int) -> None:
        self._sides: dict[bytes, _Side] = {}
        super().__init__(pair, side)

    def _adopt(self, alignment: Alignment) -> None:
        own = _Side(alignment, self.side)
        self._sides[own.tokens.text] = own
        while len(self._sides) > REMEMBERED_BASES:
            del self._sides[next(iter(self._sides))]
        self.other = (alignment.variant if self.side == SEED else alignment.seed).text
        self.diff = alignment.diff_size
        self._own = own

    def _measure(self, text: bytes, diff: int) -> Measure:
        return diff, len(text) + len(self.other)

    def _pair(self, candidate: bytes) -> PairCandidate:
        if not isinstance(candidate, edits.Rendered):
            return PairCandidate(b"", b"", None)
        own = self._sides.get(candidate.base)
        if own is None:
            return PairCandidate(b"", b"", None)
        diff = own.alignment.diff_size
        for change in candidate.edits:
            removed = own.removed(change)
            if removed is None:
                return PairCandidate(b"", b"", None)
            diff -= removed
            if change.replacement:
                diff += len(tokenize(change.replacement, self.grammar))
        measured = self._measure(candidate, diff)
        if self.side == SEED:
            return PairCandidate(candidate, self.other, measured)
        return PairCandidate(self.other, candidate, measured)

    def own_subtrees(self) -> list[tree_sitter.Node]:
        """The largest subtrees of two or more tokens that only this side has."""
        parsed = self.parsed
        if parsed is None:
            return []
        own = self._own
        found: list[tree_sitter.Node] = []
        pending = [parsed.tree.root_node]
        while pending:
            node = pending.pop()
            first, last = own.span(node.start_byte, node.end_byte)
            inside = own.own_in(first, last)
            if inside == 0:
                continue
            if inside == last - first:
                if inside >= 2:
                    found.append(node)
            else:
                pending.extend(node.named_children)
        return found

    def _judge(self) -> PairJudge:
        return self.pair.judge(self._measure(self.text, self.diff))


def reduce_changed_subtrees(pair: PairCurrent, side: int) -> bool:
    """MinSubtree on every subtree only `side` has, until a sweep over them finds nothing."""
    if pair.syntax is None:
        return False
    current = ChangedCurrent(pair, side)
    if current.parsed is None:
        return False
    catalog = Catalog(pair.syntax.grammar)
    catalog.learn(current.parsed)
    progress = False
    while True:
        roots = current.own_subtrees()
        if not roots or not TreeReducer(current, catalog).sweep(roots):
            return progress
        progress = True
