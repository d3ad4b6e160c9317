"""Structure form conversion (SFC): a statement rewritten into a smaller form of another
kind, where no deletion of its own tokens leads.

Deletions and hoisting already turn an `if`/`else` into either branch or into
its `if` alone, and a loop into its body. What they cannot reach is a form
that spells the construct with a different keyword: `for (; c;) s` keeps its
two `;` for good, while `while (c) s` says the same with two tokens fewer;
and an `if (c) s` or `while (c) s` whose statement the bug does not need
keeps its condition only as an expression statement `c;`, which hoisting
never offers (an expression does not stand where a statement stands).
Conversions are found by field names (`condition`, `body`), so every grammar
whose `for` has a condition gets them (C, C++, Java, JavaScript, C#...); the
syntax check drops a conversion the grammar does not spell that way.

A variable declared without a value becomes a parameter of the one function
that uses it, when that function has none: `int f() { int a; ... }` (the
declaration in any block of the body) and
`int a; int f() { ... a ... }` both become `int f(int a) { ... }`. A
global nothing uses goes into each such function in turn: in a pair's seed
it is the variant's change that uses it (a fuzzer's `g = g--;`), and the
seed's edit is carried over to the variant, whose use then reads the
parameter; in a single program the sweeps have deleted such a global
unless the test needs it. The
declaration's own text is the parameter's once its keyword and `;` go (C,
C++ and Java `int a`, Rust `a: i32`, Go `a int`, JavaScript `a`), so every
grammar spells it alike; what is left is one token shorter (two where the
keyword goes too). Parameter-to-local (`parameters`) is the reverse and
larger, so the two never undo each other. An uninitialised value either way:
the compiler, or the test, judges whether that matters.

A record whose fields are all named and whose field names nothing else
spells becomes the same record with positional fields: Rust's `struct S {
a: A, b: B }` as `struct S(A, B);` and an enum variant's `V { a: A }` as
`V(A)`. A field's name and `:` are what deletion can never take (the field
would no longer parse), and the positional form says the same without them.
"""

from __future__ import annotations

from collections.abc import Iterator

import tree_sitter

from gitreduce.core import edits
from gitreduce.core.current import Current, deletion_edits
from gitreduce.lang.kinds import BLOCK_LIKE, VARIABLE_DECLARATIONS, is_function
from gitreduce.passes.identifiers import VALUE_KIND, identifier_names, parameter_list

CONDITIONAL_WORDS = ("if", "while", "for")
# A record's body of named fields, and what closes its positional form per record kind:
# Rust's only (`struct S(A, B);`, a variant's `V(A, B)`)
NAMED_FIELDS = "field_declaration_list"
POSITIONAL_CLOSING = {"struct_item": b");", "enum_variant": b")"}
# What a declaration may not hold to become a parameter as it is spelled: a value
# (`= 1`), a second name (`int a, b;`), a function's own parameters.
NOT_A_PARAMETER = (b"=", b",", b"(")


def _with_conditions(root: tree_sitter.Node) -> Iterator[tree_sitter.Node]:
    """Conditionals and loops with a `condition` field, outermost first: statements,
    or expressions in the grammars where they are (Rust), but no `c ? a : b`."""
    pending = [root]
    while pending:
        node = pending.pop()
        pending.extend(reversed(node.named_children))
        kind = node.type
        if any(word in kind for word in CONDITIONAL_WORDS) and node.child_by_field_name(
            "condition"
        ):
            yield node


def _bare(condition: tree_sitter.Node) -> tree_sitter.Node:
    """The expression inside a condition's own parentheses (C's `parenthesized_expression`)."""
    inner = condition.named_children
    if condition.children and condition.children[0].type == "(" and len(inner) == 1:
        return inner[0]
    return condition


def _forms(statement: tree_sitter.Node, text: bytes) -> list[bytes]:
    condition = statement.child_by_field_name("condition")
    assert condition is not None
    expression = _bare(condition)
    spelled = text[expression.start_byte : expression.end_byte]
    forms = [spelled + b";"]
    body = statement.child_by_field_name("body")
    if "for" in statement.type and body is not None:
        forms.insert(0, b"while (" + spelled + b") " + text[body.start_byte : body.end_byte])
    return forms


def _variable_declaration(node: tree_sitter.Node) -> bool:
    """A declaration of one variable without a value, spelled so it reads as a parameter
    once its keyword and `;` go."""
    kind = node.type
    if not kind.endswith("declaration"):
        return False
    if kind != "declaration" and not any(word in kind for word in VARIABLE_DECLARATIONS):
        return False
    if any("storage_class" in child.type for child in node.children):
        return False  # `static`, `extern`: no parameter may say that
    spelled = node.text or b""
    return not any(mark in spelled for mark in NOT_A_PARAMETER)


def _as_parameter(declaration: tree_sitter.Node, text: bytes) -> bytes:
    """The declaration's text without its declaring keyword (`let`, `var`) and its `;`."""
    start, end = declaration.start_byte, declaration.end_byte
    first, last = declaration.children[0], declaration.children[-1]
    if not first.is_named and first.text and first.text.isalpha():
        start = first.end_byte
    if last.type == ";":
        end = last.start_byte
    return text[start:end].strip()


def _declared_name(declaration: tree_sitter.Node) -> bytes | None:
    """The one value name a declaration spells, or None."""
    names = [name for name in identifier_names(declaration).values() if VALUE_KIND in name.kinds]
    return names[0].text if len(names) == 1 else None


def _without_parameters(root: tree_sitter.Node) -> list[tuple[tree_sitter.Node, tree_sitter.Node]]:
    """(function, its parameter list) for each function with a body that takes no
    parameter (C's `(void)` included), in source order."""
    found = []
    pending = [root]
    while pending:
        node = pending.pop()
        pending.extend(reversed(node.named_children))
        parameters = parameter_list(node) if is_function(node) else None
        if parameters is not None and _takes_none(parameters):
            found.append((node, parameters))
    return found


def _takes_none(parameters: tree_sitter.Node) -> bool:
    """An empty list that opens with its own bracket (`()`, not Rust's `||`), or `(void)`."""
    if not parameters.children or parameters.children[0].type != "(":
        return False
    elements = [child for child in parameters.named_children if "comment" not in child.type]
    return not elements or (len(elements) == 1 and elements[0].text == b"void")


def _into(parameters: tree_sitter.Node, parameter: bytes) -> edits.Edit:
    """The edit that makes `parameter` the list's only element."""
    elements = parameters.named_children
    if elements:  # C's `void`
        return edits.Edit(elements[0].start_byte, elements[0].end_byte, parameter)
    opening = parameters.children[0]
    return edits.Edit(opening.end_byte, opening.end_byte, parameter)


def _locals(body: tree_sitter.Node | None) -> Iterator[tree_sitter.Node]:
    """The declarations a function's body holds in its blocks, nested ones too (the
    parameter then reaches further than the block did), outside inner functions."""
    pending = [body] if body is not None else []
    while pending:
        node = pending.pop()
        for child in reversed(node.named_children):
            if is_function(child):
                continue
            if child.parent is not None and _in_block(child) and _variable_declaration(child):
                yield child
            else:
                pending.append(child)


def _in_block(node: tree_sitter.Node) -> bool:
    """Whether `node` is a statement of a block (Go's `statement_list` included)."""
    parent = node.parent
    return parent is not None and parent.type.endswith((*BLOCK_LIKE, "statement_list"))


def _moves(root: tree_sitter.Node) -> Iterator[tuple[tree_sitter.Node, tree_sitter.Node]]:
    """(declaration, parameter list) pairs: each local of a function that takes no
    parameter, then each global that only one such function uses, or that nothing uses
    (into each such function, the last first)."""
    functions = _without_parameters(root)
    for function, parameters in functions:
        for declaration in _locals(function.child_by_field_name("body")):
            if _declared_name(declaration) is not None:
                yield declaration, parameters
    names = identifier_names(root)
    for declaration in root.named_children:
        if not _variable_declaration(declaration):
            continue
        name = _declared_name(declaration)
        if name is None:
            continue
        uses = [
            leaf
            for leaf in names[name].leaves
            if not declaration.start_byte <= leaf.start_byte < declaration.end_byte
        ]
        if not uses:
            for _, parameters in reversed(functions):
                yield declaration, parameters
            continue
        users = [
            (function, parameters)
            for function, parameters in functions
            if all(function.start_byte <= use.start_byte < function.end_byte for use in uses)
        ]
        if users:
            yield declaration, users[-1][1]  # the innermost, should functions nest


def parameter_candidates(current: Current) -> Iterator[bytes]:
    """Each variable declared without a value moved into the empty parameter list of the
    one function that uses it."""
    parsed = current.parsed
    assert parsed is not None
    text = parsed.text
    for declaration, parameters in _moves(parsed.tree.root_node):
        parameter = _as_parameter(declaration, text)
        if not parameter:
            continue
        removed = deletion_edits(text, [(declaration.start_byte, declaration.end_byte)])
        candidate = edits.apply(text, [*removed, _into(parameters, parameter)])
        if len(candidate) < len(text):
            yield candidate


def _named_records(root: tree_sitter.Node) -> Iterator[tuple[tree_sitter.Node, bytes]]:
    """Each record whose fields are all named (Rust's `struct S { a: A }`, an enum
    variant's `V { a: A }`), with what closes its positional form; not one with a
    `where` clause, which the positional form spells after its fields."""
    pending = [root]
    while pending:
        node = pending.pop()
        pending.extend(reversed(node.named_children))
        closing = POSITIONAL_CLOSING.get(node.type)
        if closing is None:
            continue
        body = node.child_by_field_name("body")
        if body is None or body.type != NAMED_FIELDS:
            continue
        if not any(child.type == "where_clause" for child in node.children):
            yield body, closing


def record_candidates(current: Current) -> Iterator[bytes]:
    """Each record with named fields as the same record with positional ones, where no
    field name is spelled anywhere else (no `s.a`, no `S { a: 1 }`): `struct S { a: A,
    b: B }` as `struct S(A, B);`, two tokens a field fewer, one more for the `;`."""
    parsed = current.parsed
    assert parsed is not None
    text = parsed.text
    names = identifier_names(parsed.tree.root_node)
    for body, closing in _named_records(parsed.tree.root_node):
        fields = [child for child in body.named_children if "comment" not in child.type]
        spans = [
            (field.child_by_field_name("name"), field.child_by_field_name("type"))
            for field in fields
        ]
        named = [(name, kind) for name, kind in spans if name is not None and kind is not None]
        if not named or len(named) != len(fields):
            continue
        if any(len(names[name.text or b""].leaves) > 1 for name, _ in named):
            continue
        opening, ending = body.children[0], body.children[-1]
        changes = [edits.Edit(opening.start_byte, opening.end_byte, b"(")]
        changes += [edits.Edit(name.start_byte, kind.start_byte) for name, kind in named]
        changes.append(edits.Edit(ending.start_byte, ending.end_byte, closing))
        candidate = edits.apply(text, changes)
        if len(candidate) < len(text):
            yield candidate


def conversion_candidates(current: Current) -> Iterator[bytes]:
    """Each loop with a condition as a `while` over it, and each conditional statement
    as its condition alone, outermost first; then each declaration as a parameter; then
    each record with named fields as one with positional fields."""
    parsed = current.parsed
    assert parsed is not None
    text = parsed.text
    for statement in _with_conditions(parsed.tree.root_node):
        for form in _forms(statement, text):
            edit = edits.Edit(statement.start_byte, statement.end_byte, form)
            candidate = edits.apply(text, [edit])
            if len(candidate) < len(text):
                yield candidate
    yield from parameter_candidates(current)
    yield from record_candidates(current)


def convert_structures(current: Current) -> bool:
    """Take the first interesting conversion, derive again, until none is; True if any."""
    return current.try_until_none(conversion_candidates)
