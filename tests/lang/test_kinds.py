"""The shared node-kind vocabulary holds across the grammars the passes rely on it for."""

from __future__ import annotations

import pytest
from support import nodes

from gitreduce.lang.kinds import is_function, is_identifier

FUNCTIONS = {
    "c": b"int f(int a) { return a; }\n",
    "cpp": b"auto g = [](int a) { return a; };\n",
    "rust": b"fn f(a: i32) -> i32 { a }\n",
    "python": b"def f(a):\n    return a\n",
    "javascript": b"const f = (a) => { return a; };\n",
    "go": b"package p\nfunc f(a int) int { return a }\n",
    "java": b"class C { int f(int a) { return a; } }\n",
}


@pytest.mark.parametrize("language", sorted(FUNCTIONS))
def test_every_grammar_has_one_function_and_names_its_parameter(language: str) -> None:
    found = nodes(language, FUNCTIONS[language])
    assert sum(is_function(node) for node in found) == 1
    names = [node.text for node in found if is_identifier(node)]
    assert b"a" in names
    assert all(node.child_count == 0 for node in found if is_identifier(node))


def test_keywords_and_literals_are_not_names() -> None:
    found = nodes("c", b"int f(void) { return 42; }\n")
    names = {node.text for node in found if is_identifier(node)}
    assert names == {b"f"}
