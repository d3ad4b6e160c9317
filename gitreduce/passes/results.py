"""Make a function return nothing: its result type goes, with the values it returns.

A function's result type and the values it returns pin each other: neither a
tree pass (one subtree at a time) nor the name pass can take one without the
other, and in an expression language (Rust) the returned local pins its own
declaration too. So a valid program keeps `fn f() -> Vec<T> { let v = ..; v }`
long after nothing in it matters. This is the generic cousin of C-Vise's
return-void: grammars that name the result type as a field lose it (Rust,
Go, TypeScript, Python), grammars that declare it in front (C, C++, Java) get
`void`. It matters most for pairs, whose seed must stay a valid program.
"""

from __future__ import annotations

from collections.abc import Iterator

import tree_sitter

from gitreduce.core import edits
from gitreduce.core.current import Current, deletion_edits
from gitreduce.lang.kinds import (
    DECLARED_TYPE_FIELD,
    NOT_A_TAIL,
    RESULT_FIELDS,
    RETURNS,
    TAIL_ENDINGS,
    is_function,
    is_identifier,
)
from gitreduce.passes.names import enclosing_unit, outermost_spans

VOID = b"void"


def _result_edit(function: tree_sitter.Node) -> edits.Edit | None:
    """The edit removing `function`'s result type, or None when it has none to lose."""
    for field_name in RESULT_FIELDS:
        result = function.child_by_field_name(field_name)
        if result is not None:
            arrow = result.prev_sibling
            if arrow is not None and arrow.type == "->":
                return edits.Edit(arrow.start_byte, result.end_byte)
            return edits.Edit(result.start_byte, result.end_byte)
    declared = function.child_by_field_name(DECLARED_TYPE_FIELD)
    if declared is None or declared.text == VOID:
        return None
    return edits.Edit(declared.start_byte, declared.end_byte, VOID)


def _own_descendants(body: tree_sitter.Node) -> Iterator[tree_sitter.Node]:
    """The nodes of `body`, nested functions and closures excluded (their returns are theirs)."""
    pending = list(body.children)
    while pending:
        node = pending.pop()
        yield node
        if not is_function(node):
            pending.extend(node.children)


def _tail(body: tree_sitter.Node) -> tree_sitter.Node | None:
    """An expression-language body's value: its last element when that is an expression."""
    elements = [child for child in body.named_children if "comment" not in child.type]
    if not elements:
        return None
    last = elements[-1]
    if last.type.endswith(NOT_A_TAIL) or not last.type.endswith(TAIL_ENDINGS):
        return None
    return last


def _returned_values(body: tree_sitter.Node) -> list[tree_sitter.Node]:
    values: list[tree_sitter.Node] = []
    for node in _own_descendants(body):
        if node.type in RETURNS:
            values.extend(child for child in node.named_children if "comment" not in child.type)
    return values


def _locals_of(
    values: list[tree_sitter.Node], body: tree_sitter.Node
) -> list[tuple[int, int]] | None:
    """Spans deleting every statement of `body` that mentions a name the values use.

    Mentions outside the body (a parameter's declaration, a global's) stay: the
    candidate only empties the body of the names. None when a mention in the
    body has no statement of its own to go with it.
    """
    names = {
        leaf.text for value in values for leaf in _own_descendants(value) if is_identifier(leaf)
    } | {value.text for value in values if is_identifier(value)}
    if not names:
        return None
    spans = []
    for node in _own_descendants(body):
        if not (is_identifier(node) and node.text in names):
            continue
        unit = enclosing_unit(node)
        if unit is None or not body.start_byte <= unit[0].start_byte < body.end_byte:
            return None
        spans.append((unit[0].start_byte, unit[0].end_byte))
    return spans


def _candidates_for(function: tree_sitter.Node, text: bytes) -> list[bytes]:
    """Largest first: result, values and the locals they name; result and values; result."""
    result = _result_edit(function)
    body = function.child_by_field_name("body")
    if result is None or body is None:
        return []
    values = _returned_values(body)
    tail = _tail(body)
    if tail is not None:
        values.append(tail)
    value_spans = [(value.start_byte, value.end_byte) for value in values]
    variants: list[list[tuple[int, int]]] = []
    locals_spans = _locals_of(values, body) if values else None
    if locals_spans is not None:
        variants.append(outermost_spans(value_spans + locals_spans))
    if values:
        variants.append(outermost_spans(value_spans))
    variants.append([])
    candidates: list[bytes] = []
    for spans in variants:
        candidate = edits.apply(text, [result, *deletion_edits(text, spans)])
        if candidate not in candidates:
            candidates.append(candidate)
    return candidates


def return_candidates(current: Current) -> Iterator[bytes]:
    """For each function that returns something, the candidates making it return nothing."""
    parsed = current.parsed
    assert parsed is not None
    pending = [parsed.tree.root_node]
    while pending:
        node = pending.pop()
        pending.extend(reversed(node.named_children))
        if is_function(node):
            yield from _candidates_for(node, parsed.text)


def delete_results(current: Current) -> bool:
    """Try each function in turn (re-deriving after every success); True if any changed."""
    return current.try_until_none(return_candidates)
