"""Sub-tree replacement (Vulcan): a node replaced by a smaller compatible node found
elsewhere in the program.

The tree sweeps replace a node by one of its own descendants (hoisting) or by
the smallest stock phrases of a compatible kind. What they never offer is a
mid-sized piece of the program that stands somewhere else: an expression
replaced by a different, shorter expression the bug may need just as well, a
statement by another statement. Offered for every node, such replacements
would cost a test each, so this runs at the rounds' fixpoint, where the
program is small, and tries only a few replacements per node, smallest first.
"""

from __future__ import annotations

import tree_sitter

from gitreduce.core import edits
from gitreduce.core.current import Current
from gitreduce.passes.catalog import Catalog

# Replacements tried per node: the smallest compatible pieces of the program of two
# tokens or more (a single token is what the tree sweeps' stock phrases offer).
PER_NODE = 3


def _pieces(root: tree_sitter.Node) -> list[tree_sitter.Node]:
    """Every named, error-free node that is no comment, in source order."""
    found = []
    pending = [root]
    while pending:
        node = pending.pop()
        if node.is_named and not node.has_error and "comment" not in node.type:
            found.append(node)
        pending.extend(reversed(node.children))
    return found


def _related(node: tree_sitter.Node, other: tree_sitter.Node) -> bool:
    """Whether one of the two holds the other (hoisting's business, or no change)."""
    return (node.start_byte <= other.start_byte and other.end_byte <= node.end_byte) or (
        other.start_byte <= node.start_byte and node.end_byte <= other.end_byte
    )


def replacement_plan(
    current: Current, original: Catalog, settled: frozenset[bytes] = frozenset()
) -> list[tuple[bytes, bytes]]:
    """(node text, candidate) per node not `settled`, biggest first: the node replaced
    by each of the smallest compatible nodes elsewhere in the program with fewer
    tokens (compatible as the original program and the current one show it)."""
    parsed = current.parsed
    assert parsed is not None
    catalog = original.extended(parsed)
    text = parsed.text
    sized = [
        (parsed.tokens_in(piece.start_byte, piece.end_byte), piece)
        for piece in _pieces(parsed.tree.root_node)
    ]
    sized = [(tokens, piece) for tokens, piece in sized if tokens > 0]
    by_size = sorted(sized, key=lambda entry: (entry[0], entry[1].start_byte))
    plan: list[tuple[bytes, bytes]] = []
    for tokens, node in sorted(sized, key=lambda entry: (-entry[0], entry[1].start_byte)):
        own = text[node.start_byte : node.end_byte]
        if tokens < 2 or node.parent is None or own in settled:
            continue
        seen: set[bytes] = set()
        for other_tokens, other in by_size:
            if other_tokens >= tokens or len(seen) >= PER_NODE:
                break
            if other_tokens < 2:  # single tokens: the tree sweeps' stock phrases and names
                continue
            piece = text[other.start_byte : other.end_byte]
            if piece == own or piece in seen or _related(node, other):
                continue
            if not catalog.compatible(node.type, other.type):
                continue
            seen.add(piece)
            candidate = edits.apply(text, [edits.Edit(node.start_byte, node.end_byte, piece)])
            if len(candidate) < len(text):
                plan.append((own, candidate))
    return plan


def first_subtrees(current: Current, original: Catalog) -> list[bytes]:
    """The candidates `replace_subtrees` tries first: its plan with nothing settled yet."""
    if current.parsed is None:
        return []
    return [candidate for _, candidate in replacement_plan(current, original, frozenset())]


def replace_subtrees(current: Current, original: Catalog) -> bool:
    """Take the first interesting replacement, plan again, until none is; True if any.

    A node none of whose replacements was taken is not planned again in this
    run (see `identifiers.replace_identifiers`).
    """
    settled: set[bytes] = set()
    progress = False
    while current.parsed is not None:
        plan = replacement_plan(current, original, frozenset(settled))
        found = current.try_candidates((candidate for _, candidate in plan), current.then)
        if found is None:
            return progress
        settled.update(own for own, _ in plan[:found])
        progress = True
    return progress
