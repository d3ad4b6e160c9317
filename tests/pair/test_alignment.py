"""The token alignment Δ_L: common runs, hunks, per-token maps and the difference size."""

from __future__ import annotations

from gitreduce.pair.alignment import Alignment, Hunk


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
