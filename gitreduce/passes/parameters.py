"""Delete the i-th parameter of a function together with the i-th argument of its uses.

Neither half is deletable alone (the call would no longer match), so tree
passes leave both; this pass finds functions and calls through the field
names tree-sitter grammars share (`parameters`, `arguments`, `function`,
`name`, `declarator`), which covers C, C++, Rust, Go, Java, JavaScript and
Python alike. A second variant keeps the parameter alive as a local variable
(`f(int a) {` becomes `f() { int a;`), C-Vise's param-to-local, so the body
may go on using it. Type parameter lists (`template <typename T>`, Rust's
`<T>`) pair with the type arguments of uses (`f<B>(...)`, and `S<B>` in a
Rust or Go type); their variant replaces the parameter's uses by the
program's shortest built-in type.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import tree_sitter

from gitreduce.core import edits
from gitreduce.core.current import Current
from gitreduce.lang.kinds import (
    ARGUMENT_FIELDS,
    PARAMETER_FIELDS,
    VARIABLE_DECLARATIONS,
    VARIABLE_KEYWORDS,
)


def _identifier_text(node: tree_sitter.Node | None) -> bytes | None:
    """The name a (possibly qualified or generic) callee or declarator comes down to."""
    while node is not None and node.child_count:
        node = (
            node.child_by_field_name("name")
            or node.child_by_field_name("declarator")
            or node.child_by_field_name("function")
        )
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


def _family(parameters_or_arguments: tree_sitter.Node) -> str:
    """Value lists `f(a, b)` and type lists `f<T, U>` of one name are paired separately."""
    kind = parameters_or_arguments.type
    return "type" if "template" in kind or "type_" in kind else "value"


def _declared_name(owner: tree_sitter.Node, parameters: tree_sitter.Node) -> bytes | None:
    """The name a node with a parameter list declares; a template's is its inner declaration's."""
    name = _identifier_text(owner.child_by_field_name("name")) or _identifier_text(
        owner.child_by_field_name("declarator")
    )
    if name is None and _family(parameters) == "type":
        for child in owner.named_children:
            name = _identifier_text(child.child_by_field_name("name")) or _identifier_text(
                child.child_by_field_name("declarator")
            )
            if name is not None:
                break
    return name


def _functions(root: tree_sitter.Node) -> dict[tuple[bytes, str], _Function]:
    found: dict[tuple[bytes, str], _Function] = {}
    pending = [root]
    while pending:
        node = pending.pop()
        pending.extend(node.named_children)
        for field_name in PARAMETER_FIELDS:
            parameters = node.child_by_field_name(field_name)
            name = _declared_name(node, parameters) if parameters is not None else None
            if parameters is not None and name is not None:
                key = (name, _family(parameters))
                found.setdefault(key, _Function()).parameter_lists.append(parameters)
        for field_name in ARGUMENT_FIELDS:
            arguments = node.child_by_field_name(field_name)
            name = _identifier_text(
                node.child_by_field_name("function")
                or node.child_by_field_name("name")
                or node.child_by_field_name("type")
            )
            if arguments is not None and name is not None:
                key = (name, _family(arguments))
                found.setdefault(key, _Function()).argument_lists.append(arguments)
    return found


def _smallest_type(root: tree_sitter.Node) -> bytes | None:
    """The shortest built-in type name in the program (`int`, `i8`), to stand in for a
    removed type parameter."""
    best: bytes | None = None
    pending = [root]
    while pending:
        node = pending.pop()
        if node.type == "primitive_type" and node.text:
            if best is None or (len(node.text), node.text) < (len(best), best):
                best = node.text
        else:
            pending.extend(node.named_children)
    return best


def _type_parameter_name(element: tree_sitter.Node) -> bytes | None:
    leaves = [n for n in _identifier_leaves(element)]
    return leaves[-1].text if leaves else None


def _identifier_leaves(node: tree_sitter.Node) -> list[tree_sitter.Node]:
    found, pending = [], [node]
    while pending:
        current = pending.pop()
        if current.child_count == 0:
            if "identifier" in current.type:
                found.append(current)
        else:
            pending.extend(reversed(current.children))
    return found


def _inline_type_parameter(
    function: _Function, position: int, deletions: list[edits.Edit], stand_in: bytes
) -> list[edits.Edit] | None:
    """Deletions plus every use of the removed type parameter replaced by `stand_in`."""
    for parameters in function.parameter_lists:
        elements = _elements(parameters)
        owner = parameters.parent
        if owner is None or len(elements) <= position:
            continue
        name = _type_parameter_name(elements[position])
        if name is None:
            continue
        removed = elements[position]
        uses = [
            edits.Edit(leaf.start_byte, leaf.end_byte, stand_in)
            for leaf in _identifier_leaves(owner)
            if leaf.text == name
            and not removed.start_byte <= leaf.start_byte < removed.end_byte
            and not parameters.start_byte <= leaf.start_byte < parameters.end_byte
        ]
        if uses:
            return [*deletions, *uses]
    return None


def parameter_candidates(current: Current) -> Iterator[bytes]:
    """For each function and position: drop the parameter and its arguments; then as a local."""
    parsed = current.parsed
    assert parsed is not None
    text = parsed.text
    functions = _functions(parsed.tree.root_node)
    stand_in = _smallest_type(parsed.tree.root_node)
    keyword = _declaring_keyword(parsed.tree.root_node) or _grammar_keyword(current)
    for key in sorted(functions):
        function = functions[key]
        if not function.parameter_lists:
            continue
        arity = max(len(_elements(p)) for p in function.parameter_lists)
        for position in range(arity):
            deletions = [
                edits.Edit(*element_span(_elements(lst)[position]))
                for lst in function.parameter_lists + function.argument_lists
                if len(_elements(lst)) > position
            ]
            variants: list[list[edits.Edit] | None] = [deletions]
            if key[1] == "value":
                variants.append(_as_local(function, position, deletions, keyword))
            elif stand_in is not None:
                variants.append(_inline_type_parameter(function, position, deletions, stand_in))
            for variant in variants:
                outermost = _outermost(variant) if variant is not None else None
                if outermost is not None:
                    yield edits.apply(text, outermost)


def _declaring_keyword(root: tree_sitter.Node) -> bytes | None:
    """The keyword the program declares variables with (`let`, `var`, `local`), if it
    has one: a parameter's text (`a`, `a: i32`, `a int`) only declares something after
    it. None where declarations start with a type (C, Java): the text is one already.
    `const` is passed over, since it wants a value."""
    pending = [root]
    while pending:
        node = pending.pop()
        pending.extend(node.named_children)
        if (
            not node.type.endswith("declaration")
            or not any(kind in node.type for kind in VARIABLE_DECLARATIONS)
            or node.child_count < 2
        ):
            continue
        first = node.children[0]
        if not first.is_named and first.text and first.text.isalpha() and first.text != b"const":
            return first.text
    return None


def _grammar_keyword(current: Current) -> bytes | None:
    """A variable-declaring keyword the grammar has, for programs that show none."""
    if current.syntax is None:
        return None
    language = current.syntax.grammar.language
    for keyword in VARIABLE_KEYWORDS:
        if language.id_for_node_kind(keyword, False):
            return keyword.encode()
    return None


def _as_local(
    function: _Function, position: int, deletions: list[edits.Edit], keyword: bytes | None
) -> list[edits.Edit] | None:
    for parameters in function.parameter_lists:
        elements = _elements(parameters)
        opening = _body_opening(parameters)
        if opening is not None and len(elements) > position and elements[position].text:
            declared = elements[position].text or b""
            if keyword is not None:
                declared = keyword + b" " + declared
            declaration = b" " + declared + b";"
            return [*deletions, edits.Edit(opening, opening, declaration)]
    return None


def _outermost(candidate: list[edits.Edit]) -> list[edits.Edit] | None:
    """The edits not inside another one (`f(f(1, 2), 3)` deletes an argument holding a
    call whose own argument is deleted too); None when two edits cross."""
    result: list[edits.Edit] = []
    for edit in sorted(candidate, key=lambda e: (e.start, -e.end)):
        if result and edit.start < result[-1].end:
            if edit.end > result[-1].end:
                return None
            continue
        result.append(edit)
    return result


def delete_parameters(current: Current) -> bool:
    """Try every function's parameters in turn, re-deriving after each success."""
    return current.try_until_none(parameter_candidates)
