"""The result pass: a function's result type goes together with the values it returns."""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from support import current_for, reduce_text

from gitreduce.passes.results import return_candidates

_SPACE = re.compile(rb"\s+")


def squeezed(text: bytes) -> bytes:
    return _SPACE.sub(b" ", text).strip()


def candidates(text: bytes, language: str) -> list[bytes]:
    current = current_for(text, language)
    try:
        return [squeezed(candidate) for candidate in return_candidates(current)]
    finally:
        current.engine.close()


@pytest.mark.parametrize(
    ("language", "program", "largest"),
    [
        (
            "rust",
            b"fn f() -> Vec<u8> {\n    let v = Vec::new();\n    g();\n    v\n}\n",
            b"fn f() { g(); }",
        ),
        (
            "go",
            b"package m\n\nfunc f() int {\n\tx := 1\n\tg()\n\treturn x\n}\n",
            b"package m func f() { g() }",
        ),
        (
            "c",
            b"int f(void) {\n    int x = 1;\n    g();\n    return x;\n}\n",
            b"void f(void) { g(); }",
        ),
        (
            "java",
            b"class A {\n  int f() {\n    int x = 1;\n    g();\n    return x;\n  }\n}\n",
            b"class A { void f() { g(); } }",
        ),
        (
            "python",
            b"def f() -> int:\n    x = 1\n    g()\n    return x\n",
            b"def f() : g()",
        ),
        (
            "typescript",
            b"function f(): number {\n  const x = 1;\n  g();\n  return x;\n}\n",
            b"function f() { g(); }",
        ),
    ],
)
def test_largest_candidate_drops_result_values_and_their_locals(language, program, largest):
    found = candidates(program, language)
    assert found[0] == largest
    # then the result and the values alone, then the result alone
    assert len(found) == 3
    assert squeezed(program) not in found


def test_values_only_candidate_keeps_the_locals():
    found = candidates(b"int f(void) { int x = 1; g(); return x; }\n", "c")
    assert b"void f(void) { int x = 1; g(); return ; }" in found
    assert b"void f(void) { int x = 1; g(); return x; }" in found


def test_returns_of_nested_closures_are_theirs():
    program = b"fn h() -> i32 { let c = || { return 2; }; if a { return 1; } 3 }\n"
    found = candidates(program, "rust")
    assert b"fn h() { let c = || { return 2; }; if a { return ; } }" in found
    assert all(b"return 2;" in candidate for candidate in found)


def test_a_value_naming_a_parameter_takes_only_the_statements_of_the_body():
    found = candidates(b"int f(int a) { g(); return a; }\n", "c")
    assert found == [
        b"void f(int a) { g(); }",
        b"void f(int a) { g(); return ; }",
        b"void f(int a) { g(); return a; }",
    ]


def test_functions_returning_nothing_offer_nothing():
    assert candidates(b"void f(void) { g(); return; }\n", "c") == []
    assert candidates(b"fn f() { g(); }\n", "rust") == []
    assert candidates(b"function f() { return 1; }\n", "javascript") == []


def test_candidates_remember_their_edits_on_the_current_text():
    program = b"fn f() -> u8 {\n    let v = 1;\n    v\n}\n"
    current = current_for(program, "rust")
    try:
        for candidate in return_candidates(current):
            assert candidate.base == program
    finally:
        current.engine.close()


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
def test_gcc_accepts_only_the_result_pass_way_out():
    """With -Werror=return-type neither the return nor the local can go alone, nor both
    through the name pass: only making `f` return void lets `marker();` stand alone."""
    program = (
        b"int compute(void);\nvoid marker(void);\n\n"
        b"int f(void) {\n    int x = compute();\n    marker();\n    return x;\n}\n"
    )

    def compiles_with_marker(text: bytes) -> bool:
        if not re.search(rb"f\(void\) *\{[^}]*\bmarker\(\);", text):
            return False
        with tempfile.TemporaryDirectory() as scratch:
            source = Path(scratch) / "t.c"
            source.write_bytes(text)
            result = subprocess.run(
                [
                    "gcc",
                    "-c",
                    "-o",
                    "/dev/null",
                    "-Werror=return-type",
                    "-Werror=implicit",
                    str(source),
                ],
                capture_output=True,
                check=False,
            )
        return result.returncode == 0

    reduced = reduce_text(program, "c", compiles_with_marker)
    assert "results" in reduced.passes
    assert b"compute" not in reduced.text
    assert squeezed(reduced.text).endswith(b"void f(void) { marker(); }")
