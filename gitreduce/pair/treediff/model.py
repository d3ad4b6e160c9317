"""Δ_T's data: the two trees as flat arrays, the subtree-level operations, and patching.

The matcher never touches py-tree-sitter `Node` objects after one `TreeCursor`
walk per tree: every tree becomes parallel arrays indexed by pre-order number
(`FlatTree`), because attribute access on nodes costs far more than list
indexing and the matching phases look at most nodes several times.

The operations (delete a seed subtree, insert a variant subtree, replace one by
the other, update a changed leaf, move a matched node) are what PPR's MinTdiff
works with. A `TreeDiff` holds the mapping and those operations, and renders the
seed with any subset of them applied or the variant with any subset undone.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import tree_sitter

from gitreduce.core import edits

Span = tuple[int, int]

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
