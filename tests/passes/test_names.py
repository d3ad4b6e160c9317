"""The name pass: a name goes together with every list element or statement that uses it.

Predicates here are "knots": a name must be mentioned either never or at least
twice (declared and used, as a compiler would insist), so neither the
declaration nor a use can go alone and only the name pass can remove it.
"""

from __future__ import annotations

import itertools
import re

import pytest
from support import GATED_ONLY, Predicate, current_for, derived, parses_cleanly, reduce_text

from gitreduce.passes.names import delete_names, name_candidates

_TOKEN = re.compile(rb"\w+|[^\w\s]")


def tokens(text: bytes) -> list[bytes]:
    return _TOKEN.findall(text)


def candidates(text: bytes, language: str) -> list[bytes]:
    return derived(name_candidates, text, language)


def knot(language: str, name: bytes, *needed: bytes) -> Predicate:
    """Parses, contains every `needed` piece, and mentions `name` never or at least twice."""

    def predicate(text: bytes) -> bool:
        uses = len(re.findall(rb"\b" + name + rb"\b", text))
        return parses_cleanly(language, text) and uses != 1 and all(n in text for n in needed)

    return predicate


C_PROGRAM = b"int unused = 1;\nint f(int a) {\n    g(unused);\n    return a;\n}\n"
PYTHON_PROGRAM = b"unused = 1\n\n\ndef f(a):\n    g(unused)\n    return a\n"

CASES = {
    "c": (C_PROGRAM, knot("c", b"unused", b"int f(int a) {", b"return a;")),
    "python": (PYTHON_PROGRAM, knot("python", b"unused", b"def f(a):", b"return a")),
}


@pytest.fixture(scope="module")
def reductions():
    cache = {}

    def get(language: str, jobs: int):
        if (language, jobs) not in cache:
            program, predicate = CASES[language]
            cache[language, jobs] = reduce_text(
                program, language, predicate, jobs=jobs, skipped_passes=GATED_ONLY
            )
        return cache[language, jobs]

    return get


@pytest.mark.parametrize("language", CASES)
def test_a_name_and_all_its_uses_go_in_one_step(reductions, language):
    program, predicate = CASES[language]
    result = reductions(language, 1)
    assert predicate(result.text)
    assert b"unused" not in result.text
    assert b"return a" in result.text
    steps = zip(result.passes, [program, *result.accepted], result.accepted, strict=False)
    assert any(
        pass_name == "names" and before.count(b"unused") >= 2 and b"unused" not in after
        for pass_name, before, after in steps
    ), list(zip(result.passes, result.accepted, strict=True))


@pytest.mark.parametrize("language", CASES)
def test_properties_interesting_never_larger_jobs_independent(reductions, language):
    program, predicate = CASES[language]
    one, two = reductions(language, 1), reductions(language, 2)
    assert predicate(one.text)
    sizes = [len(program)] + [len(text) for text in one.accepted]
    assert all(later < earlier for earlier, later in itertools.pairwise(sizes))
    assert all(predicate(text) for text in one.accepted)
    assert one.text == two.text
    assert all(parses_cleanly(language, text) for text in two.tested)


@pytest.mark.parametrize("language", CASES)
def test_pass_alone_unties_the_knot(language):
    program, predicate = CASES[language]
    current = current_for(program, language, predicate)
    try:
        assert delete_names(current)
    finally:
        current.engine.close()
    assert b"unused" not in current.text
    assert predicate(current.text)
    assert b"return a" in current.text


def test_no_progress_reported_when_nothing_can_go():
    program, _ = CASES["c"]
    current = current_for(program, "c", lambda text: text == program)
    try:
        assert not delete_names(current)
    finally:
        current.engine.close()
    assert current.text == program


@pytest.mark.parametrize(
    ("language", "program", "expected"),
    [
        (
            "c",
            b"int unused = 1;\nint f(int a, int b) {\n    g(a, unused, b);\n    return a;\n}\n",
            b"int f(int a, int b) { g(a, b); return a; }",
        ),
        (
            "c",
            b"int unused;\nvoid f(void) {\n    g(unused, a);\n}\n",
            b"void f(void) { g(a); }",
        ),
        (
            "c",
            b"int unused;\nvoid f(void) {\n    g(a, unused);\n}\n",
            b"void f(void) { g(a); }",
        ),
        (
            "python",
            b"unused = 1\ng(a, unused, b)\nh(unused, c)\n",
            b"g(a, b)\nh(c)",
        ),
        (
            "javascript",
            b"let unused = 1;\ng(a, unused, b);\nconst v = [unused, c];\n",
            b"g(a, b);\nconst v = [c];",
        ),
    ],
)
def test_list_elements_go_with_one_comma(language, program, expected):
    found = [c for c in candidates(program, language) if b"unused" not in c]
    assert len(found) == 1, found
    assert tokens(found[0]) == tokens(expected)
    assert parses_cleanly(language, found[0])
    assert not re.search(rb",\s*[,)\]}]|[(\[{]\s*,", found[0])


def test_only_names_used_more_than_once_most_used_first():
    program = b"x = 1\ny = 2\nprint(x, y, x)\nprint(y)\nonce = 3\n"
    found = candidates(program, "python")
    # most occurrences first, then by name: x (3), y (3), print (2); `once` has one
    assert [tokens(c) for c in found] == [
        tokens(b"y = 2\nprint(y)\nprint(y)\nonce = 3\n"),  # x
        tokens(b"x = 1\nprint(x, x)\nonce = 3\n"),  # y
        tokens(b"x = 1\ny = 2\nonce = 3\n"),  # print
    ]


@pytest.mark.parametrize(
    ("language", "program"),
    [
        # the only statement of the file: no enclosing unit may go
        ("c", b"int x = sizeof x;\n"),
        ("python", b"x = x\n"),
        # `x` the parameter is a list element, but its use is the only statement
        # of the only definition
        ("python", b"def f(a, x):\n    return x\n"),
    ],
)
def test_a_name_with_a_use_that_cannot_go_yields_no_candidate(language, program):
    assert candidates(program, language) == []


def test_a_use_that_cannot_go_blocks_only_its_own_name():
    # `x` is used by the sole statement of the sole definition; `y` only in lists
    program = b"def f(y, x):\n    return x + g(y, y)\n"
    found = candidates(program, "python")
    assert [tokens(c) for c in found] == [tokens(b"def f(x):\n    return x + g()\n")]


def test_overlapping_units_are_merged_not_duplicated():
    # both uses of `x` sit in the same statement; the statement goes once
    program = b"x = 1\nprint(x + x)\nprint(2)\n"
    found = [c for c in candidates(program, "python") if b"x" not in c]
    assert [tokens(c) for c in found] == [tokens(b"print(2)\n")]


# --- known bugs ----------------------------------------------------------------------------


def test_adjacent_trailing_uses_leave_no_dangling_comma_python():
    program = b"x = 1\ng(a, x, x)\n"
    found = [c for c in candidates(program, "python") if b"x" not in c]
    assert [tokens(c) for c in found] == [tokens(b"g(a)\n")]


def test_adjacent_trailing_uses_can_go_in_c():
    program = b"int x;\nvoid h(void) {\n    g(a, x, x);\n}\n"
    predicate = knot("c", b"x", b"void h(void) {", b"g(a")
    current = current_for(program, "c", predicate)
    try:
        delete_names(current)
    finally:
        current.engine.close()
    assert tokens(current.text) == tokens(b"void h(void) {\n    g(a);\n}\n")
