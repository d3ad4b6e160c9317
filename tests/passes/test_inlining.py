"""Code moved to its one use: statements folded into the next, functions inlined at their
one call."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from support import GCC, derived, gcc, parses_cleanly, reduce_text

from gitreduce.passes.inlining import fold_candidates, inline_candidates

GXX = shutil.which("g++-12") or shutil.which("g++")


@pytest.mark.parametrize(
    ("language", "text", "expected"),
    [
        ("c", b"int f(int v) {\n  int b;\n  r();\n  b = v;\n  return b;\n}\n", b"  b = r();\n"),
        ("python", b"def f(v):\n    g()\n    return v\n", b"    return g()\n"),
        ("rust", b"fn f(v: i32) -> i32 {\n    g();\n    h(v)\n}\n", b"    h(g())\n"),
        ("javascript", b"function f(v) {\n  g();\n  return v;\n}\n", b"  return g();\n"),
    ],
)
def test_a_statement_folds_into_the_value_the_next_statement_reads(
    language: str, text: bytes, expected: bytes
):
    found = [c for c in derived(fold_candidates, text, language) if expected in c]
    assert found
    assert parses_cleanly(language, found[0])
    assert found[0].count(b"g()") + found[0].count(b"r()") == 1


def test_a_fold_replaces_no_name_that_is_assigned_or_called():
    text = b"int f(int v) {\n  int b;\n  r();\n  b = k(v);\n  return b;\n}\n"
    found = derived(fold_candidates, text, "c")
    assert b"  b = k(r());\n" in b"".join(found)
    assert not any(b"r() = " in c or b"r()(" in c for c in found)


def test_a_fold_finds_the_statements_implicit_int_hid_from_the_grammar():
    """`V b; r();` with no type before `b`: the grammar takes `r ()` as the declarator of
    a declaration whose type is `b`, so no expression statement `r();` is in the tree."""
    text = (
        b"r () __attribute__((returns_twice));\n"
        b"s ( )\n{ __attribute__ ((__vector_size__ (64))) b;\n"
        b"    r ();\n    b &= v;\n    s (b);\n}\n"
    )
    found = derived(fold_candidates, text, "c")
    assert any(b"    b &= r ();\n    s (b);\n" in c and c.count(b"r ()") == 2 for c in found)
    assert any(b"    s (b &= v);\n" in c for c in found)


@pytest.mark.parametrize(
    ("language", "text", "expected"),
    [
        (
            "c",
            b"void g(int a) { h(a); }\nint main(void) {\n  g(1);\n  return 0;\n}\n",
            b"int main(void) {\n  { int a = 1;  h(a); }\n  return 0;\n}\n",
        ),
        (
            "rust",
            b"fn g(a: i32) { h(a); }\nfn main() {\n    g(1);\n}\n",
            b"fn main() {\n    { let a: i32 = 1;  h(a); }\n}\n",
        ),
        (
            "go",
            b"package p\n\nfunc g(a int) { h(a) }\nfunc m() {\n\tg(1)\n}\n",
            b"func m() {\n\t{ var a int = 1;  h(a) }\n}\n",
        ),
    ],
)
def test_a_function_called_once_becomes_a_block_at_its_call(
    language: str, text: bytes, expected: bytes
):
    found = derived(inline_candidates, text, language)
    assert any(c.endswith(expected) for c in found)
    assert all(parses_cleanly(language, c) for c in found if c.endswith(expected))


def test_a_function_template_called_once_becomes_a_generic_lambda():
    text = (
        b"template <typename A> void f(A) {\n  struct P { P(); };\n}\n"
        b"void g() {\n  enum { E };\n  f(E);\n}\n"
    )
    found = derived(inline_candidates, text, "cpp")
    # only the lambda: at the call, the template's `A` names nothing a block could use
    assert found == [b"void g() {\n  enum { E };\n  [](auto) {\n  struct P { P(); };\n}(E);\n}\n"]


@pytest.mark.parametrize(
    "text",
    [
        b"void g(int a) { h(a); }\nvoid m(void) { g(1); g(2); }\n",  # called twice
        b"void g(int a) { g(a); }\n",  # only from itself
        b"void g(int a) { h(a); }\nvoid m(void) { g(1, 2); }\n",  # arguments do not match
        b"void g(int a) { h(a); }\nvoid (*p)(int) = g;\n",  # taken, not called
    ],
)
def test_no_inlining_where_the_call_is_not_the_one_use(text: bytes):
    assert derived(inline_candidates, text, "c") == []


@pytest.mark.skipif(GXX is None, reason="no C++ compiler")
def test_the_generic_lambda_compiles_where_the_template_did(tmp_path: Path):
    text = (
        b"template <typename A> int f(A a) { return a + 1; }\n"
        b"int g() {\n  enum { E };\n  return f(E);\n}\n"
    )
    source = tmp_path / "lambda.cpp"
    for candidate in derived(inline_candidates, text, "cpp"):
        source.write_bytes(candidate)
        assert GXX is not None
        compiled = subprocess.run([GXX, "-fsyntax-only", "-std=c++17", str(source)])
        assert compiled.returncode == 0, candidate


@pytest.mark.skipif(GCC is None, reason="no C compiler")  # the machine's image ships gcc
def test_with_gcc_the_schedule_folds_a_call_into_the_comparison(tmp_path: Path):
    """gcc's -Wsign-compare needs an unsigned and a signed operand, and the test a call
    of `tick` in the function: folded, the call is the signed operand and the global
    that was one goes; without the fold both stay."""
    path = tmp_path / "case.c"

    def warns(text: bytes) -> bool:
        run = gcc(
            path, text, "-fsyntax-only", "-Wsign-compare", "-Werror=implicit-int",
            "-Werror=implicit-function-declaration", "-x", "c",
        )  # fmt: skip
        body = text.partition(b"{")[2].replace(b" ", b"")
        return run.returncode == 0 and b"different signedness" in run.stderr and b"tick()" in body

    source = (
        b"int tick(void);\nunsigned limit;\nint count;\n"
        b"int f(void) {\n  tick ();\n  return limit < count;\n}\n"
    )
    folded = reduce_text(source, "c", warns)
    unfolded = reduce_text(source, "c", warns, skipped_passes=("inline",))
    assert warns(folded.text)
    assert b"< tick ()" in folded.text
    assert len(folded.text) < len(unfolded.text)
