"""Delete the i-th parameter of a function together with the i-th argument of its calls.

Neither half is deletable alone (the call would no longer match), so tree
passes leave both; this pass finds functions and calls through the field
names tree-sitter grammars share (`parameters`, `arguments`, `function`,
`name`, `declarator`), which covers C, C++, Rust, Go, Java, JavaScript and
Python alike. A second variant keeps the parameter alive as a local variable
(`f(int a) {` becomes `f() { int a;`), C-Vise's param-to-local, so the body
may go on using it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import tree_sitter

from gitreduce import edits
from gitreduce.current import Current


def _identifier_text(node: tree_sitter.Node | None) -> bytes | None:
    while node is not None and node.child_count:
        node = node.child_by_field_name("name") or node.child_by_field_name("declarator")
    if node is None or "identifier" not in node.type:
        return None
    return node.text


def _elements(node: tree_sitter.Node) -> list[tree_sitter.Node]:
    return [child for child in node.named_children if "comment" not in child.type]


def element_span(node: tree_sitter.Node) -> tuple[int, int]:
    """The span deleting `node` from its comma-separated list, one comma included."""
    following, previous = node.next_sibling, node.prev_sibling
    if following is not None and following.type == ",":
        return node.start_byte, following.end_byte
    if previous is not None and previous.type == ",":
        return previous.start_byte, node.end_byte
    return node.start_byte, node.end_byte


def _body_opening(parameters: tree_sitter.Node) -> int | None:
    """Byte offset just after the `{` of the body of the function owning `parameters`."""
    node = parameters.parent
    while node is not None:
        body = node.child_by_field_name("body")
        if body is not None:
            first = body.child(0)
            if first is not None and first.type == "{":
                return first.end_byte
            return None
        node = node.parent
    return None


@dataclass
class _Function:
    parameter_lists: list[tree_sitter.Node] = field(default_factory=list)
    argument_lists: list[tree_sitter.Node] = field(default_factory=list)


def _functions(root: tree_sitter.Node) -> dict[bytes, _Function]:
    found: dict[bytes, _Function] = {}
    pending = [root]
    while pending:
        node = pending.pop()
        pending.extend(node.named_children)
        parameters = node.child_by_field_name("parameters")
        if parameters is not None:
            name = _identifier_text(node.child_by_field_name("name")) or _identifier_text(
                node.child_by_field_name("declarator")
            )
            if name is not None:
                found.setdefault(name, _Function()).parameter_lists.append(parameters)
        arguments = node.child_by_field_name("arguments")
        if arguments is not None:
            name = _identifier_text(
                node.child_by_field_name("function") or node.child_by_field_name("name")
            )
            if name is not None:
                found.setdefault(name, _Function()).argument_lists.append(arguments)
    return found


def parameter_candidates(current: Current) -> Iterator[bytes]:
    """For each function and position: drop the parameter and its arguments; then as a local."""
    parsed = current.parsed
    assert parsed is not None
    text = parsed.text
    functions = _functions(parsed.tree.root_node)
    for name in sorted(functions):
        function = functions[name]
        if not function.parameter_lists:
            continue
        arity = max(len(_elements(p)) for p in function.parameter_lists)
        for position in range(arity):
            deletions = [
                edits.Edit(*element_span(_elements(lst)[position]))
                for lst in function.parameter_lists + function.argument_lists
                if len(_elements(lst)) > position
            ]
            yield edits.apply(text, deletions)
            local = _as_local(function, position, deletions)
            if local is not None:
                yield edits.apply(text, local)


def _as_local(
    function: _Function, position: int, deletions: list[edits.Edit]
) -> list[edits.Edit] | None:
    for parameters in function.parameter_lists:
        elements = _elements(parameters)
        opening = _body_opening(parameters)
        if opening is not None and len(elements) > position and elements[position].text:
            declaration = b" " + (elements[position].text or b"") + b";"
            return [*deletions, edits.Edit(opening, opening, declaration)]
    return None


def delete_parameters(current: Current) -> bool:
    """Try every function's parameters in turn, re-deriving after each success."""
    progress = False
    while (
        current.parsed is not None
        and current.try_candidates(parameter_candidates(current)) is not None
    ):
        progress = True
    return progress
