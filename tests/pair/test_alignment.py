"""The token alignment Δ_L: common runs, hunks, per-token maps and the difference size."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gitreduce.lang import grammars
from gitreduce.pair.alignment import Alignment, Hunk, diff_ops
from gitreduce.pair.tokens import tokenize

CASES = Path(__file__).resolve().parents[2] / "benchmarks" / "cases"

# Difference sizes of the public cases as the benchmarks' reference token counter reports
# them (`tokens.py SEED VARIANT`, run once with tree-sitter 0.26.1, tree-sitter-c 0.24.2,
# tree-sitter-cpp 0.23.4 and tree-sitter-rust 0.24.2)
BENCHMARK_DIFF_SIZES = {
    "gcc12-pr109392": 527,
    "gxx12-pr109804": 190,
    "rustc195-105238": 244,
    "toy-gcc-pattern": 22,
}


def lcs_length(first: list[bytes], second: list[bytes]) -> int:
    """Length of a longest common subsequence, by the textbook table."""
    row = [0] * (len(second) + 1)
    for item in first:
        diagonal = 0
        for j, other in enumerate(second):
            above = row[j + 1]
            row[j + 1] = diagonal + 1 if item == other else max(row[j], above)
            diagonal = above
    return row[-1]


def test_alignment_ops_cover_both_lists_in_order() -> None:
    alignment = Alignment.of(b"unsigned int b = 1 ;", b"int b , c = 3 ;")
    # the paper's example: delete `unsigned`, insert `, c` after b, replace 1 with 3
    assert [type(op).__name__ for op in alignment.ops] == [
        "Hunk",
        "Equal",
        "Hunk",
        "Equal",
        "Hunk",
        "Equal",
    ]
    assert [hunk.size for hunk in alignment.hunks] == [1, 2, 2]
    assert alignment.diff_size == 5
    for hunk in alignment.hunks:
        for index in range(hunk.seed_start, hunk.seed_end):
            assert alignment.seed_hunk[index] == hunk.index
            assert alignment.seed_to_variant[index] == -1
        for index in range(hunk.variant_start, hunk.variant_end):
            assert alignment.variant_hunk[index] == hunk.index
            assert alignment.variant_to_seed[index] == -1
    for equal in alignment.equals:
        for index in range(equal.seed_start, equal.seed_end):
            mapped = alignment.seed_to_variant[index]
            assert alignment.seed.token(index) == alignment.variant.token(mapped)
            assert alignment.variant_to_seed[mapped] == index


def test_hunk_fields() -> None:
    hunk = Hunk(0, 2, 4, 2, 3)
    assert hunk.size == 3


words = st.lists(st.sampled_from(["a", "b", "c", "x", "+"]), max_size=25)


@given(words, words)
def test_the_difference_is_a_minimal_token_diff(seed: list[str], variant: list[str]) -> None:
    """Inserted plus deleted tokens: as few as any diff can have, n + m - 2 LCS."""
    alignment = Alignment.of(" ".join(seed).encode(), " ".join(variant).encode())
    first, second = alignment.seed.texts(), alignment.variant.texts()
    assert alignment.diff_size == len(first) + len(second) - 2 * lcs_length(first, second)
    assert sum(equal.seed_end - equal.seed_start for equal in alignment.equals) == lcs_length(
        first, second
    )


@pytest.mark.parametrize(("name", "size"), BENCHMARK_DIFF_SIZES.items())
def test_difference_sizes_of_the_benchmark_cases_are_the_benchmarks(name: str, size: int) -> None:
    (seed_path,) = (CASES / name).glob("seed.*")
    (variant_path,) = (CASES / name).glob("variant.*")
    language = grammars.detect(seed_path.name)
    assert language is not None
    grammar = grammars.load(language)
    assert grammar is not None
    alignment = Alignment.of(seed_path.read_bytes(), variant_path.read_bytes(), grammar)
    assert alignment.diff_size == size


def inserted(alignment: Alignment) -> list[bytes]:
    """Each hunk's variant tokens, joined as in the variant."""
    variant = alignment.variant
    return [
        variant.text[variant.starts[hunk.variant_start] : variant.ends[hunk.variant_end - 1]]
        for hunk in alignment.hunks
        if hunk.variant_end > hunk.variant_start
    ]


def test_an_inserted_statement_is_aligned_as_the_whole_lines_it_adds() -> None:
    """Myers places the insertion after the seed's `let` (`limit ... ; let`), pairing the
    seed's statement with the inserted one: then no edit of the seed's statement carries
    to a variant that parses. The hunk slides to the lines it adds."""
    rust = grammars.load("rust")
    seed = b"fn f() {\n    let cap = 8;\n    let mut slots = 1;\n}\n"
    variant = seed.replace(b"    let mut", b'    let limit: u32 = "eight";\n    let mut')
    assert inserted(Alignment.of(seed, variant, rust)) == [b'let limit: u32 = "eight";']
    deleted = Alignment.of(variant, seed, rust)
    (hunk,) = deleted.hunks
    assert (
        deleted.seed.text[
            deleted.seed.starts[hunk.seed_start] : deleted.seed.ends[hunk.seed_end - 1]
        ]
        == b'let limit: u32 = "eight";'
    )


def test_a_hunk_that_covers_no_more_lines_elsewhere_stays_where_myers_put_it() -> None:
    seed = b"int f(void) {\n    x = a + a + b;\n}\n"
    variant = b"int f(void) {\n    x = a + a + a + b;\n}\n"
    c = grammars.load("c")
    seed_tokens, variant_tokens = tokenize(seed, c), tokenize(variant, c)
    myers = Alignment(
        seed_tokens, variant_tokens, diff_ops(seed_tokens.texts(), variant_tokens.texts())
    )
    assert Alignment.of(seed, variant, c).hunks == myers.hunks


lines = st.lists(
    st.tuples(st.sampled_from(["a", "b", "x", ";"]), st.sampled_from([" ", "\n"])), max_size=20
)


@given(lines, lines)
def test_sliding_keeps_the_diff_minimal_and_the_pairs_equal(seed, variant) -> None:
    alignment = Alignment.of(
        "".join(token + gap for token, gap in seed).encode(),
        "".join(token + gap for token, gap in variant).encode(),
    )
    first, second = alignment.seed.texts(), alignment.variant.texts()
    assert alignment.diff_size == len(first) + len(second) - 2 * lcs_length(first, second)
    for index, mapped in enumerate(alignment.seed_to_variant):
        if mapped >= 0:
            assert first[index] == second[mapped]
            assert alignment.variant_to_seed[mapped] == index
