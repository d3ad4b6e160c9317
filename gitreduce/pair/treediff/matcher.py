"""Tree differencing (Δ_T) between a seed and a variant parse tree, GumTree-style.

PPR's MinTdiff does not want a token diff: it wants subtree-level operations
(delete a seed subtree, insert a variant subtree, replace one by the other) so
it can minimise each unique subtree under its own property and try undoing each
replacement. This module matches the two trees the way GumTree does (Falleri et
al., ASE'14) and derives those operations from the mapping.

The matcher never touches py-tree-sitter `Node` objects after one `TreeCursor`
walk per tree: every tree becomes parallel arrays indexed by pre-order number
(`FlatTree`), because attribute access on nodes costs far more than list
indexing and the phases below look at most nodes several times.

Phases, and how each stays near-linear:
1. Top-down: subtrees of equal structural hash are matched, tallest first.
   Only the open frontier is ever bucketed, so identical regions cost one
   comparison. Groups of several isomorphic candidates are resolved by the
   dice similarity of their parents, then by where the seed member would land
   in the variant; groups too large to score are left to recovery. Named
   leaves unique on both sides become hints for bottom-up.
2. Bottom-up: an unmatched inner seed node looks for a variant node of the
   same kind among the ancestors of its matched descendants' partners, and
   takes the best dice >= `min_dice` (or an enclosing candidate when the
   variant wrapped part of the node into a new construct). Descendants matched
   as whole isomorphic subtrees count as one block without being descended
   into, so the cost per node is the size of its *changed* frontier.
3. Recovery: for every pair matched bottom-up (and recursively for pairs it
   creates), the unmatched children between order-preserving anchors are
   aligned: isomorphic subtrees, then same shape, then same kind. GumTree's
   recovery is bounded by subtree size; here it is bounded per gap between
   anchors instead, with an exact table only up to `MAX_LCS_CELLS` cells
   and difflib's matcher beyond, so it can run on every matched pair.
"""

from __future__ import annotations

import difflib
import gc
import sys
import time
from bisect import bisect_left, bisect_right, insort
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from itertools import accumulate

import tree_sitter

from gitreduce.core import edits

Span = tuple[int, int]

MIN_HEIGHT = 2
MIN_DICE = 0.5
# Top-down groups of isomorphic subtrees with more candidate pairs than this are
# not scored by their parents' similarity, only by position; beyond the second
# limit they are left to recovery.
MAX_SCORED_PAIRS = 64
MAX_POSITIONAL_PAIRS = 4096
# Largest gap (seed children x variant children) aligned with an exact LCS table.
MAX_LCS_CELLS = 4096

_MERGING_PUNCTUATION = frozenset(b"+-*/%<>=!&|^:.#?~")
_WHITE_SPACE = frozenset(b" \t\r\n\f\v")


class FlatTree:
    """A parse tree as parallel arrays indexed by pre-order number.

    Pre-order numbering makes a subtree a contiguous range [i, i + size[i]),
    which turns "is this a descendant" into two comparisons and lets
    isomorphic subtrees be mapped node by node with an offset.
    """

    __slots__ = (
        "children",
        "ends",
        "hashes",
        "heights",
        "kind_names",
        "kinds",
        "labels",
        "named_kinds",
        "parents",
        "positions",
        "sizes",
        "starts",
        "text",
    )

    def __init__(self, tree: tree_sitter.Tree, text: bytes) -> None:
        self.text = text
        kinds: list[int] = []
        starts: list[int] = []
        ends: list[int] = []
        parents: list[int] = []
        positions: list[int] = []
        children: list[list[int]] = []
        kind_names: dict[int, str] = {}
        named_kinds: set[int] = set()
        cursor = tree.walk()
        parent = -1
        while True:
            node = cursor.node
            assert node is not None
            index = len(kinds)
            kind = node.kind_id
            if kind not in kind_names:
                kind_names[kind] = node.type
                if node.is_named:
                    named_kinds.add(kind)
            kinds.append(kind)
            starts.append(node.start_byte)
            ends.append(node.end_byte)
            parents.append(parent)
            children.append([])
            if parent >= 0:
                siblings = children[parent]
                positions.append(len(siblings))
                siblings.append(index)
            else:
                positions.append(0)
            if cursor.goto_first_child():
                parent = index
                continue
            finished = False
            while not cursor.goto_next_sibling():
                if not cursor.goto_parent():
                    finished = True
                    break
                parent = parents[parent]
            if finished:
                break
        count = len(kinds)
        heights = [1] * count
        sizes = [1] * count
        hashes = [0] * count
        labels = [b""] * count
        for index in range(count - 1, -1, -1):
            below = children[index]
            if below:
                height = 0
                size = 1
                child_hashes = []
                for child in below:
                    if heights[child] > height:
                        height = heights[child]
                    size += sizes[child]
                    child_hashes.append(hashes[child])
                heights[index] = height + 1
                sizes[index] = size
                hashes[index] = hash((kinds[index], *child_hashes))
            else:
                label = text[starts[index] : ends[index]]
                labels[index] = label
                hashes[index] = hash((kinds[index], label))
        self.kinds = kinds
        self.kind_names = kind_names
        self.named_kinds = named_kinds
        self.starts = starts
        self.ends = ends
        self.parents = parents
        self.positions = positions
        self.children = children
        self.heights = heights
        self.sizes = sizes
        self.hashes = hashes
        self.labels = labels

    def __len__(self) -> int:
        return len(self.kinds)

    def kind(self, index: int) -> str:
        return self.kind_names[self.kinds[index]]

    def span(self, index: int) -> Span:
        return (self.starts[index], self.ends[index])

    def source(self, index: int) -> bytes:
        return self.text[self.starts[index] : self.ends[index]]


@dataclass(frozen=True)
class Deletion:
    """A maximal seed subtree with no partner: content only the seed has.

    `kept` lists spans of matched descendants (moved elsewhere in the
    variant); they are not part of what the seed alone owns.
    `variant_anchor` is where the subtree would sit in the variant, so the
    deletion can be undone there.
    """

    seed_node: int
    kind: str
    seed_span: Span
    variant_anchor: int
    kept: tuple[Span, ...] = ()


@dataclass(frozen=True)
class Insertion:
    """A maximal variant subtree with no partner: content only the variant has.

    `kept` lists spans of matched descendants (e.g. the statements an
    inserted `if` wraps); `seed_anchor` is where it would go in the seed.
    """

    variant_node: int
    kind: str
    variant_span: Span
    seed_anchor: int
    kept: tuple[Span, ...] = ()


@dataclass(frozen=True)
class Update:
    """Matched nodes whose text differs (a changed identifier, constant, comment)."""

    seed_node: int
    variant_node: int
    kind: str
    seed_span: Span
    variant_span: Span


@dataclass(frozen=True)
class Replacement:
    """An unmatched seed subtree and an unmatched variant subtree in the same slot.

    The slot is a gap between order-preserving matched children of matched
    parents holding exactly one node on each side; undoing it puts the seed's
    text back in the variant.
    """

    seed_node: int
    variant_node: int
    seed_kind: str
    variant_kind: str
    seed_span: Span
    variant_span: Span
    seed_kept: tuple[Span, ...] = ()
    variant_kept: tuple[Span, ...] = ()


@dataclass(frozen=True)
class Move:
    """Matched nodes whose parents are not partners, or that changed order among siblings."""

    seed_node: int
    variant_node: int
    kind: str
    seed_span: Span
    variant_span: Span


Operation = Deletion | Insertion | Update | Replacement | Move


@dataclass
class TreeDiff:
    """The mapping between two flattened trees and the subtree-level edit script.

    Spans refer to the texts the trees were parsed from. Operations are
    independent edits of those original texts: apply or undo any subset of them
    against the originals rather than one after another on an edited text.
    """

    seed: FlatTree
    variant: FlatTree
    seed_to_variant: list[int]
    operations: list[Operation] = field(default_factory=list)

    @cached_property
    def mapping(self) -> dict[int, int]:
        """Seed node index -> variant node index (pre-order numbers of the flat trees)."""
        return {a: b for a, b in enumerate(self.seed_to_variant) if b >= 0}

    @property
    def deletions(self) -> list[Deletion]:
        return [op for op in self.operations if isinstance(op, Deletion)]

    @property
    def insertions(self) -> list[Insertion]:
        return [op for op in self.operations if isinstance(op, Insertion)]

    @property
    def updates(self) -> list[Update]:
        return [op for op in self.operations if isinstance(op, Update)]

    @property
    def replacements(self) -> list[Replacement]:
        return [op for op in self.operations if isinstance(op, Replacement)]

    @property
    def moves(self) -> list[Move]:
        return [op for op in self.operations if isinstance(op, Move)]

    def undo(self, operations: Iterable[Operation]) -> bytes:
        """The variant with `operations` taken back (MinTdiff's "undo the replacement").

        Updates and replacements put the seed's text back; insertions lose the
        tokens only the variant has (a wrapper's matched contents stay);
        deletions reappear at their anchor. Moves cannot be undone in place.
        """
        seed_text, variant_text = self.seed.text, self.variant.text
        changes: list[_Change] = []
        for op in operations:
            if isinstance(op, Update | Replacement):
                changes.append((*op.variant_span, _slice(seed_text, op.seed_span), 0))
            elif isinstance(op, Insertion):
                changes.extend(_removal(variant_text, op.variant_span, op.kept))
            elif isinstance(op, Deletion):
                if op.kept:
                    raise ValueError("a deletion with moved descendants cannot be re-inserted")
                text = _slice(seed_text, op.seed_span)
                changes.append((op.variant_anchor, op.variant_anchor, text, op.seed_span[0]))
            else:
                raise ValueError(f"cannot undo {type(op).__name__}")
        return _patch(variant_text, changes)

    def apply(self, operations: Iterable[Operation]) -> bytes:
        """The seed with `operations` applied: the variant when all are, absent moves."""
        seed_text, variant_text = self.seed.text, self.variant.text
        changes: list[_Change] = []
        for op in operations:
            if isinstance(op, Update | Replacement):
                changes.append((*op.seed_span, _slice(variant_text, op.variant_span), 0))
            elif isinstance(op, Deletion):
                changes.extend(_removal(seed_text, op.seed_span, op.kept))
            elif isinstance(op, Insertion):
                if op.kept:
                    raise ValueError("an insertion with matched descendants needs moves")
                text = _slice(variant_text, op.variant_span)
                changes.append((op.seed_anchor, op.seed_anchor, text, op.variant_span[0]))
            else:
                raise ValueError(f"cannot apply {type(op).__name__}")
        return _patch(seed_text, changes)


def _slice(text: bytes, span: Span) -> bytes:
    return text[span[0] : span[1]]


# (start, end, new text, rank): insertions at one point go in rank order, the
# position of their text in the other program
_Change = tuple[int, int, bytes, int]


def _removal(text: bytes, span: Span, kept: Sequence[Span]) -> list[_Change]:
    """Edits deleting `span` except its kept parts; gaps between kept parts keep a separator."""
    start, end = span
    changes: list[_Change] = []
    position = start
    for index, (kept_start, kept_end) in enumerate(kept):
        gap = text[position:kept_start]
        separator = b""
        if index > 0 and gap:
            separator = b"\n" if b"\n" in gap else b" " if gap != gap.lstrip() else b""
        changes.append((position, kept_start, separator, 0))
        position = kept_end
    changes.append((position, end, b"", 0))
    return changes


def _merges(left: int, right: int) -> bool:
    """Whether two bytes written side by side could lex as one token."""
    if edits._is_word_byte(left) and edits._is_word_byte(right):
        return True
    return left in _MERGING_PUNCTUATION and right in _MERGING_PUNCTUATION


def _separated(left: int, right: int) -> bool:
    """Whether neither byte is white space, so text placed between them needs a space."""
    return left not in _WHITE_SPACE and right not in _WHITE_SPACE


def _patch(text: bytes, changes: list[_Change]) -> bytes:
    """Render changes; ones nested in an earlier-starting change are subsumed by it.

    Insertions at one point go in the order of their text in the other
    program, whatever order the operations came in, and inserted text gets a
    space where it would glue onto a neighbouring token.
    """
    # Insertions at a point come before a range starting there; wider ranges first.
    ordered = sorted(changes, key=lambda c: (c[0], c[1] > c[0], -c[1], c[3]))
    result: list[edits.Edit] = []
    covered_until = -1
    for start, end, content, _ in ordered:
        if start < covered_until:
            continue
        covered_until = max(covered_until, end)
        if content:
            # a pure insertion is kept apart from its neighbours, a replacement only
            # where it would otherwise lex differently
            glue = _separated if start == end else _merges
            if start > 0 and glue(text[start - 1], content[0]):
                content = b" " + content
            if end < len(text) and glue(content[-1], text[end]):
                content = content + b" "
        if result and result[-1].start == result[-1].end == start == end:
            previous = result.pop().replacement
            if previous and content and _separated(previous[-1], content[0]):
                previous += b" "
            content = previous + content
        result.append(edits.Edit(start, end, content))
    return edits.apply(text, result)


class _Matcher:
    """The GumTree phases over two flat trees; `ms`/`mv` are the two directions of the mapping."""

    def __init__(self, seed: FlatTree, variant: FlatTree, min_height: int, min_dice: float) -> None:
        self.s = seed
        self.v = variant
        self.min_height = min_height
        self.min_dice = min_dice
        self.ms = [-1] * len(seed)
        self.mv = [-1] * len(variant)
        # 1 where the seed node was matched as part of an isomorphic subtree match,
        # so its whole subtree maps into its partner's subtree.
        self.clean = bytearray(len(seed))
        # 1 where a seed subtree was left unmatched and unopened by top-down (an
        # ambiguous group): nothing below it is matched until it is itself matched,
        # so walks over matched descendants can skip it.
        self.sealed = bytearray(len(seed))
        self.hints: list[tuple[int, int]] = []
        self.counter: _MatchedCount | None = None

    # -- mapping primitives -------------------------------------------------

    def link(self, a: int, b: int) -> None:
        ms, mv, counter = self.ms, self.mv, self.counter
        old = ms[a]
        if old >= 0 and old != b:
            mv[old] = -1
            if counter is not None:
                counter.lose(old)
        old = mv[b]
        if old >= 0 and old != a:
            ms[old] = -1
        elif old < 0 and counter is not None:
            counter.gain(b)
        ms[a] = b
        mv[b] = a
        self.clean[a] = 0
        self.sealed[a] = 0

    def match_subtree(self, a: int, b: int) -> None:
        """Map isomorphic subtrees node by node; pre-order makes them offset copies."""
        ms, mv, clean = self.ms, self.mv, self.clean
        self.sealed[a] = 0
        lost: list[int] = []
        gained: list[int] = []
        for offset in range(self.s.sizes[a]):
            x = a + offset
            y = b + offset
            old = ms[x]
            if old >= 0 and old != y:
                mv[old] = -1
                lost.append(old)
            old = mv[y]
            if old >= 0 and old != x:
                ms[old] = -1
            elif old < 0:
                gained.append(y)
            ms[x] = y
            mv[y] = x
            clean[x] = 1
        if self.counter is not None:
            for y in gained:
                self.counter.gain(y)
            for y in lost:
                self.counter.lose(y)

    def below(self, a: int) -> list[tuple[int, int]]:
        """(partner, weight) for the matched descendants of seed node `a`.

        A descendant matched as part of an isomorphic subtree stands for its
        whole subtree (weight = size) and is not descended into: its partner's
        subtree is entirely matched, so it lies inside an unmatched variant node
        exactly when its root does. The walk costs the changed frontier only.
        """
        ms, clean, sealed = self.ms, self.clean, self.sealed
        sizes, children = self.s.sizes, self.s.children
        found: list[tuple[int, int]] = []
        stack = list(children[a])
        while stack:
            d = stack.pop()
            partner = ms[d]
            if partner >= 0:
                if clean[d]:
                    found.append((partner, sizes[d]))
                    continue
                found.append((partner, 1))
            elif sealed[d]:
                continue
            stack.extend(children[d])
        return found

    @staticmethod
    def profile(found: list[tuple[int, int]]) -> tuple[list[int], list[int]]:
        """Sorted partner positions and prefix sums of weights, for range counts by bisection."""
        found = sorted(found)
        positions = [partner for partner, _ in found]
        totals = [0]
        running = 0
        for _, weight in found:
            running += weight
            totals.append(running)
        return positions, totals

    def shared(self, profile: tuple[list[int], list[int]], b: int) -> int:
        """How much of the profiled seed subtree maps strictly below variant node `b`."""
        positions, totals = profile
        return (
            totals[bisect_left(positions, b + self.v.sizes[b])]
            - totals[bisect_left(positions, b + 1)]
        )

    # -- phase 1 --------------------------------------------------------------

    def top_down(self) -> None:
        s, v = self.s, self.v
        top = max(s.heights[0], v.heights[0])
        open_s: list[list[int]] = [[] for _ in range(top + 1)]
        open_v: list[list[int]] = [[] for _ in range(top + 1)]
        open_s[s.heights[0]].append(0)
        open_v[v.heights[0]].append(0)
        ambiguous: list[tuple[list[int], list[int]]] = []
        landmarks: list[tuple[int, int]] = []  # (seed end, variant end) of unique matches
        for height in range(top, max(self.min_height, 1) - 1, -1):
            seeds, variants = open_s[height], open_v[height]
            if not seeds or not variants:
                self._open(s, seeds, open_s)
                self._open(v, variants, open_v)
                continue
            groups: dict[tuple[int, int], tuple[list[int], list[int]]] = {}
            for a in seeds:
                groups.setdefault((s.hashes[a], s.sizes[a]), ([], []))[0].append(a)
            for b in variants:
                groups.setdefault((v.hashes[b], v.sizes[b]), ([], []))[1].append(b)
            for group_s, group_v in groups.values():
                if group_s and group_v:
                    if len(group_s) == 1 and len(group_v) == 1:
                        self.match_subtree(group_s[0], group_v[0])
                        landmarks.append((s.ends[group_s[0]], v.ends[group_v[0]]))
                    else:
                        ambiguous.append((group_s, group_v))
                        for a in group_s:
                            self.sealed[a] = 1
                    continue
                self._open(s, group_s, open_s)
                self._open(v, group_v, open_v)
        if ambiguous:
            self._resolve(ambiguous, landmarks)
        for height in range(1, min(self.min_height, top + 1)):
            self._match_unique(open_s[height], open_v[height])

    @staticmethod
    def _open(tree: FlatTree, nodes: list[int], lists: list[list[int]]) -> None:
        heights, children = tree.heights, tree.children
        for node in nodes:
            for child in children[node]:
                lists[heights[child]].append(child)

    def _resolve(
        self, groups: list[tuple[list[int], list[int]]], landmarks: list[tuple[int, int]]
    ) -> None:
        """Match groups of isomorphic candidates greedily, best evidence first.

        Evidence is the dice of the parents (for groups small enough to score
        every pair: each distinct seed parent costs one walk of its changed
        frontier), then the distance between a variant candidate and where the
        seed member would land in the variant, judged from the nearest match
        before it. That keeps copies of repeated code (two `(void*)0` in one
        statement, a file pasted twice) with their own counterparts when
        nothing else tells them apart; relative position in the file is too
        coarse once insertions shift the text. Groups come tallest first and
        their matches become landmarks for the smaller ones. Groups too large
        even for that stay sealed: recovery aligns them inside matched parents.
        """
        s, v, ms, mv = self.s, self.v, self.ms, self.mv
        landmarks.sort()
        profiles: dict[int, tuple[list[int], list[int]]] = {}
        for group_s, group_v in groups:
            pairs = len(group_s) * len(group_v)
            if pairs > MAX_POSITIONAL_PAIRS:
                continue
            scored: list[tuple[float, int, int, int]] = []
            for a in group_s:
                pa = s.parents[a]
                profile = None
                if pairs <= MAX_SCORED_PAIRS and pa >= 0:
                    profile = profiles.get(pa)
                    if profile is None:
                        profile = profiles[pa] = self.profile(self.below(pa))
                start = s.starts[a]
                mark = bisect_right(landmarks, (start, sys.maxsize)) - 1
                landing = start if mark < 0 else landmarks[mark][1] + start - landmarks[mark][0]
                for b in group_v:
                    similarity = 0.0
                    pb = v.parents[b]
                    if profile is not None and pb >= 0:
                        shared = self.shared(profile, pb)
                        similarity = 2.0 * shared / (s.sizes[pa] + v.sizes[pb] - 2)
                    scored.append((-similarity, abs(v.starts[b] - landing), a, b))
            scored.sort()
            for _, _, a, b in scored:
                if ms[a] < 0 and mv[b] < 0:
                    self.match_subtree(a, b)
                    insort(landmarks, (s.ends[a], v.ends[b]))

    def _match_unique(self, seeds: list[int], variants: list[int]) -> None:
        """Small named subtrees unique on both sides: hints for bottom-up, checked at the end.

        Punctuation and keywords are left out: one unique `(` or `,` in each
        changed region says nothing about which statements correspond.
        """
        s, v = self.s, self.v
        named = s.named_kinds
        groups: dict[tuple[int, int], tuple[list[int], list[int]]] = {}
        for a in seeds:
            if s.kinds[a] not in named:
                continue
            groups.setdefault((s.hashes[a], s.sizes[a]), ([], []))[0].append(a)
        for b in variants:
            groups.setdefault((v.hashes[b], v.sizes[b]), ([], []))[1].append(b)
        for group_s, group_v in groups.values():
            if len(group_s) == 1 and len(group_v) == 1:
                self.match_subtree(group_s[0], group_v[0])
                self.hints.append((group_s[0], group_v[0]))

    # -- phase 2 --------------------------------------------------------------

    def bottom_up(self) -> None:
        s, v, ms, mv, clean, sealed = self.s, self.v, self.ms, self.mv, self.clean, self.sealed
        sizes, children = s.sizes, s.children
        # below(node) for processed nodes whose parent is still to come: built from
        # the children's lists, so each frontier entry is produced once per ancestor
        # by list.extend instead of a fresh walk
        pending: dict[int, list[tuple[int, int]]] = {}
        self.counter = _MatchedCount(mv)
        for a in self._unclean_postorder():
            found: list[tuple[int, int]] = []
            for child in children[a]:
                partner = ms[child]
                if partner >= 0 and clean[child]:
                    found.append((partner, sizes[child]))
                    continue
                if partner >= 0:
                    found.append((partner, 1))
                elif sealed[child]:
                    continue
                sub = pending.pop(child, None)
                found.extend(self.below(child) if sub is None else sub)
            if ms[a] < 0 and found:
                b = self._candidate(a, found)
                if b >= 0:
                    self.link(a, b)
                    if self.recover(a, b):
                        found = self.below(a)
            pending[a] = found
        if ms[0] < 0 and mv[0] < 0 and s.kinds[0] == v.kinds[0]:
            self.link(0, 0)
            self.recover(0, 0)

    def _unclean_postorder(self) -> list[int]:
        ms, clean, sealed, children = self.ms, self.clean, self.sealed, self.s.children
        order: list[int] = []
        stack: list[tuple[int, bool]] = [(0, False)]
        while stack:
            node, finished = stack.pop()
            if finished:
                order.append(node)
                continue
            if clean[node] if ms[node] >= 0 else sealed[node]:
                continue
            stack.append((node, True))
            stack.extend((child, False) for child in reversed(children[node]))
        return order

    def _candidate(self, a: int, found: list[tuple[int, int]]) -> int:
        """The variant node to pair with unmatched seed node `a`, or -1.

        Candidates are the unmatched same-kind ancestors of the partners in
        `found` (= below(a)); shared ancestors are climbed once.
        """
        s, v, ms, mv = self.s, self.v, self.ms, self.mv
        kind = s.kinds[a]
        vkinds, vparents = v.kinds, v.parents
        seen: set[int] = set()
        candidates: list[int] = []
        for partner, _ in found:
            node = vparents[partner]
            while node >= 0 and node not in seen:
                seen.add(node)
                if vkinds[node] == kind and mv[node] < 0:
                    candidates.append(node)
                node = vparents[node]
        if not candidates:
            return -1
        profile = self.profile(found)
        counter = self.counter
        assert counter is not None
        own = s.sizes[a] - 1
        scored: list[tuple[float, int, int, int]] = []  # dice, shared, foreign, node
        for b in candidates:
            size = v.sizes[b]
            total = own + size - 1
            shared = self.shared(profile, b)
            similarity = 2.0 * shared / total if total > 0 else 0.0
            if similarity >= self.min_dice:
                foreign = counter.count(b + 1, b + size) - shared
                scored.append((similarity, shared, foreign, b))
        if not scored:
            return -1
        best = max(scored)
        # Dice prefers a block a variant wrapped into a new construct over the old
        # block around it ({ a; if (c) { b; ... } }). An enclosing candidate is
        # better when it holds more of `a`, nothing more that matched elsewhere,
        # and is the parent of the partner of one of a's children (the part left
        # outside the wrapper), rather than gaining a stray deep match.
        _, best_shared, best_foreign, best_node = best
        adopters = {vparents[ms[c]] for c in s.children[a] if ms[c] >= 0}
        for candidate in scored:
            _, shared, foreign, b = candidate
            if (
                b in adopters
                and b < best_node < b + v.sizes[b]
                and foreign <= best_foreign
                and shared > best_shared
                and (shared, candidate[0]) > (best[1], best[0])
            ):
                best = candidate
        return best[3]

    # -- phase 3 --------------------------------------------------------------

    def anchors(self, a: int, b: int) -> list[tuple[int, int]]:
        """Child positions (i, j) matched to each other, the heaviest order-preserving chain.

        When children were reordered, the chain keeps the pairs that carry the
        most matched content, so an identical statement stays in place and the
        edited one counts as moved rather than the other way round.
        """
        ms, vparents, vpositions = self.ms, self.v.parents, self.v.positions
        children = self.s.children[a]
        pairs: list[tuple[int, int]] = []
        for i, child in enumerate(children):
            partner = ms[child]
            if partner >= 0 and vparents[partner] == b:
                pairs.append((i, vpositions[partner]))
        if all(pairs[k][1] < pairs[k + 1][1] for k in range(len(pairs) - 1)):
            return pairs
        weights = []
        for i, _ in pairs:
            child = children[i]
            if self.clean[child]:
                weights.append(self.s.sizes[child])
            else:
                weights.append(1 + self.shared(self.profile(self.below(child)), ms[child]))
        return _heaviest_increasing(pairs, weights, len(self.v.children[b]))

    def recover(self, a: int, b: int) -> bool:
        """Align leftover children below a new pair, recursively; whether anything matched."""
        s, v, ms, mv = self.s, self.v, self.ms, self.mv
        changed = False
        work = [(a, b)]
        while work:
            a, b = work.pop()
            seed_children, variant_children = s.children[a], v.children[b]
            if not seed_children or not variant_children:
                continue
            if all(ms[c] >= 0 for c in seed_children) or all(mv[c] >= 0 for c in variant_children):
                continue
            previous_i = previous_j = -1
            bounds = [*self.anchors(a, b), (len(seed_children), len(variant_children))]
            for i, j in bounds:
                gap_s = [c for c in seed_children[previous_i + 1 : i] if ms[c] < 0]
                gap_v = [c for c in variant_children[previous_j + 1 : j] if mv[c] < 0]
                if gap_s and gap_v:
                    changed = self._align(gap_s, gap_v, work) or changed
                previous_i, previous_j = i, j
        return changed

    def _align(self, gap_s: list[int], gap_v: list[int], work: list[tuple[int, int]]) -> bool:
        """Align a gap in order: isomorphic subtrees, then same shape, then same kind.

        Each stage only looks between the pairs the previous one found. Shape
        (kind plus the kinds of the children) is the step GumTree lacks: among
        several same-kind statements it pairs `let mut cur = Slot {..}` with its
        edited self rather than with whichever `let` comes first. Pairs from the
        later stages are not isomorphic, so their own children are queued.
        """
        s, v, ms, mv = self.s, self.v, self.ms, self.mv
        changed = False
        pending = [(gap_s, gap_v, 0)]
        while pending:
            xs, ys, stage = pending.pop()
            xs = [x for x in xs if ms[x] < 0]
            ys = [y for y in ys if mv[y] < 0]
            if not xs or not ys:
                continue
            if stage == 0:
                pairs = _lcs(
                    [(s.hashes[x], s.sizes[x]) for x in xs],
                    [(v.hashes[y], v.sizes[y]) for y in ys],
                    [s.sizes[x] for x in xs],
                    [v.sizes[y] for y in ys],
                )
                for i, j in pairs:
                    self.match_subtree(xs[i], ys[j])
            else:
                sizes_s = [s.sizes[x] for x in xs]
                sizes_v = [v.sizes[y] for y in ys]
                if stage == 1:
                    keys_s = [_shape(s, x) for x in xs]
                    keys_v: list[object] = [_shape(v, y) for y in ys]
                else:
                    keys_s = [s.kinds[x] for x in xs]
                    keys_v = [v.kinds[y] for y in ys]
                pairs = _lcs(keys_s, keys_v, sizes_s, sizes_v)
                for i, j in pairs:
                    self.link(xs[i], ys[j])
                    work.append((xs[i], ys[j]))
            changed = changed or bool(pairs)
            if stage < 2:
                previous_i = previous_j = -1
                for i, j in [*pairs, (len(xs), len(ys))]:
                    pending.append((xs[previous_i + 1 : i], ys[previous_j + 1 : j], stage + 1))
                    previous_i, previous_j = i, j
        return changed

    def drop_stray_hints(self) -> None:
        """Undo unique-leaf matches whose parents did not end up partners.

        They served bottom-up as evidence; kept, they would only report a leaf
        moved across the file, and they hid the leaf from the recovery of its
        own parent, which gets a second chance here.
        """
        s, v, ms, mv = self.s, self.v, self.ms, self.mv
        retry: set[tuple[int, int]] = set()
        for a, b in self.hints:
            if ms[a] != b:
                continue
            pa, pb = s.parents[a], v.parents[b]
            if pa < 0 or pb < 0 or ms[pa] != pb:
                ms[a] = -1
                mv[b] = -1
                self.clean[a] = 0
                if pa >= 0 and ms[pa] >= 0:
                    retry.add((pa, ms[pa]))
                if pb >= 0 and mv[pb] >= 0:
                    retry.add((mv[pb], pb))
        for a, b in sorted(retry):
            if ms[a] == b:
                self.recover(a, b)

    # -- edit script ------------------------------------------------------------

    def script(self) -> list[Operation]:
        """Chawathe's operations at the granularity MinTdiff works at: whole subtrees.

        One pass over the seed in pre-order, skipping isomorphic matches: each
        matched pair lays its children out as anchors and gaps, and a gap's
        unmatched nodes become deletions and insertions (a replacement when the
        gap is one node on each side).
        """
        s, v, ms, mv, clean = self.s, self.v, self.ms, self.mv, self.clean
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
            self._pair_operations(index, b, operations, reordered)
            index += 1
        if ms[0] < 0 and mv[0] < 0:
            operations.append(self._replacement(0, 0))
        elif ms[0] < 0:
            operations.append(Deletion(0, s.kind(0), s.span(0), v.starts[0], self._kept(s, ms, 0)))
        elif mv[0] < 0:
            operations.append(Insertion(0, v.kind(0), v.span(0), s.starts[0], self._kept(v, mv, 0)))
        return operations

    def _pair_operations(
        self, a: int, b: int, operations: list[Operation], reordered: set[int]
    ) -> None:
        s, v, ms, mv = self.s, self.v, self.ms, self.mv
        seed_children, variant_children = s.children[a], v.children[b]
        if not seed_children or not variant_children:
            if s.source(a) != v.source(b):
                operations.append(Update(a, b, s.kind(a), s.span(a), v.span(b)))
            return
        anchors = self.anchors(a, b)
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
                operations.append(self._replacement(gap_s[0], gap_v[0]))
            else:
                for x in gap_s:
                    if ms[x] < 0:
                        operations.append(
                            Deletion(x, s.kind(x), s.span(x), variant_point, self._kept(s, ms, x))
                        )
                for y in gap_v:
                    if mv[y] < 0:
                        operations.append(
                            Insertion(y, v.kind(y), v.span(y), seed_point, self._kept(v, mv, y))
                        )
            if i < len(seed_children):
                seed_point = s.ends[seed_children[i]]
                variant_point = v.ends[variant_children[j]]
            previous_i, previous_j = i, j

    def _replacement(self, a: int, b: int) -> Replacement:
        s, v = self.s, self.v
        return Replacement(
            a,
            b,
            s.kind(a),
            v.kind(b),
            s.span(a),
            v.span(b),
            self._kept(s, self.ms, a),
            self._kept(v, self.mv, b),
        )

    @staticmethod
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


class _MatchedCount:
    """Matched variant nodes in a pre-order range: a prefix-sum snapshot plus later changes.

    Bottom-up changes few matches compared with top-down, so sorted lists of
    the changes keep each count at a few bisections.
    """

    def __init__(self, partners: list[int]) -> None:
        self.prefix = list(accumulate((1 if p >= 0 else 0 for p in partners), initial=0))
        self.gained: list[int] = []
        self.lost: list[int] = []

    def gain(self, node: int) -> None:
        insort(self.gained, node)

    def lose(self, node: int) -> None:
        insort(self.lost, node)

    def count(self, low: int, high: int) -> int:
        gained, lost = self.gained, self.lost
        return (
            self.prefix[high]
            - self.prefix[low]
            + bisect_left(gained, high)
            - bisect_left(gained, low)
            - bisect_left(lost, high)
            + bisect_left(lost, low)
        )


def _shape(tree: FlatTree, node: int) -> tuple[int, ...]:
    kinds = tree.kinds
    return (kinds[node], *[kinds[child] for child in tree.children[node]])


def _heaviest_increasing(
    pairs: list[tuple[int, int]], weights: list[int], bound: int
) -> list[tuple[int, int]]:
    """The subsequence of `pairs` (sorted by first, second < bound) strictly increasing in
    second with the largest total weight: a Fenwick tree of prefix maxima, O(k log bound)."""
    tree_value = [0] * (bound + 1)
    tree_index = [-1] * (bound + 1)
    previous = [-1] * len(pairs)
    totals = [0] * len(pairs)
    for k, (_, j) in enumerate(pairs):
        best, best_index = 0, -1
        position = j  # prefix maximum over seconds < j (Fenwick positions 1..j)
        while position > 0:
            if tree_value[position] > best:
                best, best_index = tree_value[position], tree_index[position]
            position -= position & -position
        totals[k] = best + weights[k]
        previous[k] = best_index
        position = j + 1
        while position <= bound:
            if totals[k] > tree_value[position]:
                tree_value[position] = totals[k]
                tree_index[position] = k
            position += position & -position
    k = max(range(len(pairs)), key=totals.__getitem__) if pairs else -1
    chain: list[tuple[int, int]] = []
    while k >= 0:
        chain.append(pairs[k])
        k = previous[k]
    chain.reverse()
    return chain


def _lcs(
    first: Sequence[object],
    second: Sequence[object],
    first_sizes: Sequence[int] | None = None,
    second_sizes: Sequence[int] | None = None,
) -> list[tuple[int, int]]:
    """Index pairs of a common subsequence of the keys.

    With sizes, small gaps get the alignment of the largest total matched size
    (min of the two sizes per pair), so a statement pairs with its edited self
    rather than with a smaller look-alike earlier in the list. Large gaps are
    trimmed of equal ends and handed to difflib, which is unweighted.
    """
    n, m = len(first), len(second)
    if not n or not m:
        return []
    if n * m <= MAX_LCS_CELLS:
        return _lcs_table(first, second, first_sizes, second_sizes)
    head = 0
    while head < n and head < m and first[head] == second[head]:
        head += 1
    tail = 0
    while tail < n - head and tail < m - head and first[n - 1 - tail] == second[m - 1 - tail]:
        tail += 1
    pairs = [(k, k) for k in range(head)]
    a = first[head : n - tail]
    b = second[head : m - tail]
    if a and b:
        matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)  # type: ignore[arg-type]
        pairs.extend(
            (block.a + k + head, block.b + k + head)
            for block in matcher.get_matching_blocks()
            for k in range(block.size)
        )
    pairs.extend((n - tail + k, m - tail + k) for k in range(tail))
    return pairs


def _lcs_table(
    a: Sequence[object],
    b: Sequence[object],
    a_sizes: Sequence[int] | None,
    b_sizes: Sequence[int] | None,
) -> list[tuple[int, int]]:
    n, m = len(a), len(b)
    if a_sizes is None or b_sizes is None:
        a_sizes = [1] * n
        b_sizes = [1] * m
    table = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        row, below = table[i], table[i + 1]
        item = a[i]
        for j in range(m - 1, -1, -1):
            best = below[j] if below[j] >= row[j + 1] else row[j + 1]
            if item == b[j]:
                gain = below[j + 1] + min(a_sizes[i], b_sizes[j])
                if gain > best:
                    best = gain
            row[j] = best
    pairs: list[tuple[int, int]] = []
    i = j = 0
    while i < n and j < m:
        if a[i] == b[j] and table[i][j] == table[i + 1][j + 1] + min(a_sizes[i], b_sizes[j]):
            pairs.append((i, j))
            i += 1
            j += 1
            continue
        if table[i + 1][j] >= table[i][j + 1]:
            i += 1
        else:
            j += 1
    return pairs


def diff_flat(
    seed: FlatTree,
    variant: FlatTree,
    *,
    min_height: int = MIN_HEIGHT,
    min_dice: float = MIN_DICE,
) -> TreeDiff:
    """Match two already-flattened trees and derive the edit script (in variant order)."""
    enabled = gc.isenabled()
    gc.disable()  # tens of thousands of small lists would trigger full collections
    try:
        matcher = _Matcher(seed, variant, min_height, min_dice)
        matcher.top_down()
        matcher.bottom_up()
        matcher.drop_stray_hints()
        operations = matcher.script()
    finally:
        if enabled:
            gc.enable()
    operations.sort(key=_variant_position)
    return TreeDiff(seed, variant, matcher.ms, operations)


def _variant_position(op: Operation) -> tuple[int, int]:
    if isinstance(op, Deletion):
        return (op.variant_anchor, op.variant_anchor)
    return op.variant_span


def diff_trees(
    seed_tree: tree_sitter.Tree,
    seed_text: bytes,
    variant_tree: tree_sitter.Tree,
    variant_text: bytes,
    *,
    min_height: int = MIN_HEIGHT,
    min_dice: float = MIN_DICE,
) -> TreeDiff:
    """Δ_T(seed, variant): GumTree mapping plus subtree-level operations.

    Both trees must come from the same grammar (kinds are compared by id) and
    from exactly the texts given (spans and leaf labels are sliced from them).
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        seed = FlatTree(seed_tree, seed_text)
        variant = FlatTree(variant_tree, variant_text)
    finally:
        if enabled:
            gc.enable()
    return diff_flat(seed, variant, min_height=min_height, min_dice=min_dice)


def main(argv: list[str] | None = None) -> int:
    """Time Δ_T on a pair of files: `python -m gitreduce.pair.treediff SEED VARIANT [COPIES]`.

    COPIES concatenates each file that many times, to measure larger inputs.
    """
    from statistics import median

    from gitreduce.lang import grammars
    from gitreduce.lang.syntax import leaves

    args = sys.argv[1:] if argv is None else argv
    if len(args) not in (2, 3):
        print(main.__doc__, file=sys.stderr)
        return 2
    copies = int(args[2]) if len(args) == 3 else 1
    name = grammars.detect(args[0])
    grammar = grammars.load(name) if name else None
    if grammar is None:
        print(f"no grammar for {args[0]}", file=sys.stderr)
        return 2
    with open(args[0], "rb") as handle:
        seed_text = handle.read() * copies
    with open(args[1], "rb") as handle:
        variant_text = handle.read() * copies
    parser = grammar.parser()
    seed_tree = parser.parse(seed_text)
    variant_tree = parser.parse(variant_text)
    print(f"tokens: seed {len(leaves(seed_tree))}, variant {len(leaves(variant_tree))} (x{copies})")
    walls: list[float] = []
    cpus: list[float] = []
    result = None
    for _ in range(7):
        wall, cpu = time.perf_counter(), time.process_time()
        result = diff_trees(seed_tree, seed_text, variant_tree, variant_text)
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    assert result is not None
    print(f"nodes: seed {len(result.seed)}, variant {len(result.variant)}")
    print(
        f"diff_trees: wall median {median(walls) * 1000:.1f} ms (min {min(walls) * 1000:.1f}),"
        f" cpu median {median(cpus) * 1000:.1f} ms (min {min(cpus) * 1000:.1f}), 7 runs"
    )
    print(f"matched: {len(result.mapping)} of {len(result.seed)} seed nodes")
    counts: dict[str, int] = {}
    for op in result.operations:
        counts[type(op).__name__] = counts.get(type(op).__name__, 0) + 1
    print("operations:", ", ".join(f"{k} {n}" for k, n in sorted(counts.items())) or "none")
    return 0


if __name__ == "__main__":
    sys.exit(main())
