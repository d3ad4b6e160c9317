"""Sub-tree replacement: a node replaced by a smaller compatible node from elsewhere."""

from __future__ import annotations

from support import current_for, parses_cleanly

from gitreduce.passes.catalog import Catalog
from gitreduce.passes.subtrees import PER_NODE, replace_subtrees, replacement_plan


def catalog_of(current) -> Catalog:
    catalog = Catalog(current.syntax.grammar)
    catalog.learn(current.parsed)
    return catalog


def candidates(text: bytes, language: str) -> list[bytes]:
    current = current_for(text, language)
    try:
        return [candidate for _, candidate in replacement_plan(current, catalog_of(current))]
    finally:
        current.engine.close()


C_PROGRAM = b"int f(int a) {\n  if (a > 2) { a = a * 3 + 1; } else { a--; }\n  return a + 7;\n}\n"


def test_an_expression_takes_a_smaller_expression_from_elsewhere():
    found = candidates(C_PROGRAM, "c")
    # `a * 3 + 1` is no ancestor or descendant of `a + 7`: hoisting never offers it
    assert (
        b"int f(int a) {\n  if (a > 2) { a = a + 7; } else { a--; }\n  return a + 7;\n}\n" in found
    )
    # a statement for a statement: the `return` replaced by the `a--;` of the else branch
    assert b"int f(int a) {\n  if (a > 2) { a = a * 3 + 1; } else { a--; }\n  a--;\n}\n" in found
    # never by a piece of itself (hoisting's business) nor by a single token (stock phrases')
    assert b"int f(int a) {\n  a--;\n  return a + 7;\n}\n" not in found
    assert (
        b"int f(int a) {\n  if (a > 2) { a = a * 3 + 1; } else { a--; }\n  return a;\n}\n"
        not in found
    )


def test_candidates_are_smaller_and_bounded_per_node():
    found = candidates(C_PROGRAM, "c")
    assert all(len(candidate) < len(C_PROGRAM) for candidate in found)
    assert len(found) <= PER_NODE * C_PROGRAM.count(b" ") * 2


def test_every_grammar_gets_candidates_that_mostly_parse():
    for language, text in (
        ("python", b"def f(a):\n    if a > 2:\n        a = a * 3 + 1\n    return a + 7\n"),
        ("rust", b"fn f(a: i32) -> i32 { let b = a * 3 + 1; b + 7 }\n"),
        ("go", b"package p\n\nfunc f(a int) int {\n\tb := a*3 + 1\n\treturn b + 7\n}\n"),
    ):
        found = candidates(text, language)
        assert found, language
        assert sum(parses_cleanly(language, c) for c in found) * 2 >= len(found), language


def test_the_pass_takes_what_the_test_accepts():
    current = current_for(C_PROGRAM, "c", lambda text: b"return a + 7;" in text)
    try:
        assert replace_subtrees(current, catalog_of(current))
        assert len(current.text) < len(C_PROGRAM)
        assert b"return a + 7;" in current.text
    finally:
        current.engine.close()
