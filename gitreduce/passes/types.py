"""Type names replaced: by their definition, or by the language's plain integer type.

Deletion stops where a declaration is still used, and a type name is used by
every declaration of its type. Two replacements (Vulcan's identifier
replacement, with a type as the stand-in) let such code go:

- A type alias (`typedef T N;` in C and C++, `using N = T;` in C++, `type N =
  T;` in Rust) inlined: every use of `N` becomes `T` and the alias goes, one
  candidate per alias. C-Vise's clang passes do this for C; here it follows
  the grammar.
- A type name the file does not define (`int8_t` from a header, or a
  primitive type other than the plain one) replaced everywhere by the plain
  integer type (`int`, `i32`): the header that defined it may then go in a
  later round.

Each candidate renames consistently in the whole text and is tried only when
smaller in bytes; the test decides whether the program still fails the same
way. Inside PPR the seed's edits are carried to the variant as every other
pass's are.
"""

from __future__ import annotations

from collections.abc import Iterator

import tree_sitter

from gitreduce.core import edits
from gitreduce.core.current import Current, deletion_edits
from gitreduce.lang.syntax import leaves

# The plain integer type per grammar, where a type name may stand for any type.
PLAIN_TYPE = {
    "c": b"int",
    "cpp": b"int",
    "rust": b"i32",
    "java": b"int",
    "go": b"int",
}
_TYPE_NAMES = frozenset({"type_identifier"})
# what `int8_t` or `size_t` is in tree-sitter's C: another type the plain one may replace
_PRIMITIVE = "primitive_type"
ALIAS_KINDS = frozenset({"type_definition", "alias_declaration", "type_item"})
# a type name after `struct`, `enum`... is a tag, not a type a plain one can replace
_TAGGED = frozenset(
    {"struct_specifier", "union_specifier", "enum_specifier", "class_specifier", "struct_item"}
)


def _alias(node: tree_sitter.Node, text: bytes) -> tuple[bytes, bytes] | None:
    """(name, type text) of an alias that names one type plainly, else None."""
    if node.type == "type_definition":  # typedef TYPE NAME;
        tokens = [leaf for leaf in leaves(node) if "comment" not in leaf.type]
        if len(tokens) < 4 or tokens[0].type != "typedef" or tokens[-1].type != ";":
            return None
        name = tokens[-2]
        if name.type not in ("type_identifier", "identifier"):
            return None
        aliased = text[tokens[1].start_byte : name.start_byte].strip()
        return (name.text or b"", aliased) if aliased else None
    name_node = node.child_by_field_name("name")
    aliased_node = node.child_by_field_name("type")
    if name_node is None or aliased_node is None:
        return None
    if node.child_by_field_name("type_parameters") is not None:
        return None
    return name_node.text or b"", aliased_node.text or b""


def _uses(root: tree_sitter.Node) -> dict[bytes, list[tree_sitter.Node]]:
    """Type-name and primitive-type leaves that are not tags, by their text."""
    found: dict[bytes, list[tree_sitter.Node]] = {}
    for leaf in leaves(root):
        parent = leaf.parent
        if (leaf.type in _TYPE_NAMES or leaf.type == _PRIMITIVE) and (
            parent is None or parent.type not in _TAGGED
        ):
            found.setdefault(leaf.text or b"", []).append(leaf)
    return found


def _aliases(root: tree_sitter.Node) -> Iterator[tree_sitter.Node]:
    pending = [root]
    while pending:
        node = pending.pop()
        if node.type in ALIAS_KINDS:
            yield node
        else:
            pending.extend(reversed(node.children))


def _defined(root: tree_sitter.Node) -> set[bytes]:
    """Type names the file declares itself (aliases, structs, classes, enums)."""
    names: set[bytes] = set()
    pending = [root]
    while pending:
        node = pending.pop()
        if node.type in ALIAS_KINDS or node.type in _TAGGED:
            for field in ("name", "declarator"):
                named = node.child_by_field_name(field)
                if named is not None and named.type in _TYPE_NAMES:
                    names.add(named.text or b"")
        pending.extend(node.children)
    return names


def type_candidates(current: Current, settled: frozenset[bytes]) -> list[tuple[bytes, bytes]]:
    """(type name, candidate) per name not `settled`: each alias inlined, then each type
    the file does not define made plain; only candidates smaller than the text."""
    parsed, syntax = current.parsed, current.syntax
    assert parsed is not None and syntax is not None
    text, root = parsed.text, parsed.tree.root_node
    uses = _uses(root)
    plan: list[tuple[bytes, bytes]] = []
    for alias in _aliases(root):
        named = _alias(alias, text)
        if named is None or named[0] in settled:
            continue
        name, aliased = named
        changes = deletion_edits(text, [(alias.start_byte, alias.end_byte)])
        gone = [(change.start, change.end) for change in changes]
        changes += [
            edits.Edit(use.start_byte, use.end_byte, aliased)
            for use in uses.get(name, [])
            if not any(start <= use.start_byte < end for start, end in gone)
        ]
        plan.append((name, edits.apply(text, changes)))
    plain = PLAIN_TYPE.get(syntax.grammar.name)
    if plain is not None:
        defined = _defined(root)
        for name, found in uses.items():
            if name in defined or name in settled or name == plain:
                continue
            changes = [edits.Edit(use.start_byte, use.end_byte, plain) for use in found]
            plan.append((name, edits.apply(text, changes)))
    return [(name, candidate) for name, candidate in plan if len(candidate) < len(text)]


def first_types(current: Current) -> list[bytes]:
    """The candidates `replace_types` tries first: its plan with nothing settled yet."""
    if current.parsed is None or current.syntax is None:
        return []
    return [candidate for _, candidate in type_candidates(current, frozenset())]


def replace_types(current: Current) -> bool:
    """Take the first interesting candidate, plan again, until none is; True if any.
    Names whose candidates failed are not tried again in this run (see
    `identifiers.replace_identifiers`)."""
    settled: set[bytes] = set()
    progress = False
    while current.parsed is not None and current.syntax is not None:
        plan = type_candidates(current, frozenset(settled))
        found = current.try_candidates((candidate for _, candidate in plan), current.then)
        if found is None:
            return progress
        settled.update(name for name, _ in plan[: found + 1])
        progress = True
    return progress
