"""The window pass: bracket pairs, and unaligned runs of 3 and 2 tokens ddmin never tries."""

from __future__ import annotations

import itertools
import re

import pytest
from support import GATED_ONLY, Predicate, make_engine, parses_cleanly, reduce_text

from gitreduce.core.current import Current, delete_units
from gitreduce.lang import grammars
from gitreduce.lang.syntax import Syntax
from gitreduce.passes.schedule import token_units
from gitreduce.passes.windows import (
    _gapped_subsets,
    _window_candidates,
    bracket_candidates,
    delete_brackets,
    delete_window_subsets,
    delete_windows,
    small_enough,
)

_TOKEN = re.compile(rb"\w+|[^\w\s]")


def tokens(text: bytes) -> list[bytes]:
    return _TOKEN.findall(text)


def current_for(text: bytes, language: str, predicate: Predicate = lambda text: True) -> Current:
    grammar = grammars.load(language)
    assert grammar is not None
    return Current(text, make_engine(predicate, jobs=1), Syntax(grammar, text))


def run(pass_function, text: bytes, language: str, predicate: Predicate) -> tuple[bool, bytes]:
    current = current_for(text, language, predicate)
    try:
        progress = pass_function(current)
    finally:
        current.engine.close()
    return progress, current.text


def has_words(language: str, *words: bytes) -> Predicate:
    def predicate(text: bytes) -> bool:
        return parses_cleanly(language, text) and all(
            re.search(rb"\b" + word + rb"\b", text) for word in words
        )

    return predicate


# --- bracket pairs -------------------------------------------------------------------------


def test_every_matching_pair_is_a_candidate_outermost_first():
    text = b"int main(void) { return f((x)); }\n"
    current = current_for(text, "c")
    try:
        found = [tokens(c) for c in bracket_candidates(current)]
    finally:
        current.engine.close()
    assert found == [
        tokens(b"int main void { return f((x)); }"),
        tokens(b"int main(void) return f((x)); "),
        tokens(b"int main(void) { return f(x); }"),  # the argument list's
        tokens(b"int main(void) { return f(x); }"),  # the parenthesised expression's
    ]


@pytest.mark.parametrize(
    ("language", "text", "needed", "expected"),
    [
        (
            "c",
            b"int main(void) { return f((x)); }\n",
            rb"f\(",
            b"int main(void) { return f(x); }\n",
        ),
        ("python", b"y = f((x))\n", rb"f\(", b"y = f(x)\n"),
        ("python", b"y = [[x]]\n", rb"\[", b"y = [x]\n"),
        ("javascript", b"y = f((x));\n", rb"f\(", b"y = f(x);\n"),
    ],
)
def test_a_redundant_pair_goes(language, text, needed, expected):
    def predicate(candidate: bytes) -> bool:
        return has_words(language, b"x")(candidate) and re.search(needed, candidate) is not None

    progress, result = run(delete_brackets, text, language, predicate)
    assert progress
    assert tokens(result) == tokens(expected)


def test_brackets_report_no_progress():
    text = b"y = f((x))\n"
    progress, result = run(delete_brackets, text, "python", lambda t: t == text)
    assert not progress
    assert result == text


# --- unaligned token windows ---------------------------------------------------------------

STRADDLING = b"int a = c / d;\n"  # `c /` goes together or not at all: `c` or `/` alone breaks


def test_a_two_token_run_ddmin_misses():
    predicate = has_words("c", b"int a", b"d")
    current = current_for(STRADDLING, "c", predicate)
    try:
        delete_units(current, token_units(current))
        assert tokens(current.text) == tokens(STRADDLING)  # token ddmin got nowhere
        assert delete_windows(current)
        assert tokens(current.text) == tokens(b"int a = d;")
    finally:
        current.engine.close()


def test_windows_resume_where_the_last_success_was():
    # `b /` goes, then `c /` at the same position
    progress, result = run(
        delete_windows, b"int a = b / c / d;\n", "c", has_words("c", b"int a", b"d")
    )
    assert progress
    assert tokens(result) == tokens(b"int a = d;")


def test_a_three_token_run_no_two_token_window_can_take():
    text = b"int a = (long) d;\n"  # only `( long )` as a whole can go
    predicate = has_words("c", b"int a", b"d")
    current = current_for(text, "c", predicate)
    try:
        pairs = list(_window_candidates(current, 2, 0))
        assert not any(predicate(candidate) for candidate in pairs)
        assert delete_windows(current)
        assert tokens(current.text) == tokens(b"int a = d;")
    finally:
        current.engine.close()


@pytest.mark.parametrize("size", [3, 2])
@pytest.mark.parametrize("start_at", [0, 2])
def test_window_candidates_drop_each_run_once(size, start_at):
    text = b"int a = c / d;\n"
    current = current_for(text, "c")
    try:
        found = [tokens(c) for c in _window_candidates(current, size, start_at)]
    finally:
        current.engine.close()
    words = tokens(text)
    assert found == [
        words[:first] + words[first + size :] for first in range(start_at, len(words) - size + 1)
    ]


def test_windows_report_no_progress():
    progress, result = run(delete_windows, STRADDLING, "c", lambda t: t == STRADDLING)
    assert not progress
    assert result == STRADDLING


# --- end to end properties -----------------------------------------------------------------

CASES = {
    "c-straddling": ("c", STRADDLING, has_words("c", b"int a", b"d")),
    "c-brackets": (
        "c",
        b"int main(void) { return f((x)); }\n",
        has_words("c", b"main", b"f", b"x"),
    ),
    "python-brackets": ("python", b"y = [[f((x))]]\n", has_words("python", b"y", b"f", b"x")),
}


@pytest.mark.parametrize("name", CASES)
def test_properties_interesting_never_larger_jobs_independent(name):
    language, program, predicate = CASES[name]
    one = reduce_text(program, language, predicate, jobs=1, skipped_passes=GATED_ONLY)
    two = reduce_text(program, language, predicate, jobs=2, skipped_passes=GATED_ONLY)
    assert predicate(one.text)
    sizes = [len(program)] + [len(text) for text in one.accepted]
    assert all(later < earlier for earlier, later in itertools.pairwise(sizes))
    assert all(predicate(text) for text in one.accepted)
    assert one.text == two.text
    assert all(parses_cleanly(language, text) for text in two.tested)
    assert not re.search(rb"\(\(|\[\[", one.text)


# --- local exhaustive: gapped subsets of 4-token windows ----------------------------------


def test_gapped_subsets_are_those_no_contiguous_run_covers():
    assert _gapped_subsets(4) == [(0, 1, 2, 3), (0, 1, 3), (0, 2, 3), (0, 2), (0, 3)]


def test_two_tokens_apart_go_together():
    """`const` and `*` only go together: each alone leaves a mismatch the test rejects."""
    text = b"int f(void) {\n    const int * p = 0;\n    return 0;\n}\n"

    def predicate(text: bytes) -> bool:
        both = b"const" in text and b"*" in text
        neither = b"const" not in text and b"*" not in text
        kept = b"p = 0" in text and b"f(void)" in text
        return parses_cleanly("c", text) and (both or neither) and kept

    progress, result = run(delete_window_subsets, text, "c", predicate)
    assert progress
    assert b"int p = 0;" in result


def test_large_programs_are_left_to_the_cheaper_passes():
    text = b"int a;\n" * 600
    current = current_for(text, "c")
    try:
        assert not small_enough(current)
    finally:
        current.engine.close()
