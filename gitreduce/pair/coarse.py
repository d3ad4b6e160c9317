"""Coarse commonality: code both programs hold identically, removed from both at once,
biggest first, before PPR looks at the difference.

PPR's order (its RQ4) reduces the difference first, while both programs are
still at full size: every test of MinTdiff and MinLdiff runs on the whole
programs, and the syntax gate parses them whole for every candidate. This
pass runs before them in the first round and is Perses' deletion sweep
restricted to what both programs share, at the granularity of whole
declarations and statements:

- A unit is a whole top-level declaration (with a `;` that follows it), or a
  statement-like child (`kinds.STATEMENT_LIKE`) of a block or of a struct,
  class or namespace body (`kinds.STATEMENT_LISTS`) further down, whose
  tokens all lie in one common run of the alignment. The variant then holds
  the very same tokens in one piece (no token of the difference inside), so a
  deletion takes the same tokens from both programs and leaves every token of
  the difference, and so MinTdiff's and MinLdiff's later choices, alone.
- Nodes are worked on biggest first (a max-heap by tokens): ddmin over the
  units among a node's children, then the surviving children's insides.
- Deletions only: hoisting, stock phrases, names, tokens stay
  MinCommonality's, which runs on programs this pass already made small.

The seed is parsed once, at the start: units are groups of the alignment's
token indices, which no deletion shifts, and every node the heap holds is
disjoint from the node being worked on, so its tokens are the same when it
comes up. Every candidate still passes the syntax gate on both programs
before any test.
"""

from __future__ import annotations

import heapq
from bisect import bisect_right
from dataclasses import dataclass, field

import tree_sitter

from gitreduce.lang.kinds import STATEMENT_LIKE, STATEMENT_LISTS
from gitreduce.pair.alignment import Alignment
from gitreduce.pair.current import PairCurrent, measure
from gitreduce.pair.state import PairState, Runs
from gitreduce.pair.token_tree import TokenTree, seed_tree


def _remove_seed(state: PairState, indices: list[int]) -> PairState:
    return state.without_seed_tokens(indices)


def _common_runs(alignment: Alignment) -> list[int]:
    """Per seed token, the number of the common run holding it; -1 for changed tokens."""
    run_of = [-1] * len(alignment.seed)
    for number, equal in enumerate(alignment.equals):
        run_of[equal.seed_start : equal.seed_end] = [number] * (equal.seed_end - equal.seed_start)
    return run_of


def _kept(kept: Runs, index: int) -> bool:
    return bisect_right(kept, index) % 2 == 1


@dataclass(order=True)
class _Pending:
    priority: tuple[int, int]  # (-tokens, start byte): biggest first, then in text order
    node: tree_sitter.Node = field(compare=False)


class _Levels:
    """The seed's tree as levels of units: which children of a node may go whole."""

    def __init__(self, tree: TokenTree, alignment: Alignment) -> None:
        self.tree = tree
        self._run_of = _common_runs(alignment)

    def tokens(self, node: tree_sitter.Node) -> list[int | None]:
        first, last = self.tree.span(node)
        return self.tree.originals[first:last]

    def shared(self, originals: list[int | None]) -> list[int] | None:
        """The token indices, when both programs hold them identically and in one piece."""
        if not originals or None in originals:
            return None
        first, last = originals[0], originals[-1]
        assert first is not None and last is not None
        run = self._run_of[first]
        if run < 0 or self._run_of[last] != run:
            return None
        return [index for index in originals if index is not None]

    def units(self, node: tree_sitter.Node) -> list[list[int]]:
        """Token groups of the children of `node` that may go whole.

        At the root every declaration qualifies; below it, the statement-like
        children of a block or a body only, so no test is spent on an operand,
        a parameter or a block's value. A `;` right after a child goes with it
        (`struct s {...};` at the top level).
        """
        root = node.parent is None
        if not root and not node.type.endswith(STATEMENT_LISTS):
            return []
        children = node.children
        units: list[list[int]] = []
        for at, child in enumerate(children):
            if not child.is_named or "comment" in child.type:
                continue
            if not root and not child.type.endswith(STATEMENT_LIKE):
                continue
            originals = self.tokens(child)
            following = children[at + 1] if at + 1 < len(children) else None
            if following is not None and not following.is_named and following.text == b";":
                originals += self.tokens(following)
            group = self.shared(originals)
            if group is not None:
                units.append(group)
        return units


def coarse_commonality(current: PairCurrent) -> bool:
    """One biggest-first sweep of ddmin over whole shared declarations and statements."""
    syntax = current.syntax
    if syntax is None:
        return False
    before = measure(current.state)
    levels = _Levels(seed_tree(syntax, current.state), current.state.alignment)
    root = levels.tree.tree.root_node
    heap = [_Pending((0, 0), root)]
    while heap:
        node = heapq.heappop(heap).node
        units = levels.units(node)
        current.ddmin_deletions(units, _remove_seed)
        kept = current.state.seed_kept
        for child in node.named_children:
            originals = [index for index in levels.tokens(child) if index is not None]
            # a child is either a unit, kept or gone whole, or untouched by this node's ddmin
            if len(originals) >= 2 and _kept(kept, originals[0]):
                heapq.heappush(heap, _Pending((-len(originals), child.start_byte), child))
    return measure(current.state) < before
