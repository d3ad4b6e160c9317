"""Code moved to its one use: a statement's expression folded into the next statement,
a function called once inlined where it is called.

Both reach programs that no deletion can: what they remove is the seam between two
pieces of code the bug needs, not a piece. A statement `r();` followed by `b &= v;`
holds the call and the use apart; `b &= r();` says both in two tokens fewer (the
statement's `;` and the name it replaced), and a global that only fed the use is then
free for the sweeps. Folding goes forward only (the expression into the statement
after it), which keeps the order in which the two are evaluated wherever the
replaced value is read before anything else of its statement.

A function defined once and called once costs its name twice and its signature's
keywords; inlined at the call, the definition goes. Where the call is a statement of
its own, the body takes its place as a block whose parameters are locals holding the
arguments (`{ int a = x; ... }`: C-Vise's clang_delta `simple-inline` does this for C
with C's semantic checks; here the test judges). In C++ the call can also become an
immediately invoked lambda, `[](auto a) { ... }(x)`, which is the only form a
function template's body keeps its meaning in: the lambda's `auto` parameters make
its call operator a template, as the function was. A function template costs its
`template <typename T>` header besides, so the lambda is six tokens smaller.

Candidates are found by node kinds and field names that the grammars share
(`expression_statement`, `call_expression`'s `function` and `arguments`, a function's
`parameters` and `body`); the syntax check drops a form a grammar does not spell.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import tree_sitter

from gitreduce.core import edits
from gitreduce.core.current import Current, deletion_edits
from gitreduce.lang.kinds import BLOCK_LIKE, is_function
from gitreduce.lang.syntax import leaves
from gitreduce.passes.identifiers import VALUE_KIND, identifier_names, parameter_list

# A statement that is an expression and nothing else, in every grammar that has one.
EXPRESSION_STATEMENT = "expression_statement"
# Leaf kinds a folded expression may stand in for: a name read as a value, a number.
NUMBER_KINDS = ("number_literal", "integer_literal", "float_literal", "number", "integer")
# Fields under which a name is declared or called, not read: a fold must not replace it.
NOT_A_READ = ("declarator", "name", "pattern", "function", "left", "type")
# How each grammar declares a local that holds a parameter's argument, as a prefix to
# the parameter's own text (`int a`, `a: i32`, `a int`, `a`); C, C++, Java and C#
# need none.
LOCAL_KEYWORD = {"rust": b"let ", "javascript": b"let ", "typescript": b"let ", "go": b"var "}
# Grammars whose functions may become an immediately invoked lambda at their call.
LAMBDA_GRAMMARS = ("cpp",)
TEMPLATE = "template_declaration"
OPENING = ("(", "[", "{")
CLOSING = (")", "]", "}")
# What follows a name that is called or assigned to, not read.
NOT_READ_BEFORE = ("(", "=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=")

Span = tuple[int, int]
Fold = tuple[Span, Span, list[tree_sitter.Node]]
"""A fold: the statement's span, its expression's span, the leaves the expression may
replace in the statement after it."""


def _statements_with_followers(
    root: tree_sitter.Node,
) -> Iterator[tuple[tree_sitter.Node, tree_sitter.Node, tree_sitter.Node]]:
    """(expression statement, its expression, the statement after it), in source order."""
    pending = [root]
    while pending:
        node = pending.pop()
        pending.extend(reversed(node.named_children))
        if node.type != EXPRESSION_STATEMENT or not node.named_children:
            continue
        follower = node.next_named_sibling
        while follower is not None and "comment" in follower.type:
            follower = follower.next_named_sibling
        if follower is not None:
            yield node, node.named_children[0], follower


def _reads(statement: tree_sitter.Node) -> Iterator[tree_sitter.Node]:
    """The leaves of `statement` that read a value: names and numbers, in source order."""
    pending = [statement]
    while pending:
        node = pending.pop()
        if node.child_count:
            pending.extend(reversed(node.children))
            continue
        if node.type != VALUE_KIND and node.type not in NUMBER_KINDS:
            continue
        parent = node.parent
        if parent is not None and any(parent.child_by_field_name(f) == node for f in NOT_A_READ):
            continue
        yield node


def _token_statements(block: tree_sitter.Node) -> list[list[tree_sitter.Node]]:
    """A block's statements as runs of leaves, each ending at a `;` outside brackets;
    a run that holds a braced part (an `if`, a nested block) is left out."""
    runs: list[list[tree_sitter.Node]] = []
    run: list[tree_sitter.Node] = []
    depth = 0
    braced = False
    tokens = leaves(block)
    if len(tokens) < 2 or tokens[0].type != "{" or tokens[-1].type != "}":
        return []  # a block without braces (Python's): its statements do not end in `;`
    for leaf in tokens[1:-1]:
        run.append(leaf)
        kind = leaf.type
        if kind in OPENING:
            depth += 1
            braced = braced or kind == "{"
        elif kind in CLOSING:
            depth -= 1
        elif kind == ";" and depth == 0:
            if not braced:
                runs.append(run)
            run, braced = [], False
    return runs


def _broken_block_folds(root: tree_sitter.Node) -> Iterator[Fold]:
    """Folds where the grammar lost the statements: in a block whose parse has errors
    (C's implicit `int` swallows the next statement into a declaration), statements
    found by their `;` instead: (statement span, its expression's span, the leaves the
    expression may replace), for a statement that starts with a name."""
    pending = [root]
    while pending:
        node = pending.pop()
        pending.extend(reversed(node.named_children))
        if node.type not in BLOCK_LIKE or not node.has_error:
            continue
        runs = _token_statements(node)
        for first, then in itertools.pairwise(runs):
            if len(first) < 2 or first[0].type != VALUE_KIND:
                continue
            targets = [
                leaf
                for leaf, after in itertools.pairwise(then)
                if leaf.type == VALUE_KIND and after.type not in NOT_READ_BEFORE
            ]
            statement = (first[0].start_byte, first[-1].end_byte)
            yield statement, (first[0].start_byte, first[-2].end_byte), targets


def _tree_folds(root: tree_sitter.Node) -> Iterator[Fold]:
    for statement, expression, follower in _statements_with_followers(root):
        yield (
            (statement.start_byte, statement.end_byte),
            (expression.start_byte, expression.end_byte),
            list(_reads(follower)),
        )


def fold_candidates(current: Current) -> Iterator[bytes]:
    """Each expression statement deleted and its expression put in place of a value its
    next statement reads: `r(); b &= v;` as `b &= r();`."""
    parsed = current.parsed
    assert parsed is not None
    text = parsed.text
    root = parsed.tree.root_node
    offered: set[bytes] = set()
    for statement, expression, reads in itertools.chain(
        _tree_folds(root), _broken_block_folds(root)
    ):
        spelled = text[expression[0] : expression[1]]
        removed = deletion_edits(text, [statement])
        for read in reads:
            put = edits.Edit(read.start_byte, read.end_byte, spelled)
            if not _apart(removed, put):
                continue
            candidate = edits.apply(text, [*removed, put])
            if len(candidate) < len(text) and candidate not in offered:
                offered.add(candidate)
                yield candidate


def _apart(removed: list[edits.Edit], put: edits.Edit) -> bool:
    """Whether a deletion, widened to whole lines, leaves the edit it goes with alone."""
    return all(edit.end <= put.start or put.end <= edit.start for edit in removed)


def _function_name(function: tree_sitter.Node) -> tree_sitter.Node | None:
    """The identifier a function definition declares (in C and C++, inside its
    declarator), or None for a method, an operator, a lambda."""
    name = function.child_by_field_name("name")
    if name is None:
        declarator = function.child_by_field_name("declarator")
        name = declarator.child_by_field_name("declarator") if declarator is not None else None
    return name if name is not None and name.type == VALUE_KIND else None


def _definitions(root: tree_sitter.Node) -> Iterator[tuple[tree_sitter.Node, tree_sitter.Node]]:
    """(function, the whole definition: its template declaration where it has one) for
    each named function at the top of the file, in source order."""
    for node in root.named_children:
        function = node
        if node.type == TEMPLATE:
            inner = [child for child in node.named_children if is_function(child)]
            if len(inner) != 1:
                continue
            function = inner[0]
        if is_function(function) and _function_name(function) is not None:
            yield function, node


def _only_call(function: tree_sitter.Node, uses: list[tree_sitter.Node]) -> tree_sitter.Node | None:
    """The call expression of the one use of a function's name besides its definition,
    where that use calls it from outside its own body; else None."""
    name = _function_name(function)
    others = [use for use in uses if use != name]
    if len(others) != 1:
        return None
    use = others[0]
    call = use.parent
    if call is None or call.child_by_field_name("function") != use:
        return None
    if call.child_by_field_name("arguments") is None:
        return None
    if function.start_byte <= use.start_byte < function.end_byte:
        return None
    return call


def _parameters_and_arguments(
    function: tree_sitter.Node, call: tree_sitter.Node
) -> tuple[list[tree_sitter.Node], list[tree_sitter.Node]] | None:
    parameters = parameter_list(function)
    arguments = call.child_by_field_name("arguments")
    if parameters is None or arguments is None:
        return None
    declared = [p for p in parameters.named_children if "comment" not in p.type]
    if len(declared) == 1 and declared[0].text == b"void":
        declared = []
    passed = [a for a in arguments.named_children if "comment" not in a.type]
    return (declared, passed) if len(declared) == len(passed) else None


def _inside(body: tree_sitter.Node, text: bytes) -> bytes | None:
    """A braced body's text without its braces, or None for a body without braces."""
    if len(body.children) < 2 or body.children[0].type != "{" or body.children[-1].type != "}":
        return None
    return text[body.children[0].end_byte : body.children[-1].start_byte]


def _as_block(
    function: tree_sitter.Node, call: tree_sitter.Node, text: bytes, language: str
) -> edits.Edit | None:
    """The call's statement replaced by the body, each parameter a local holding its
    argument; None where the call is not a statement of its own."""
    statement = call.parent
    body = function.child_by_field_name("body")
    matched = _parameters_and_arguments(function, call)
    if statement is None or statement.type != EXPRESSION_STATEMENT or body is None:
        return None
    inner = _inside(body, text)
    if matched is None or inner is None:
        return None
    keyword = LOCAL_KEYWORD.get(language, b"")
    locals_ = b"".join(
        keyword + (parameter.text or b"") + b" = " + (argument.text or b"") + b"; "
        for parameter, argument in zip(*matched, strict=True)
    )
    return edits.Edit(statement.start_byte, statement.end_byte, b"{ " + locals_ + inner + b"}")


def _as_lambda(
    function: tree_sitter.Node, definition: tree_sitter.Node, call: tree_sitter.Node, text: bytes
) -> edits.Edit | None:
    """The called name replaced by a lambda taking the function's parameters, each type
    that is one of its template's parameters spelled `auto`."""
    parameters = parameter_list(function)
    body = function.child_by_field_name("body")
    callee = call.child_by_field_name("function")
    if parameters is None or body is None or callee is None:
        return None
    generic: set[bytes] = set()
    template_parameters = definition.child_by_field_name("parameters")
    if definition.type == TEMPLATE and template_parameters is not None:
        generic = {
            name
            for name, found in identifier_names(template_parameters).items()
            if "type_identifier" in found.kinds
        }
    start = parameters.start_byte
    spelled = edits.apply(
        text[start : parameters.end_byte],
        [
            edits.Edit(leaf.start_byte - start, leaf.end_byte - start, b"auto")
            for name, found in identifier_names(parameters).items()
            if name in generic
            for leaf in found.leaves
            if leaf.type == "type_identifier"
        ],
    )
    lambda_ = b"[]" + spelled + b" " + text[body.start_byte : body.end_byte]
    return edits.Edit(callee.start_byte, callee.end_byte, lambda_)


def inline_candidates(current: Current) -> Iterator[bytes]:
    """Each function called exactly once inlined at the call, its definition deleted: as
    a block where the call is a statement, as a lambda in C++."""
    parsed = current.parsed
    assert parsed is not None
    text = parsed.text
    root = parsed.tree.root_node
    assert current.syntax is not None
    language = current.syntax.grammar.name
    names = identifier_names(root)
    for function, definition in _definitions(root):
        name = _function_name(function)
        assert name is not None
        call = _only_call(function, names[name.text or b""].leaves)
        if call is None:
            continue
        removed = deletion_edits(text, [(definition.start_byte, definition.end_byte)])
        # a template's type parameters mean nothing at the call: only a lambda keeps them
        forms = [] if definition.type == TEMPLATE else [_as_block(function, call, text, language)]
        if language in LAMBDA_GRAMMARS:
            forms.append(_as_lambda(function, definition, call, text))
        for form in forms:
            if form is None or not _apart(removed, form):
                continue
            candidate = edits.apply(text, [*removed, form])
            if len(candidate) < len(text):
                yield candidate


def inlining_candidates(current: Current) -> Iterator[bytes]:
    """Functions inlined at their one call first (each takes a whole definition), then
    statements folded into the next."""
    yield from inline_candidates(current)
    yield from fold_candidates(current)


def inline_and_fold(current: Current) -> bool:
    """Take the first interesting candidate, derive again, until none is; True if any."""
    return current.try_until_none(inlining_candidates)
