"""In-token reduction (T-Rec): long names to short ones and string literals emptied,
for readability and bytes once no token can go.

Token-level passes leave `compute_checksum_of_buffer` as long as it was; a
reader of the result wants `a`. Each name is renamed everywhere at once (one
test per name, the longest first), to the shortest name no token of the
program spells; a name the program does not own (a library function, a
macro from a header) fails its test and keeps its spelling. String literals
lose their contents where the test agrees.
"""

from __future__ import annotations

import itertools
import string
from collections.abc import Iterator

import tree_sitter

from gitreduce.core import edits
from gitreduce.core.current import Current
from gitreduce.lang.kinds import is_identifier

# Two-letter words that are keywords somewhere (C, Rust, Python, Go, Lua, OCaml...).
KEYWORDS = frozenset({b"as", b"do", b"fn", b"go", b"if", b"in", b"is", b"of", b"or", b"to"})


def _short_names(taken: set[bytes]) -> Iterator[bytes]:
    """Names of one letter, then two, that no token spells and no language reserves."""
    letters = string.ascii_lowercase.encode()
    for length in (1, 2, 3):
        for letters_ in itertools.product(letters, repeat=length):
            name = bytes(letters_)
            if name not in taken and name not in KEYWORDS:
                yield name


def _leaves(root: tree_sitter.Node) -> list[tree_sitter.Node]:
    found = []
    pending = [root]
    while pending:
        node = pending.pop()
        if node.child_count == 0:
            found.append(node)
        pending.extend(node.children)
    return found


def _string_contents(node: tree_sitter.Node) -> tuple[int, int] | None:
    """The bytes between a string literal's quotes, when it has any."""
    if "string" not in node.type or node.child_count or node.parent is None:
        return None
    parent = node.parent
    if "string" not in parent.type or len(parent.children) < 3:
        return None
    first, last = parent.children[0], parent.children[-1]
    if first.is_named or last.is_named or first.text != last.text:
        return None
    if node.start_byte < first.end_byte or node.end_byte > last.start_byte:
        return None
    return first.end_byte, last.start_byte


def _plan(current: Current, refused: set[bytes]) -> list[tuple[bytes, list[edits.Edit]]]:
    """(what is changed, the edits) per name not refused yet, longest first, to the next
    short name; then per string literal that still has contents."""
    parsed = current.parsed
    assert parsed is not None
    leaves = _leaves(parsed.tree.root_node)
    taken = {leaf.text or b"" for leaf in leaves}
    occurrences: dict[bytes, list[tree_sitter.Node]] = {}
    for leaf in leaves:
        if is_identifier(leaf):
            occurrences.setdefault(leaf.text or b"", []).append(leaf)
    plan = []
    fresh = _short_names(taken)
    for name in sorted(occurrences.keys() - refused, key=lambda name: (-len(name), name)):
        short = next(fresh, None)
        if short is None or len(short) >= len(name):
            continue
        plan.append(
            (
                name,
                [edits.Edit(leaf.start_byte, leaf.end_byte, short) for leaf in occurrences[name]],
            )
        )
    contents = {_string_contents(leaf) for leaf in leaves}
    for span in sorted(span for span in contents if span is not None and span[0] < span[1]):
        key = b"\0" + parsed.text[span[0] : span[1]]  # no name starts with a NUL
        if key not in refused:
            plan.append((key, [edits.Edit(*span)]))
    return plan


def _renames(key: bytes, changes: list[edits.Edit]) -> tuple[tuple[bytes, bytes], ...]:
    """The name a plan entry respells everywhere (none for a string literal emptied)."""
    if key.startswith(b"\0") or not changes:
        return ()
    return ((key, changes[0].replacement),)


def rename(current: Current) -> bool:
    """Take the first interesting renaming, plan again, until none is; True if any.

    What was tried and refused (a library function's name) is not tried again
    under another short name.
    """
    refused: set[bytes] = set()
    progress = False
    while current.parsed is not None:
        plan = _plan(current, refused)
        text = current.text
        found = current.try_candidates(
            (edits.apply(text, changes, renames=_renames(key, changes)) for key, changes in plan),
            current.then,
        )
        if found is None:
            return progress
        refused.update(key for key, _ in plan[:found])
        progress = True
    return progress
