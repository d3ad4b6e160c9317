"""A declaration nothing refers to, made an alias of one type it names.

A compiler that crashes while it checks a type (instantiating a generic,
substituting a default argument, laying out a vector) needs the type, not
the function around it: `fn f() { size_of::<R<1024>>(); }` fails the way
`type T = R<1024>;` does. Deletion cannot get there, since no part of the
function may go without taking the type with it, and hoisting cannot either,
since a type does not stand where an item stands. So each top-level
declaration whose names nothing else uses is offered as the grammar's alias
of each of the outermost types inside it (biggest first): Rust and C++ `type
N = T;`/`using N = T;`, C `typedef T N;`, Go `type N T`. A grammar with no
alias form gets none.

Which nodes are types comes from the grammar: its type supertype (Rust's
`_type`, C's `type_specifier`, Go's `_simple_type`), or, for a grammar that
ships no supertypes (C++), a node in a `type` field or a spelled
`type_descriptor` (`int *` in a template argument). The alias keeps the
type's own bytes, and the declaration's text before and after it is replaced
by the alias's, so inside PPR the edits carry to the variant around whatever
the variant changed in the type. Whether the compiler still checks the type
the same way inside an alias is the test's to say; each candidate is smaller
in bytes than the program it came from.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator

import tree_sitter

from gitreduce.core import edits
from gitreduce.core.current import Current
from gitreduce.lang.grammars import Grammar
from gitreduce.passes.identifiers import Name, identifier_names
from gitreduce.passes.types import ALIAS_KINDS

# How each grammar spells an alias: the text before and after the type, `{}` its name.
ALIAS_FORMS: dict[str, tuple[str, str]] = {
    "rust": ("type {} = ", ";"),
    "cpp": ("using {} = ", ";"),
    "c": ("typedef ", " {};"),
    "go": ("type {} ", ""),
}
TYPE_SUPERTYPES = frozenset({"_type", "type_specifier", "_simple_type"})
# A type spelled whole with its declarator, where a grammar names no type supertype.
_SPELLED_TYPE = "type_descriptor"
# The largest types of a declaration tried: the smaller ones are mostly their parts.
TYPES_PER_DECLARATION = 3
# A language's own types (`int`, `unsigned long`, `i32`): no crash in checking a type
# needs an alias of one, and every function names some (a test each, for nothing).
_BUILT_IN = frozenset({"primitive_type", "sized_type_specifier"})


def _is_type(node: tree_sitter.Node, field: str | None, grammar: Grammar) -> bool:
    if grammar.supertypes_of:
        return bool(grammar.supertypes_of.get(node.type, frozenset()) & TYPE_SUPERTYPES)
    return node.type == _SPELLED_TYPE or field == "type"


def _outermost_types(item: tree_sitter.Node, grammar: Grammar) -> list[tree_sitter.Node]:
    """The types inside `item` that no other type inside it holds, in source order."""
    found = []
    pending: list[tuple[tree_sitter.Node, str | None]] = [
        (child, item.field_name_for_child(index)) for index, child in enumerate(item.children)
    ]
    pending.reverse()
    while pending:
        node, field = pending.pop()
        if node.is_named and _is_type(node, field, grammar):
            found.append(node)
            continue
        inner = [(child, node.field_name_for_child(i)) for i, child in enumerate(node.children)]
        pending.extend(reversed(inner))
    return found


def _unreferenced(root: tree_sitter.Node, names: dict[bytes, Name]) -> list[tree_sitter.Node]:
    """Top-level declarations none of whose names (those first seen inside them) occurs
    outside them, aliases aside (making one an alias again gains nothing)."""
    items = [item for item in root.named_children if item.type not in ALIAS_KINDS]
    starts = [item.start_byte for item in items]
    referenced: set[int] = set()
    for name in names.values():
        owner = bisect_right(starts, name.first.start_byte) - 1
        if owner < 0 or name.first.start_byte >= items[owner].end_byte:
            continue
        item = items[owner]
        if any(not item.start_byte <= leaf.start_byte < item.end_byte for leaf in name.leaves):
            referenced.add(owner)
    return [item for index, item in enumerate(items) if index not in referenced]


def _free_name(names: set[bytes]) -> bytes:
    """`T`, else `T0`, `T1`, ...: a name the program does not use."""
    candidate, counter = b"T", 0
    while candidate in names:
        candidate = b"T%d" % counter
        counter += 1
    return candidate


def alias_candidates(current: Current) -> Iterator[bytes]:
    """Each unreferenced top-level declaration as an alias of one of its largest types."""
    parsed = current.parsed
    syntax = current.syntax
    if parsed is None or syntax is None:
        return
    form = ALIAS_FORMS.get(syntax.grammar.name)
    if form is None:
        return
    text = parsed.text
    root = parsed.tree.root_node
    names = identifier_names(root)
    alias = _free_name(set(names))
    before, after = (part.replace("{}", alias.decode()).encode() for part in form)
    for item in _unreferenced(root, names):
        types = sorted(
            (node for node in _outermost_types(item, syntax.grammar) if node.type not in _BUILT_IN),
            key=lambda node: node.end_byte - node.start_byte,
            reverse=True,
        )
        spelled: set[bytes] = set()
        for node in types:
            own = text[node.start_byte : node.end_byte]
            if own in spelled:
                continue
            spelled.add(own)
            if len(spelled) > TYPES_PER_DECLARATION:
                break
            candidate = edits.apply(
                text,
                [
                    edits.Edit(item.start_byte, node.start_byte, before),
                    edits.Edit(node.end_byte, item.end_byte, after),
                ],
            )
            if len(candidate) < len(text):
                yield candidate


def alias_declarations(current: Current) -> bool:
    """Take the first interesting alias, derive again, until none is; True if any."""
    return current.try_until_none(alias_candidates)
