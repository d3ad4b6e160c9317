"""Pairwise program reduction (PPR, FSE'23, Algorithms 1-4) on a `PairState`.

The pair is one token alignment of seed and variant plus what survives of it
(see `pair.py`), so every reducer is a choice of token deletions or hunk
subsets, and every candidate renders to a seed and a variant that are judged
together: the seed must stay good (psi_s) and the variant bad the same way
(psi_v). The loop runs MinTdiff, MinLdiff and MinCommonality in that order to
a fixpoint: differences before commonality, tree differences before list
differences, as the paper's RQ4 found best.

Nodes are addressed by the original seed token indices they cover, which no
deletion ever shifts, so pending work survives every accepted candidate.
"""

from __future__ import annotations

import difflib
import heapq
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

import tree_sitter

from gitreduce.ddmin import Subset, ddmin
from gitreduce.engine import Engine, Precheck
from gitreduce.outcome import Outcome
from gitreduce.pair import SEED, VARIANT, PairState
from gitreduce.syntax import Syntax, leaves
from gitreduce.tree_passes import HOIST_CANDIDATES, HOIST_DEPTH, Catalog

Measure = tuple[int, int]
# Token-level ddmin over the common part costs about one test per token once the
# tree passes are done; on a pair still thousands of tokens large (measured:
# 7,700 tests on gxx12 without progress) it is left for a later round.
TOKEN_PASS_LIMIT = 400


def measure(state: PairState) -> Measure:
    """Progress order: a smaller difference first, then smaller programs."""
    return state.diff_tokens(), state.seed_tokens() + state.variant_tokens()


@dataclass(frozen=True)
class PairCandidate:
    state: PairState
    seed: bytes
    variant: bytes


def render(state: PairState) -> PairCandidate:
    return PairCandidate(state, state.seed_text(), state.variant_text())


class PairJudge:
    """Both programs keep their property; the variant (the rarer one) is tested first."""

    def __init__(
        self,
        engine: Engine,
        seed_ok: Callable[[Outcome], bool],
        variant_ok: Callable[[Outcome], bool],
        precheck: Precheck | None,
        limit: Measure,
    ) -> None:
        self._engine = engine
        self._seed_ok = seed_ok
        self._variant_ok = variant_ok
        self._precheck = precheck
        self._limit = limit

    def quick(self, candidate: PairCandidate) -> bool | None:
        engine = self._engine
        if measure(candidate.state) >= self._limit:
            engine.stats.not_smaller += 1
            return False
        variant = engine.recall(candidate.variant)
        if variant is not None and not self._variant_ok(variant):
            return False
        seed = engine.recall(candidate.seed)
        if seed is not None and not self._seed_ok(seed):
            return False
        if variant is not None and seed is not None:
            return True
        if not engine.parses(candidate.variant, self._precheck):
            return False
        if not engine.parses(candidate.seed, self._precheck):
            return False
        return None

    def full(self, candidate: PairCandidate) -> bool:
        engine = self._engine
        return self._variant_ok(engine.outcome(candidate.variant)) and self._seed_ok(
            engine.outcome(candidate.seed)
        )


class PairCurrent:
    """The best pair so far; only the engine's answers change it."""

    def __init__(
        self,
        state: PairState,
        engine: Engine,
        syntax: Syntax | None,
        seed_ok: Callable[[Outcome], bool],
        variant_ok: Callable[[Outcome], bool],
        on_change: Callable[[PairCurrent], None] | None = None,
    ) -> None:
        self.state = state
        self.engine = engine
        self.syntax = syntax
        self._seed_ok = seed_ok
        self._variant_ok = variant_ok
        self._on_change = on_change

    def try_states(self, states: Iterable[PairState]) -> int | None:
        """Index of the first state whose pair keeps both properties; it becomes current."""
        precheck = self.syntax.acceptable if self.syntax else None
        judge = PairJudge(
            self.engine, self._seed_ok, self._variant_ok, precheck, measure(self.state)
        )
        found = self.engine.first_judged((render(state) for state in states), judge)
        if found is None:
            return None
        self.state = found[1].state
        if self._on_change is not None:
            self._on_change(self)
        return found[0]

    def ddmin_deletions(
        self,
        units: Sequence[Sequence[int]],
        derive: Callable[[PairState, list[int]], PairState],
        *,
        try_empty: bool = True,
    ) -> bool:
        """ddmin over units of token indices, each candidate derived from the state at start."""
        if not units:
            return False
        base = self.state

        def first_success(subsets: Sequence[Subset]) -> int | None:
            def states() -> Iterator[PairState]:
                for subset in subsets:
                    keep = set(subset)
                    removed = [i for u, unit in enumerate(units) if u not in keep for i in unit]
                    yield derive(base, removed)

            return self.try_states(states())

        before = measure(base)
        ddmin(tuple(range(len(units))), first_success, try_empty=try_empty)
        return measure(self.state) < before


def _remove_seed(state: PairState, indices: list[int]) -> PairState:
    return state.without_seed_tokens(indices)


def _remove_variant(state: PairState, indices: list[int]) -> PairState:
    return state.without_variant_tokens(indices)


class _Tree:
    """A parse of one side's current text, its leaves tied to original token indices.

    A leaf the state does not know (re-lexing after a deletion can split or
    merge tokens) maps to None and is left alone.
    """

    def __init__(self, tree: tree_sitter.Tree, originals: list[int | None]) -> None:
        self.tree = tree
        self.originals = originals
        tokens = leaves(tree)
        self.starts = [leaf.start_byte for leaf in tokens]
        self.position_of = {
            original: at for at, original in enumerate(originals) if original is not None
        }

    def span(self, node: tree_sitter.Node) -> tuple[int, int]:
        """The leaf positions [first, last) that `node` covers."""
        return bisect_left(self.starts, node.start_byte), bisect_left(self.starts, node.end_byte)

    def indices(self, node: tree_sitter.Node) -> list[int]:
        first, last = self.span(node)
        return [original for original in self.originals[first:last] if original is not None]


def _parse(
    syntax: Syntax, text: bytes, originals: list[int], texts: Callable[[], list[bytes]]
) -> _Tree:
    """The tree of `text`, its leaves matched to the state's tokens (`originals`, whose
    texts `texts` gives): one to one when the counts agree, else by sequence alignment."""
    parsed = syntax.parse(text)
    if parsed.tokens == len(originals):
        return _Tree(parsed.tree, list(originals))
    leaf_texts = [text[a:b] for a, b in zip(parsed.token_starts, parsed.token_ends, strict=True)]
    mapped: list[int | None] = [None] * len(leaf_texts)
    matcher = difflib.SequenceMatcher(None, leaf_texts, texts(), autojunk=False)
    for block in matcher.get_matching_blocks():
        for offset in range(block.size):
            mapped[block.a + offset] = originals[block.b + offset]
    return _Tree(parsed.tree, mapped)


def _seed_tree(syntax: Syntax, state: PairState) -> _Tree:
    return _parse(syntax, state.seed_text(), state.seed_kept_indices(), state.seed_token_texts)


def _maximal_subtrees(tree: _Tree, wanted: Callable[[int], bool]) -> list[list[int]]:
    """Token-index groups of the largest subtrees all of whose tokens are `wanted`."""
    groups: list[list[int]] = []
    pending = [tree.tree.root_node]
    while pending:
        node = pending.pop()
        indices = tree.indices(node)
        if not indices:
            continue
        if all(wanted(i) for i in indices):
            groups.append(indices)
        elif node.child_count:
            pending.extend(reversed(node.children))
    groups.sort(key=lambda group: group[0])
    return groups


def min_tdiff(current: PairCurrent) -> bool:
    """Algorithm 2: shrink the subtrees the seed alone has (under both properties), then
    the subtrees the variant alone has. Undoing a replacement is MinLdiff's business."""
    syntax = current.syntax
    progress = False
    alignment = current.state.alignment
    if syntax is not None:
        tree = _seed_tree(syntax, current.state)
        units = _maximal_subtrees(tree, lambda i: alignment.seed_hunk[i] >= 0)
        progress |= current.ddmin_deletions(units, _remove_seed)
        order = current.state.variant_order()
        variant_originals = [index if side == VARIANT else -1 - index for side, index in order]
        tree = _parse(
            syntax,
            current.state.variant_text(),
            variant_originals,
            current.state.variant_token_texts,
        )
        units = _maximal_subtrees(tree, lambda i: i >= 0 and alignment.variant_hunk[i] >= 0)
        progress |= current.ddmin_deletions(units, _remove_variant)
    # Inside the surviving subtrees, token by token (the syntax check keeps it cheap).
    seed_only = [[i] for i in current.state.seed_kept_indices() if alignment.seed_hunk[i] >= 0]
    progress |= current.ddmin_deletions(seed_only, _remove_seed, try_empty=False)
    variant_only = [
        [index]
        for side, index in current.state.variant_order()
        if side == VARIANT and alignment.variant_hunk[index] >= 0
    ]
    progress |= current.ddmin_deletions(variant_only, _remove_variant, try_empty=False)
    return progress


def min_ldiff(current: PairCurrent) -> bool:
    """Algorithm 3: ddmin over the applied hunks; the variant is the seed plus a subset."""
    live = set(current.state.live_hunks())
    applied = sorted(live & current.state.applied)
    if not applied:
        return False
    base = current.state
    before = measure(base)

    def first_success(subsets: Sequence[Subset]) -> int | None:
        return current.try_states(
            base.with_hunks({applied[i] for i in subset} | (base.applied - live))
            for subset in subsets
        )

    ddmin(tuple(range(len(applied))), first_success, try_empty=False)
    return measure(current.state) < before


@dataclass(order=True)
class _Pending:
    priority: tuple[int, int]
    first: int
    last: int
    kind: str


def min_commonality(current: PairCurrent) -> bool:
    """Algorithm 4: syntax-guided reduction of the seed, each candidate's variant patched.

    Perses on the seed tree: biggest nodes first, hoisting (deleting a node's
    tokens outside a compatible descendant), then ddmin over its children;
    the same tokens go from the variant wherever they are common. Ends with a
    token-level ddmin over all seed tokens.
    """
    syntax = current.syntax
    before = measure(current.state)
    if syntax is not None:
        _tree_commonality(current, syntax)
    units = [[i] for i in current.state.seed_kept_indices()]
    if syntax is None or len(units) <= TOKEN_PASS_LIMIT:
        current.ddmin_deletions(units, _remove_seed, try_empty=False)
    return measure(current.state) < before


def _tree_commonality(current: PairCurrent, syntax: Syntax) -> None:
    tree = _seed_tree(syntax, current.state)
    heap: list[_Pending] = []

    def push(node: tree_sitter.Node, on: _Tree) -> None:
        indices = on.indices(node)
        if len(indices) >= 2:
            entry = _Pending((-len(indices), indices[0]), indices[0], indices[-1], node.type)
            heapq.heappush(heap, entry)

    catalog = Catalog(syntax.grammar)  # for kind compatibility only: no stock phrases here
    catalog.learn(syntax.parse(current.state.seed_text()))
    parsed_state = current.state
    push(tree.tree.root_node, tree)
    while heap:
        entry = heapq.heappop(heap)
        if current.state is not parsed_state:
            parsed_state = current.state
            tree = _seed_tree(syntax, parsed_state)
        node = _locate(tree, entry)
        if node is None:
            continue
        if _hoist(current, tree, node, catalog):
            continue
        units = [indices for child in node.named_children if (indices := tree.indices(child))]
        if current.ddmin_deletions(units, _remove_seed):
            parsed_state = current.state
            tree = _seed_tree(syntax, parsed_state)
            node = _locate(tree, entry)
            if node is None:
                continue
        for child in node.named_children:
            push(child, tree)


def _locate(tree: _Tree, entry: _Pending) -> tree_sitter.Node | None:
    first = tree.position_of.get(entry.first)
    last = tree.position_of.get(entry.last)
    if first is None or last is None:
        return None
    start = tree.starts[first]
    node = tree.tree.root_node.descendant_for_byte_range(start, start + 1)
    while node is not None:
        indices = tree.indices(node)
        if indices and indices[0] == entry.first and indices[-1] == entry.last:
            if node.type == entry.kind:
                return node
        elif indices and indices[0] < entry.first:
            return None
        node = node.parent
    return None


def _hoist(current: PairCurrent, tree: _Tree, node: tree_sitter.Node, catalog: Catalog) -> bool:
    """Keep only a compatible descendant of `node`: delete the node's other tokens."""
    own = tree.indices(node)
    found: list[tuple[int, int, list[int]]] = []
    frontier = list(node.named_children)
    for _ in range(HOIST_DEPTH):
        deeper = []
        for child in frontier:
            indices = tree.indices(child)
            if 0 < len(indices) < len(own) and catalog.compatible(node.type, child.type):
                found.append((len(indices), indices[0], indices))
            deeper.extend(child.named_children)
        frontier = deeper
    found.sort(key=lambda item: (item[0], item[1]))
    if not found:
        return False
    base = current.state
    own_set = set(own)

    def states() -> Iterator[PairState]:
        for _, _, kept in found[:HOIST_CANDIDATES]:
            yield base.without_seed_tokens(sorted(own_set - set(kept)))

    return current.try_states(states()) is not None


def reduce_pair(current: PairCurrent) -> None:
    """Algorithm 1: MinTdiff, MinLdiff, MinCommonality, repeated until none pays."""
    engine = current.engine
    while True:
        before = measure(current.state)
        engine.pass_name = "min-tdiff"
        min_tdiff(current)
        engine.pass_name = "min-ldiff"
        min_ldiff(current)
        engine.pass_name = "min-commonality"
        min_commonality(current)
        if measure(current.state) >= before:
            return


__all__ = ["SEED", "PairCurrent", "measure", "reduce_pair"]
