"""Rendering edits: order, overlaps, word joins, line widening and merged deletions."""

from __future__ import annotations

import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gitreduce.core import edits
from gitreduce.core.current import render_deletions
from gitreduce.core.edits import Edit, take_following_blanks

WORD = re.compile(rb"\w+")


# --- apply -------------------------------------------------------------------------------


def test_replacements_and_deletions():
    text = b"int main(void) { return 0; }"
    result = edits.apply(text, [Edit(24, 25, b"42"), Edit(4, 8, b"f")])
    assert result == b"int f(void) { return 42; }"


def test_no_edits_is_identity():
    assert edits.apply(b"abc", []) == b"abc"


def test_order_of_the_edit_list_does_not_matter():
    text = b"0123456789"
    batch = [Edit(0, 1, b"a"), Edit(3, 5), Edit(7, 8, b"xyz"), Edit(9, 10)]
    expected = b"a 12 56 xyz 8"  # nothing glued: "34" leaves a space, the words one each side
    for seed in range(10):
        shuffled = batch[:]
        random.Random(seed).shuffle(shuffled)
        assert edits.apply(text, shuffled) == expected


def test_adjacent_edits_are_not_overlapping():
    assert edits.apply(b"f(a,b)", [Edit(2, 3, b"["), Edit(3, 4, b"]")]) == b"f([]b)"


@pytest.mark.parametrize(
    "batch",
    [
        [Edit(0, 3), Edit(2, 5)],
        [Edit(2, 5, b"x"), Edit(0, 3, b"y")],
        [Edit(1, 6), Edit(2, 3)],
        [Edit(1, 4), Edit(1, 2)],
    ],
)
def test_overlapping_edits_raise(batch):
    with pytest.raises(ValueError, match="overlapping"):
        edits.apply(b"0123456789", batch)


def test_deletion_between_words_leaves_one_space():
    assert edits.apply(b"int*x", [Edit(3, 4)]) == b"int x"
    assert edits.apply(b"a+b", [Edit(1, 2)]) == b"a b"
    assert edits.apply(b"foo(bar)", [Edit(3, 5)]) == b"foo ar)"


def test_deletion_next_to_punctuation_or_space_adds_nothing():
    assert edits.apply(b"f(a, b)", [Edit(2, 3)]) == b"f(, b)"
    assert edits.apply(b"int x = 1;", [Edit(5, 9)]) == b"int x;"
    assert edits.apply(b"a b c", [Edit(2, 3)]) == b"a  c"


def test_deletion_at_the_ends_adds_nothing():
    assert edits.apply(b"abc def", [Edit(0, 4)]) == b"def"
    assert edits.apply(b"abc def", [Edit(3, 7)]) == b"abc"
    assert edits.apply(b"abc", [Edit(0, 3)]) == b""


def test_replacement_is_inserted_as_given_between_non_words():
    assert edits.apply(b"f(a+b)", [Edit(2, 5, b"c")]) == b"f(c)"
    assert edits.apply(b"x = (y);", [Edit(4, 7, b"0")]) == b"x = 0;"


def test_a_replacement_next_to_a_word_is_kept_apart_from_it():
    """A node's stand-in must not merge with its neighbour into another name: Rust's
    `#![feature(x)]` with its brackets replaced by `Vec` is `#![feature Vec]`, which
    does not parse, not `#![featureVec]`, which does and costs a test."""
    assert edits.apply(b"#![feature(x)]", [Edit(10, 13, b"Vec")]) == b"#![feature Vec]"
    assert edits.apply(b"a+b", [Edit(1, 2, b"c")]) == b"a c b"
    assert edits.apply(b"(a)b", [Edit(0, 3, b"x")]) == b"x b"


def test_two_deletions_around_an_empty_gap_add_one_space():
    # "x" and "-" both go; the words left and right still stay apart
    assert edits.apply(b"ax-b", [Edit(1, 2), Edit(2, 3)]) == b"a b"


def test_empty_deletion_is_a_no_op():
    assert edits.apply(b"abc", [Edit(1, 1)]) == b"abc"


ALPHABET = b"ab_ +(\n"


@st.composite
def text_and_edits(draw):
    text = draw(st.binary(min_size=0, max_size=40).map(lambda b: bytes(ALPHABET[x % 7] for x in b)))
    cuts = sorted(draw(st.sets(st.integers(0, len(text)), max_size=10)))
    batch = []
    for start, end in zip(cuts[::2], cuts[1::2], strict=False):
        if draw(st.booleans()):
            replacement = b""
        else:
            replacement = draw(st.sampled_from([b"x", b"(", b"yy", b" "]))
        batch.append(Edit(start, end, replacement))
    return text, draw(st.permutations(batch))


def naive(text: bytes, batch: list[Edit]) -> bytes:
    out, position = [], 0
    for edit in sorted(batch):
        out += [text[position : edit.start], edit.replacement]
        position = edit.end
    out.append(text[position:])
    return b"".join(out)


@settings(max_examples=300, deadline=None)
@given(text_and_edits())
def test_apply_is_the_naive_rendering_up_to_separating_spaces(case):
    text, batch = case
    result = edits.apply(text, batch)
    expected = naive(text, batch)
    assert result.replace(b" ", b"") == expected.replace(b" ", b"")
    spaces_at_most = sum(2 if edit.replacement else 1 for edit in batch)
    assert 0 <= len(result) - len(expected) <= spaces_at_most


@settings(max_examples=300, deadline=None)
@given(text_and_edits())
def test_edits_never_create_new_words(case):
    """The words of the result are those of the kept text and of the replacements,
    each as it was: no two of them run together."""
    text, batch = case
    batch = [edit for edit in batch if edit.start < edit.end or edit.replacement]
    pieces, position = [], 0
    for edit in sorted(batch):
        pieces += [text[position : edit.start], edit.replacement]
        position = edit.end
    pieces.append(text[position:])
    words = [word for piece in pieces for word in WORD.findall(piece)]
    assert WORD.findall(edits.apply(text, batch)) == words


# --- widen_to_lines ----------------------------------------------------------------------

LINES = b"int a;\n    int b;\nint c; int d;\n"


def test_widen_a_whole_indented_line():
    start = LINES.index(b"int b")
    assert edits.widen_to_lines(LINES, start, start + 6) == (7, 18)


def test_widen_first_and_last_line():
    assert edits.widen_to_lines(LINES, 0, 6) == (0, 7)
    text = b"x\ny"
    assert edits.widen_to_lines(text, 2, 3) == (2, 3)
    assert edits.widen_to_lines(b"x\n  y  ", 4, 5) == (2, 7)


def test_no_widening_when_code_shares_the_line():
    start = LINES.index(b"int c")
    assert edits.widen_to_lines(LINES, start, start + 6) == (start, start + 6)
    start = LINES.index(b"int d")
    assert edits.widen_to_lines(LINES, start, start + 6) == (start, start + 6)


def test_widen_a_range_spanning_lines():
    text = b"keep\n  a\n  b\nkeep\n"
    assert edits.widen_to_lines(text, 7, 12) == (5, 13)


def test_trailing_whitespace_still_widens():
    text = b"a\n  b;   \nc\n"
    assert edits.widen_to_lines(text, 4, 6) == (2, 10)


# --- render_deletions --------------------------------------------------------------------


def test_render_removes_whole_lines():
    text = b"int a;\n    int b;\nint c;\n"
    assert render_deletions(text, [(11, 17)]) == b"int a;\nint c;\n"


def test_render_keeps_the_line_when_code_remains():
    text = b"int a; int b;\n"
    assert render_deletions(text, [(7, 13)]) == b"int a; \n"


def test_render_merges_ranges_separated_by_white_space():
    text = b"int a;\nint b;\n  int c;\nint d;\n"
    b_start, c_start = text.index(b"int b"), text.index(b"int c")
    result = render_deletions(text, [(c_start, c_start + 6), (b_start, b_start + 6)])
    assert result == b"int a;\nint d;\n"


def test_render_merged_ranges_on_one_line_take_the_line():
    text = b"x;\nf(a) ; g(b);\ny;\n"
    f, g = text.index(b"f(a)"), text.index(b"g(b)")
    assert render_deletions(text, [(f, f + 6), (g, g + 5)]) == b"x;\ny;\n"


def test_render_keeps_what_separates_ranges():
    text = b"f(a, b, c);\n"
    assert render_deletions(text, [(2, 3), (8, 9)]) == b"f(, b, );\n"


def test_render_overlapping_and_unordered_ranges():
    text = b"aaa bbb ccc ddd"
    assert render_deletions(text, [(8, 11), (4, 9), (4, 6)]) == b"aaa  ddd"


def test_render_everything():
    text = b"one\ntwo\n"
    assert render_deletions(text, [(0, 3), (4, 7)]) == b""


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_render_removes_every_range_and_leaves_no_new_blank_lines(data):
    lines = data.draw(st.lists(st.sampled_from([b"a;", b"  b;", b"c; d;", b"", b"e"]), max_size=8))
    text = b"\n".join(lines) + b"\n"
    cuts = sorted(data.draw(st.sets(st.integers(0, len(text)), max_size=8)))
    ranges = list(zip(cuts[::2], cuts[1::2], strict=False))
    result = render_deletions(text, ranges)
    assert len(result) <= len(text)
    kept_words, position = [], 0
    for start, end in ranges:
        kept_words += WORD.findall(text[position:start])
        position = end
    kept_words += WORD.findall(text[position:])
    # nothing that was asked to go survives, no other word is harmed
    assert sorted(WORD.findall(result)) == sorted(kept_words)
    blank = sum(1 for line in text.split(b"\n") if not line.strip())
    assert sum(1 for line in result.split(b"\n") if not line.strip()) <= blank + 1


def test_a_rendered_text_remembers_its_base_and_edits() -> None:
    """Pairwise reduction carries a seed candidate's edits over to the variant."""
    base = b"int x = 1 + 2;\n"
    changes = [edits.Edit(8, 13, b"3"), edits.Edit(0, 0, b"static ")]
    rendered = edits.apply(base, changes)
    assert rendered == b"static int x = 3;\n"
    assert isinstance(rendered, edits.Rendered) and isinstance(rendered, bytes)
    assert rendered.base is base
    assert rendered.edits == tuple(sorted(changes))


def test_a_deletion_opening_a_line_takes_the_blanks_after_it():
    text = b"static int f() {\n    x = 1; y = 2;\n    z = 3;\n}\n"
    assert render_deletions(text, [(0, 6)]) == b"int f() {\n    x = 1; y = 2;\n    z = 3;\n}\n"
    at = text.index(b"x = 1;")
    assert render_deletions(text, [(at, at + 6)]) == text.replace(b"x = 1; ", b"")
    # a whole line goes alone: the next line keeps its indentation
    assert render_deletions(text, [(at, at + 13)]) == text.replace(b"    x = 1; y = 2;\n", b"")
    # content before it on the line: nothing more than the range
    assert take_following_blanks(text, text.index(b"y = 2"), text.index(b"y = 2") + 1) == (
        text.index(b"y = 2") + 1
    )
