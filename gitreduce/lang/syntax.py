"""Parsing candidates: the cheap syntax check before the expensive test, and token counts.

A token is a non-empty, non-comment leaf of the parse tree, the same rule the
benchmark's tokens.py uses, so the sizes we report are the sizes it measures.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass

import tree_sitter

from gitreduce.lang.grammars import Grammar

_PLAIN_TOKEN = re.compile(rb"\w+|[^\w\s]")


def count_errors(node: tree_sitter.Node) -> int:
    """ERROR and MISSING nodes below `node`, visiting only subtrees that have any."""
    if not node.has_error:
        return 0
    count = 0
    pending = [node]
    while pending:
        current = pending.pop()
        if current.is_error or current.is_missing:
            count += 1
        for child in current.children:
            if child.has_error or child.is_missing:
                pending.append(child)
    return count


def empty_blocks(node: tree_sitter.Node) -> int:
    """`block` nodes with nothing in them below `node`."""
    count = 0
    cursor = node.walk()
    while True:
        current = cursor.node
        if current is not None and current.type == "block" and current.child_count == 0:
            count += 1
        if cursor.goto_first_child() or cursor.goto_next_sibling():
            continue
        while cursor.goto_parent():
            if cursor.goto_next_sibling():
                break
        else:
            return count


def leaves(tree: tree_sitter.Tree) -> list[tree_sitter.Node]:
    """Token leaves in text order (comments and zero-width nodes left out)."""
    result: list[tree_sitter.Node] = []
    cursor = tree.walk()
    while True:
        node = cursor.node
        if cursor.goto_first_child():
            continue
        if node is not None and node.end_byte > node.start_byte and "comment" not in node.type:
            result.append(node)
        while not cursor.goto_next_sibling():
            if not cursor.goto_parent():
                return result


@dataclass
class Parsed:
    """A text with its tree and the start offsets of its tokens, for O(log n) token counts."""

    text: bytes
    tree: tree_sitter.Tree
    token_starts: list[int]
    token_ends: list[int]

    @property
    def tokens(self) -> int:
        return len(self.token_starts)

    def tokens_in(self, start: int, end: int) -> int:
        return bisect_left(self.token_starts, end) - bisect_left(self.token_starts, start)


# Grammars that parse a body with no statement in it as an empty `block` without an
# error, where the language itself rejects it (Python: "expected an indented block"):
# there an empty block counts as a syntax error, so no test is spent on one.
EMPTY_BLOCK_IS_ERROR = frozenset({"python"})


class Syntax:
    """Parses with one grammar and remembers how broken the original was."""

    def __init__(self, grammar: Grammar, original: bytes) -> None:
        self.grammar = grammar
        self._parser = grammar.parser()
        self._empty_blocks_are_errors = grammar.name in EMPTY_BLOCK_IS_ERROR
        self.baseline_errors = self._errors(self._parser.parse(original).root_node)

    def _errors(self, root: tree_sitter.Node) -> int:
        errors = count_errors(root)
        if self._empty_blocks_are_errors:
            errors += empty_blocks(root)
        return errors

    def parse(self, text: bytes) -> Parsed:
        tree = self._parser.parse(text)
        tokens = leaves(tree)
        return Parsed(text, tree, [t.start_byte for t in tokens], [t.end_byte for t in tokens])

    def acceptable(self, text: bytes) -> bool:
        """Whether `text` parses with no more errors than the original had."""
        root = self._parser.parse(text).root_node
        if not root.has_error and not self._empty_blocks_are_errors:
            return True
        return self._errors(root) <= self.baseline_errors


def plain_tokens(text: bytes) -> list[tuple[int, int]]:
    """Byte spans of words and punctuation, for files no grammar parses."""
    return [match.span() for match in _PLAIN_TOKEN.finditer(text)]
