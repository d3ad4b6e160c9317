"""Structure form conversions: `for` to `while`, a conditional to its condition alone."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import GCC, current_for, derived, gcc, parses_cleanly, reduce_text

from gitreduce.passes.conversions import conversion_candidates, convert_structures


def candidates(text: bytes, language: str) -> list[bytes]:
    return derived(conversion_candidates, text, language)


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


@pytest.mark.parametrize(
    ("language", "text", "expected"),
    [
        ("c", b"int tally() {\n  int count;\n  count = count++;\n}\n", b"int tally(int count) {"),
        ("c", b"int g;\nint f(void)\n{\n  g = g--;\n}\n", b"int f(int g)\n{\n  g = g--;\n}\n"),
        ("cpp", b"int g() { int *b; if (b) b = 0; }\n", b"int g(int *b) {"),
        ("c", b"int g() {\n  for (;;) {\n    int b;\n    b = 1;\n  }\n}\n", b"int g(int b) {"),
        ("java", b"class A { int f() { int a; return a; } }\n", b"int f(int a) {"),
        ("rust", b"fn f() -> i32 { let mut a: i32; a = 1; a }\n", b"fn f(mut a: i32) -> i32 {"),
        ("go", b"package main\nfunc f() int {\n\tvar a int\n\treturn a\n}\n", b"f(a int) int {"),
        ("javascript", b"function f() { let a; return a; }\n", b"function f(a) {"),
    ],
)
def test_a_declaration_without_a_value_becomes_the_parameter(
    language: str, text: bytes, expected: bytes
):
    found = [c for c in candidates(text, language) if expected in c]
    assert len(found) == 1
    assert parses_cleanly(language, found[0])
    assert len(found[0]) < len(text)


@pytest.mark.parametrize(
    "text",
    [
        b"int f(int a) { int b; return a + b; }\n",  # f takes a parameter already
        b"int f() { int b = 1; return b; }\n",  # a value
        b"int f() { int a, b; return a + b; }\n",  # two names
        b"int g;\nint f() { return g; }\nint k() { return g; }\n",  # two functions use it
        b"int f() { static int b; return b; }\n",  # a storage class
        b"int f() { int k(void) { int b; return b; } return 0; }\n",  # an inner function's
    ],
)
def test_no_parameter_where_the_declaration_would_not_read_as_one(text: bytes):
    assert not any(b"int f(int" in c for c in candidates(text, "c"))


def test_a_global_nothing_uses_is_offered_to_each_function_without_parameters():
    """In a pair's seed the variant's change is what uses it; the last function first."""
    text = b"int g;\nint f() { return 0; }\nint k(void) { return 1; }\nint m(int a) { }\n"
    offered = [c for c in candidates(text, "c") if b"int g;" not in c]
    assert offered == [
        b"int f() { return 0; }\nint k(int g) { return 1; }\nint m(int a) { }\n",
        b"int f(int g) { return 0; }\nint k(void) { return 1; }\nint m(int a) { }\n",
    ]


@pytest.mark.skipif(GCC is None, reason="no C compiler")  # the machine's image ships gcc
def test_with_gcc_the_schedule_moves_a_global_into_the_function(tmp_path: Path):
    """gcc's -Wsequence-point warning needs `g` and the statement; the global's own
    declaration can go only as the function's parameter."""
    path = tmp_path / "case.c"

    def warns(text: bytes) -> bool:
        run = gcc(
            path, text, "-fsyntax-only", "-Wsequence-point", "-Werror=implicit-int",
            "-Werror=implicit-function-declaration", "-x", "c",
        )  # fmt: skip
        return run.returncode == 0 and b"may be undefined" in run.stderr

    source = b"int unused;\nint g;\nint f(void)\n{\n  int k = 2;\n  g = g-- + k;\n}\n"
    result = reduce_text(source, "c", warns)
    assert warns(result.text)
    assert b"(int g)" in result.text
    assert not result.text.startswith(b"int g;")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            b"struct S { a: i32, pub b: Vec<u8> }\nfn f(s: S) {}\n",
            b"struct S ( i32, pub Vec<u8> );\nfn f(s: S) {}\n",
        ),
        (b"enum E { V { x: i32 }, W }\n", b"enum E { V ( i32 ), W }\n"),
        (b"struct S<T> {\n    cell: T,\n}\n", b"struct S<T> (\n    T,\n);\n"),
    ],
)
def test_a_record_with_named_fields_becomes_one_with_positional_fields(
    text: bytes, expected: bytes
):
    found = candidates(text, "rust")
    assert expected in found
    assert parses_cleanly("rust", expected)


@pytest.mark.parametrize(
    ("language", "text"),
    [
        ("rust", b"struct S { a: i32 }\nfn f(s: S) -> i32 { s.a }\n"),  # a field read
        ("rust", b"struct S { a: i32 }\nfn f() -> S { S { a: 1 } }\n"),  # a field written
        ("rust", b"struct S<T> where T: Copy { a: T }\n"),  # the where clause moves
        ("rust", b"struct S {}\n"),  # `S();` is no shorter
        ("c", b"struct S { int a; };\n"),  # C has no positional records
    ],
)
def test_no_positional_record_where_it_would_break_or_not_shrink(language: str, text: bytes):
    assert not any(b"S (" in c or b"S<T> (" in c for c in candidates(text, language))
