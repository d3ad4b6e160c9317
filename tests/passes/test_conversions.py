"""Structure form conversions: `for` to `while`, a conditional to its condition alone."""

from __future__ import annotations

import pytest
from support import current_for, parses_cleanly

from gitreduce.passes.conversions import conversion_candidates, convert_structures


def candidates(text: bytes, language: str) -> list[bytes]:
    current = current_for(text, language)
    try:
        return list(conversion_candidates(current))
    finally:
        current.engine.close()


@pytest.mark.parametrize(
    ("language", "text", "expected"),
    [
        ("c", b"int f(int a) {\n  for (; a < 3;) a++;\n}\n", b"  while (a < 3) a++;\n"),
        ("cpp", b"void f(int a) { for (; a;) g(); }\n", b"{ while (a) g(); }"),
        ("javascript", b"for (let i = 0; i < 3; i++) { f(i); }\n", b"while (i < 3) { f(i); }"),
        (
            "java",
            b"class A { void f() { for (int i = 0; i < 3; i++) { f(); } } }\n",
            b"{ while (i < 3) { f(); } }",
        ),
    ],
)
def test_a_loop_with_a_condition_becomes_a_while(language: str, text: bytes, expected: bytes):
    found = candidates(text, language)
    assert any(expected in candidate for candidate in found)
    assert all(parses_cleanly(language, c) for c in found if expected in c)


@pytest.mark.parametrize(
    ("language", "text", "expected"),
    [
        ("c", b"int f(int a) {\n  if (g(a)) return 1;\n}\n", b"{\n  g(a);\n}"),
        ("python", b"def f(a):\n    if g(a):\n        return 1\n", b"    g(a);\n"),
        ("rust", b"fn f(a: i32) { if g(a) { return; } }\n", b"{ g(a); }"),
        ("go", b"package p\n\nfunc f() {\n\tif g() {\n\t}\n}\n", b"\tg();\n"),
    ],
)
def test_a_conditional_becomes_its_condition(language: str, text: bytes, expected: bytes):
    found = [c for c in candidates(text, language) if expected in c]
    assert found
    assert parses_cleanly(language, found[0])


def test_a_conditional_expression_stays():
    assert candidates(b"int f(int a) { return a ? 1 : 2; }\n", "c") == []


def test_the_pass_takes_what_the_test_accepts():
    text = b"int f(int a) {\n  for (; a < 3;) a++;\n  return a;\n}\n"
    current = current_for(text, "c", lambda t: b"a++" in t and parses_cleanly("c", t))
    try:
        assert convert_structures(current)
        assert current.text == b"int f(int a) {\n  while (a < 3) a++;\n  return a;\n}\n"
    finally:
        current.engine.close()
