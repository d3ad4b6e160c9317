"""Perses-style syntax-guided reduction on tree-sitter trees.

Nodes wait in a max-heap by token count, so the biggest subtrees are worked on
first (the cheapest place to remove the most). Working on a node means
(1) hoisting: replacing it by a smaller descendant of a compatible kind, then
(2) ddmin over its named children, taking list separators along, then pushing
its surviving children. Pending nodes are disjoint subtrees, and every change
happens inside the node at work, so pending positions only shift: they are
remembered as byte ranges plus the log of changes since they were pushed, and
found again in the re-parsed tree when popped.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from dataclasses import dataclass

import tree_sitter

from gitreduce import edits
from gitreduce.current import Current, Unit, delete_units

SEPARATORS = frozenset({b",", b";"})
HOIST_DEPTH = 4
HOIST_CANDIDATES = 8


@dataclass(frozen=True)
class _Change:
    """Bytes [start, end) of the text were replaced; everything at or after `end` moved by `shift`."""

    start: int
    end: int
    shift: int


@dataclass(order=True)
class _Pending:
    priority: tuple[int, int]
    start: int
    end: int
    kind: str
    log_position: int


def _locate(root: tree_sitter.Node, start: int, end: int, kind: str) -> tree_sitter.Node | None:
    node = root.descendant_for_byte_range(start, end)
    while node is not None and node.start_byte == start and node.end_byte == end:
        if node.type == kind:
            return node
        node = node.parent
    return None


def list_units(node: tree_sitter.Node) -> list[Unit]:
    """The named children of `node` as deletion units, each owning the separator after it.

    A `;` counts as a separator only between elements; a final one terminates
    the construct (`int a, b;`) and stays.
    """
    children = node.children
    units: list[Unit] = []
    for index, child in enumerate(children):
        if not child.is_named:
            continue
        separator = None
        following = children[index + 1] if index + 1 < len(children) else None
        if following is not None and not following.is_named and following.text in SEPARATORS:
            has_later_element = any(c.is_named for c in children[index + 2 :])
            if following.text == b"," or has_later_element:
                separator = (following.start_byte, following.end_byte)
        units.append(Unit(child.start_byte, child.end_byte, separator))
    return units


class TreeReducer:
    """One sweep of the heap over the current tree; call `sweep` until it reports no progress."""

    def __init__(self, current: Current) -> None:
        if current.syntax is None:
            raise ValueError("tree reduction needs a grammar")
        self.current = current
        self.grammar = current.syntax.grammar
        self._log: list[_Change] = []
        self._heap: list[_Pending] = []

    def _push(self, node: tree_sitter.Node) -> None:
        parsed = self.current.parsed
        assert parsed is not None
        tokens = parsed.tokens_in(node.start_byte, node.end_byte)
        if tokens >= 2:
            entry = _Pending(
                (-tokens, node.start_byte),
                node.start_byte,
                node.end_byte,
                node.type,
                len(self._log),
            )
            heapq.heappush(self._heap, entry)

    def _where_now(self, entry: _Pending) -> tuple[int, int]:
        start, end = entry.start, entry.end
        for change in self._log[entry.log_position :]:
            if start >= change.end:
                start += change.shift
                end += change.shift
        return start, end

    def _record(self, start: int, end: int, old_length: int) -> None:
        shift = len(self.current.text) - old_length
        if shift:
            self._log.append(_Change(start, end, shift))

    def sweep(self) -> bool:
        parsed = self.current.parsed
        assert parsed is not None
        start_length = len(self.current.text)
        self._log.clear()
        self._heap.clear()
        self._push(parsed.tree.root_node)
        while self._heap:
            entry = heapq.heappop(self._heap)
            start, end = self._where_now(entry)
            parsed = self.current.parsed
            assert parsed is not None
            node = _locate(parsed.tree.root_node, start, end, entry.kind)
            if node is None:
                continue
            replaced = self._hoist(node)
            if replaced is not None:
                self._push(replaced)
                continue
            node = self._reduce_children(node)
            if node is not None:
                for child in node.named_children:
                    self._push(child)
        return len(self.current.text) < start_length

    def _hoist_candidates(self, node: tree_sitter.Node) -> list[tree_sitter.Node]:
        parsed = self.current.parsed
        assert parsed is not None
        own_tokens = parsed.tokens_in(node.start_byte, node.end_byte)
        found: list[tuple[int, int, tree_sitter.Node]] = []
        frontier = list(node.named_children)
        for _ in range(HOIST_DEPTH):
            deeper = []
            for child in frontier:
                tokens = parsed.tokens_in(child.start_byte, child.end_byte)
                if 0 < tokens < own_tokens and self.grammar.compatible(node.type, child.type):
                    found.append((tokens, child.start_byte, child))
                deeper.extend(child.named_children)
            frontier = deeper
        found.sort(key=lambda item: (item[0], item[1]))
        return [child for _, _, child in found[:HOIST_CANDIDATES]]

    def _hoist(self, node: tree_sitter.Node) -> tree_sitter.Node | None:
        """Replace `node` by its smallest compatible descendant that keeps the bug; the new node."""
        candidates = self._hoist_candidates(node)
        if not candidates:
            return None
        text = self.current.text
        start, end = node.start_byte, node.end_byte
        replacements = [text[c.start_byte : c.end_byte] for c in candidates]

        def rendered() -> Iterator[bytes]:
            for replacement in replacements:
                yield edits.apply(text, [edits.Edit(start, end, replacement)])

        winner = self.current.try_candidates(rendered())
        if winner is None:
            return None
        self._record(start, end, len(text))
        parsed = self.current.parsed
        assert parsed is not None
        new_end = start + len(replacements[winner])
        return _locate(parsed.tree.root_node, start, new_end, candidates[winner].type)

    def _reduce_children(self, node: tree_sitter.Node) -> tree_sitter.Node | None:
        """ddmin over the named children of `node`; the node as it stands afterwards."""
        units = list_units(node)
        if not units:
            return node
        old_length = len(self.current.text)
        start, end, kind = node.start_byte, node.end_byte, node.type
        if not delete_units(self.current, units):
            return node
        self._record(start, end, old_length)
        parsed = self.current.parsed
        assert parsed is not None
        return _locate(
            parsed.tree.root_node, start, end + len(self.current.text) - old_length, kind
        )
