"""The lenient pass: single-token deletions the grammar rejects, judged by the test alone."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import GCC, current_for, gcc, parses_cleanly

from gitreduce.passes.lenient import delete_tokens_ungated


def test_a_deletion_the_grammar_rejects_is_tried_and_then_tolerated():
    text = b"int f() { return 0; }\nint g() { return 1; }\n"
    assert not parses_cleanly("c", b"f() { return 0; }\nint g() { return 1; }\n")
    current = current_for(text, "c", lambda t: b"return 0" in t and b"return 1" in t)
    try:
        assert current.syntax is not None and current.syntax.baseline_errors == 0
        assert delete_tokens_ungated(current)
        assert b"int" not in current.text
        # the text taken with errors is the measure now: gated candidates may keep them
        assert current.syntax.baseline_errors > 0
        assert current.syntax.acceptable(current.text)
    finally:
        current.engine.close()


def test_nothing_is_taken_when_the_test_refuses_every_deletion():
    text = b"int f() { return 0; }\n"
    current = current_for(text, "c", lambda t: t == text)
    try:
        assert not delete_tokens_ungated(current)
        assert current.syntax is not None and current.syntax.baseline_errors == 0
    finally:
        current.engine.close()


@pytest.mark.skipif(GCC is None, reason="no C compiler")  # the machine's image ships gcc
def test_gcc_takes_an_implicit_int_the_grammar_rejects(tmp_path: Path):
    """gnu89 C: `g;` and `f()` without `int`. The test: it compiles and still divides
    by the constant zero (a warning made an error)."""
    source = b"int g;\nint f() { return g / 0; }\n"
    path = tmp_path / "case.c"

    def interesting(text: bytes) -> bool:
        run = gcc(path, text, "-std=gnu89", "-c", "-Werror=div-by-zero", "-o", "/dev/null")
        return b"division by zero" in run.stderr

    current = current_for(source, "c", interesting)
    try:
        assert delete_tokens_ungated(current)
        assert current.text.count(b"int") < 2
        assert interesting(current.text)
    finally:
        current.engine.close()
