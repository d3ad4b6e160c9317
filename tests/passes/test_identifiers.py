"""Identifier replacement: a name's declaration deleted and its uses renamed to another
name of its kind in scope, in one smaller candidate."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from support import GCC, current_for, gcc, parses_cleanly, reduce_text

from gitreduce.passes.identifiers import replace_identifiers, replacement_plan


def candidates(text: bytes, language: str) -> list[bytes]:
    current = current_for(text, language)
    try:
        return [candidate for _, candidate in replacement_plan(current)]
    finally:
        current.engine.close()


def words(text: bytes) -> list[bytes]:
    return re.findall(rb"\w+", text)


C_PROGRAM = b"""int g;
int h;
int helper(int a) { return a + h; }
int main(void) {
  int x = 1;
  int y = x + g;
  return helper(y) + helper(x);
}
"""


def test_a_variable_goes_with_its_uses_renamed_everywhere():
    found = candidates(C_PROGRAM, "c")
    assert (
        b"int g;\nint helper(int a) { return a + a; }\nint main(void) {\n  int x = 1;\n"
        b"  int y = x + g;\n  return helper(y) + helper(x);\n}\n"
    ) in found
    without_x = [c for c in found if b"int x" not in c]
    assert without_x
    for candidate in without_x:
        assert b"x" not in words(candidate)
        assert parses_cleanly("c", candidate)


def test_functions_stand_in_for_functions_and_variables_for_variables():
    for candidate in candidates(C_PROGRAM, "c"):
        if b"helper" not in words(candidate):  # the function went: its calls call another
            assert b"main(y) + main(x)" in candidate
        for call in re.findall(rb"(\w+)\(\w+\)", candidate):
            assert call in {b"helper", b"main"}


def test_a_local_is_no_stand_in_outside_its_function():
    text = b"int g;\nint f(void) { int local = 2; return local; }\nint k(void) { return g; }\n"
    for candidate in candidates(text, "c"):
        assert b"return local; }\nint k" in candidate or b"return local" not in candidate
        assert b"k(void) { return local" not in candidate


def test_every_candidate_is_smaller_than_its_source():
    for language, text in (
        ("c", C_PROGRAM),
        ("python", b"def helper(a):\n    return a\n\n\nb = 1\nc = helper(b) + b\nprint(c)\n"),
        ("rust", b"fn one() -> i32 { 1 }\nfn two() -> i32 { 2 }\nfn main() { one(); two(); }\n"),
        ("javascript", b"let a = 1;\nlet b = 2;\nconsole.log(a + b);\n"),
    ):
        found = candidates(text, language)
        assert found, language
        assert all(len(candidate) < len(text) for candidate in found)


def test_a_variable_read_as_a_value_may_become_the_literal_zero():
    found = candidates(C_PROGRAM, "c")
    assert any(b"int y = 0 + g;" in candidate and b"helper(0)" in candidate for candidate in found)
    for candidate in found:
        assert b"helper" in words(candidate) or b"0(" not in candidate  # never a function
        assert b"0 =" not in candidate and b"0++" not in candidate


def test_the_literal_in_each_language_never_where_the_variable_is_written():
    text = b"int main(void) {\n  int n;\n  n = 3;\n  return n;\n}\n"
    assert not any(b"return 0" in candidate for candidate in candidates(text, "c"))
    for language, source in (
        ("python", b"limit = 10\nprint(limit + limit)\n"),
        ("rust", b'fn main() { let limit = 10; println!("{}", limit); f(limit); }\n'),
        ("go", b"package main\nfunc main() {\n\tvar limit int\n\tprintln(limit)\n}\n"),
        ("javascript", b"let limit = 10;\nconsole.log(limit + 1);\n"),
    ):
        found = candidates(source, language)
        assert any(b"limit" not in candidate for candidate in found), language


def test_python_helper_replaced_by_another_function_of_its_arity():
    text = (
        b"def first(a):\n    return a\n\n\ndef second(a):\n    return a * 2\n\n\n"
        b"print(first(1), second(2))\n"
    )
    current = current_for(text, "python", lambda t: b"print(" in t and b"(2)" in t)
    try:
        assert replace_identifiers(current)
        assert words(current.text).count(b"def") == 1
    finally:
        current.engine.close()


@pytest.mark.skipif(GCC is None, reason="no C compiler")  # the machine's image ships gcc
def test_end_to_end_with_gcc_the_schedule_keeps_the_failure(tmp_path: Path):
    """The compiler judges every candidate, renamed ones included: the result of the
    whole schedule (late passes too) still fails the same way, with one function left."""
    source = (
        b"int thrice(int v) { return v / 0; }\n"
        b"int twice(int v) { return v / 0; }\n"
        b"int main(void) { return thrice(1) + twice(2); }\n"
    )
    path = tmp_path / "case.c"

    def division_by_zero(text: bytes) -> bool:
        run = gcc(path, text, "-c", "-Werror=div-by-zero", "-o", "/dev/null")
        return run.returncode != 0 and b"division by zero" in run.stderr

    result = reduce_text(source, "c", division_by_zero)
    assert words(result.text).count(b"return") <= 2
    assert division_by_zero(result.text)


@pytest.mark.skipif(GCC is None, reason="no C compiler")
def test_with_gcc_a_pointer_no_other_name_can_replace_goes_for_the_literal(tmp_path: Path):
    """`p` is the only pointer in scope, so no name stands in for it; only the literal
    lets its declaration go, and gcc (warnings as errors) accepts `release(0)`."""
    source = (
        b"void release(int *q);\n"
        b"int main(void) {\n  int *p = 0;\n  int n = 1;\n  release(p);\n  return n;\n}\n"
    )
    path = tmp_path / "case.c"

    def releases(text: bytes) -> bool:
        run = gcc(path, text, "-c", "-Wall", "-Werror", "-o", "/dev/null")
        calls = re.search(rb"main[^}]*release\(", text) is not None
        return run.returncode == 0 and calls and text.startswith(b"void release(int *q);")

    result = reduce_text(source, "c", releases)
    assert b"release(0)" in result.text
    assert b"*p" not in result.text
    assert releases(result.text)
