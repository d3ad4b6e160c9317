"""In-token reduction: names shortened consistently, string literals emptied."""

from __future__ import annotations

import re

from support import current_for, parses_cleanly

from gitreduce.passes.rename import _short_names, rename

C_PROGRAM = (
    b"#include <stdio.h>\nint counter_value;\n"
    b'int compute(int argument) { printf("hello %d", argument); return counter_value; }\n'
)


def run(text: bytes, language: str, predicate) -> tuple[bool, bytes, list[bytes]]:
    tested: list[bytes] = []

    def recording(candidate: bytes) -> bool:
        tested.append(candidate)
        return predicate(candidate)

    current = current_for(text, language, recording)
    try:
        return rename(current), current.text, tested
    finally:
        current.engine.close()


def test_names_the_program_owns_get_short_and_library_names_stay():
    progress, result, tested = run(
        C_PROGRAM, "c", lambda t: b"printf(" in t and parses_cleanly("c", t)
    )
    assert progress
    assert result == b'#include <stdio.h>\nint a;\nint c(int b) { printf("", b); return a; }\n'
    # `printf` refused once, never again under another short name
    assert sum(b"printf" not in t for t in tested) == 1


def test_renaming_is_consistent_in_python_and_rust():
    for language, text in (
        ("python", b"def helper(value):\n    return value\n\n\nhelper(1)\n"),
        ("rust", b"fn helper(value: i32) -> i32 { value }\nfn main() { helper(1); }\n"),
    ):
        progress, result, _ = run(
            text, language, lambda t, lang=language: parses_cleanly(lang, t) and b"(1)" in t
        )
        assert progress
        assert b"helper" not in result and b"value" not in result
        names = set(re.findall(rb"\b[a-z]\b", result))
        assert len(names) == (2 if language == "python" else 3), result


def test_short_names_skip_taken_names_and_keywords():
    names = list(_short_names({b"a", b"c"}))
    assert names[:3] == [b"b", b"d", b"e"]
    assert b"if" not in names and b"do" not in names
