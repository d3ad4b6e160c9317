"""A parse of one program of a pair, its leaves tied to the alignment's token indices.

Pairwise reducers address nodes by the original token indices they cover,
which no deletion ever shifts, so a tree parsed once stays a valid map of
what is left until the pass that parsed it is done.
"""

from __future__ import annotations

import difflib
from bisect import bisect_left
from collections.abc import Callable

import tree_sitter

from gitreduce.lang.syntax import Syntax, leaf_spans
from gitreduce.pair.state import PairState


class TokenTree:
    """A parse of one side's current text, its leaves tied to original token indices.

    A leaf the state does not know (re-lexing after a deletion can split or
    merge tokens) maps to None and is left alone.
    """

    def __init__(self, tree: tree_sitter.Tree, originals: list[int | None]) -> None:
        self.tree = tree
        self.originals = originals
        self.starts = leaf_spans(tree)[0]
        self.position_of = {
            original: at for at, original in enumerate(originals) if original is not None
        }

    def span(self, node: tree_sitter.Node) -> tuple[int, int]:
        """The leaf positions [first, last) that `node` covers."""
        return bisect_left(self.starts, node.start_byte), bisect_left(self.starts, node.end_byte)

    def indices(self, node: tree_sitter.Node) -> list[int]:
        first, last = self.span(node)
        return [original for original in self.originals[first:last] if original is not None]


def parse_tokens(
    syntax: Syntax, text: bytes, originals: list[int], texts: Callable[[], list[bytes]]
) -> TokenTree:
    """The tree of `text`, its leaves matched to the state's tokens (`originals`, whose
    texts `texts` gives): one to one when the counts agree, else by sequence alignment."""
    parsed = syntax.parse(text)
    if parsed.tokens == len(originals):
        return TokenTree(parsed.tree, list(originals))
    leaf_texts = [text[a:b] for a, b in zip(parsed.token_starts, parsed.token_ends, strict=True)]
    mapped: list[int | None] = [None] * len(leaf_texts)
    matcher = difflib.SequenceMatcher(None, leaf_texts, texts(), autojunk=False)
    for block in matcher.get_matching_blocks():
        for offset in range(block.size):
            mapped[block.a + offset] = originals[block.b + offset]
    return TokenTree(parsed.tree, mapped)


def seed_tree(syntax: Syntax, state: PairState) -> TokenTree:
    """The seed's tree, its leaves as seed token indices."""
    return parse_tokens(
        syntax, state.seed_text(), state.seed_kept_indices(), state.seed_token_texts
    )
