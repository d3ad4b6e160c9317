"""A `{ ... }` body may become `;`: a definition turns into a declaration.

The second form also takes along what stands between the signature and the
body, such as a constructor's `: base(args)`, which a declaration may not carry.
"""

from __future__ import annotations

import itertools
import re

import pytest
from support import GATED_ONLY, Predicate, make_engine, nodes, parses_cleanly, reduce_text

from gitreduce.core.current import Current
from gitreduce.lang import grammars
from gitreduce.lang.syntax import Syntax
from gitreduce.passes.catalog import Catalog, Replacement
from gitreduce.passes.tree import TreeReducer, _declaration_endings


def first(language: str, text: bytes, kind: str, index: int = 0):
    return [node for node in nodes(language, text) if node.type == kind][index]


def reducer_for(text: bytes, language: str, predicate: Predicate = lambda t: True) -> TreeReducer:
    grammar = grammars.load(language)
    assert grammar is not None
    current = Current(text, make_engine(predicate, jobs=1), Syntax(grammar, text))
    assert current.parsed is not None
    catalog = Catalog(grammar)
    catalog.learn(current.parsed)
    return TreeReducer(current, catalog)


def body_of(reducer: TreeReducer, kind: str = "compound_statement", index: int = 0):
    parsed = reducer.current.parsed
    assert parsed is not None
    found, pending = [], [parsed.tree.root_node]
    while pending:
        node = pending.pop()
        found.append(node)
        pending.extend(reversed(node.children))
    return [node for node in found if node.type == kind][index]


# --- which nodes may end as `;` ------------------------------------------------------------


def test_a_function_body_may_become_a_semicolon():
    text = b"int f(void) { return 1; }\n"
    body = first("c", text, "compound_statement")
    assert _declaration_endings(body) == [Replacement(1, b";", "compound_statement")]


def test_a_constructor_body_may_also_take_its_initialiser_list():
    text = b"struct S : B {\n    S(int x) : B(x) { }\n};\n"
    body = first("cpp", text, "compound_statement")
    declarator = first("cpp", text, "function_declarator")
    assert declarator.text == b"S(int x)"
    assert _declaration_endings(body) == [
        Replacement(1, b";", "compound_statement"),
        Replacement(1, b";", "compound_statement", declarator.end_byte),
    ]


@pytest.mark.parametrize(
    ("language", "text", "kind"),
    [
        # an `if` branch is a `consequence`, not a `body`
        ("c", b"void f(void) { if (x) { g(); } }\n", "compound_statement"),
        # a Python body is an indented block, never `{`
        ("python", b"def f():\n    return 1\n", "block"),
        # a nested block statement has no `body` field at all
        ("c", b"void f(void) { { g(); } }\n", "compound_statement"),
    ],
)
def test_other_blocks_do_not(language, text, kind):
    blocks = [node for node in nodes(language, text) if node.type == kind]
    inner = blocks[-1]
    assert _declaration_endings(inner) == []


def test_no_second_form_without_anything_between_signature_and_body():
    text = b"int *f(int a)   { return 0; }\n"
    assert len(_declaration_endings(first("c", text, "compound_statement"))) == 1


def test_replacements_offer_both_endings():
    reducer = reducer_for(b"struct S : B {\n    S(int x) : B(x) { }\n};\n", "cpp")
    try:
        body = body_of(reducer)
        replacements = reducer._replacements(body)
    finally:
        reducer.current.engine.close()
    starts = {r.start for r in replacements if r.text == b";"}
    declarator_end = body.parent.child_by_field_name("declarator").end_byte
    assert {-1, declarator_end} <= starts


# --- end to end ----------------------------------------------------------------------------


def constructor_compiles(text: bytes) -> bool:
    """B has no default constructor: a definition of S(int) must initialise B."""
    return (
        parses_cleanly("cpp", text)
        and b"struct S : B {" in text
        and (b"S(int x) : B(x) {" in text or re.search(rb"S\(int x\)\s*;", text) is not None)
    )


CASES = {
    "c": (
        "c",
        b"int f(void) { return 1; }\nint main(void);\n",
        lambda text: parses_cleanly("c", text) and b"int f(void)" in text,
        rb"^int f\(void\)\s*;$",
    ),
    "cpp-constructor": (
        "cpp",
        b"struct B { B(int); };\nstruct S : B {\n    S(int x) : B(x) { }\n};\n",
        constructor_compiles,
        rb"^struct S : B \{\s*S\(int x\);\s*\};$",
    ),
}


@pytest.fixture(scope="module")
def reductions():
    cache = {}

    def get(name: str, jobs: int):
        if (name, jobs) not in cache:
            language, program, predicate, _ = CASES[name]
            cache[name, jobs] = reduce_text(
                program, language, predicate, jobs=jobs, skipped_passes=GATED_ONLY
            )
        return cache[name, jobs]

    return get


@pytest.mark.parametrize("name", CASES)
def test_definition_becomes_declaration(reductions, name):
    _, program, predicate, expected = CASES[name]
    result = reductions(name, 1)
    assert predicate(result.text)
    assert re.search(expected, result.text.strip()), result.text
    # the body (and any initialiser list) went in one tree step
    steps = zip(result.passes, [program, *result.accepted], result.accepted, strict=False)
    assert any(
        pass_name == "tree" and b"{ " in before and b"B(x)" not in after and b"1;" not in after
        for pass_name, before, after in steps
    )


def test_first_form_alone_would_not_do_for_the_constructor():
    # `S(int x) : B(x) ;` is no valid declaration: only the second form gets there
    assert not parses_cleanly("cpp", b"struct S : B {\n    S(int x) : B(x) ;\n};\n")


@pytest.mark.parametrize("name", CASES)
def test_properties_interesting_never_larger_jobs_independent(reductions, name):
    language, program, predicate, _ = CASES[name]
    one, two = reductions(name, 1), reductions(name, 2)
    assert predicate(one.text)
    sizes = [len(program)] + [len(text) for text in one.accepted]
    assert all(later < earlier for earlier, later in itertools.pairwise(sizes))
    assert all(predicate(text) for text in one.accepted)
    assert one.text == two.text
    assert all(parses_cleanly(language, text) for text in two.tested)


# --- known bugs ----------------------------------------------------------------------------


def test_a_long_body_is_still_offered_the_semicolon():
    statements = b" ".join(b"g%d();" % i for i in range(9))
    reducer = reducer_for(b"int f(void) { " + statements + b" }\n", "c")
    try:
        replacements = reducer._replacements(body_of(reducer))
    finally:
        reducer.current.engine.close()
    assert b";" in [r.text for r in replacements]


def test_no_work_on_a_stale_node_after_a_body_became_a_semicolon(monkeypatch):
    stale: list[tuple[bytes, bytes]] = []
    original = TreeReducer._reduce

    def spy(self, node):
        now = self.current.text[node.start_byte : node.end_byte]
        if now != node.text:
            stale.append((node.text, now))
        return original(self, node)

    monkeypatch.setattr(TreeReducer, "_reduce", spy)
    program = b"int f(void) { return 1; }\nint g(void) { return 2; }\n"

    def predicate(text: bytes) -> bool:
        return (
            parses_cleanly("c", text)
            and b"int g(void) { return 2; }" in text
            and re.search(rb"int f\(void\)\s*[;{]", text) is not None
        )

    result = reduce_text(program, "c", predicate)
    assert re.search(rb"int f\(void\)\s*;", result.text)
    assert stale == []
