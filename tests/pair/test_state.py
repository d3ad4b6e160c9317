"""Pair states: patching (full, partial, onto a reduced seed), index runs, rendering, sizes.

Rendered programs are measured from scratch: tokenised again with `tokenize`
and diffed with `diff_ops`, the way the benchmarks measure them. That measure
is pinned to the benchmarks' own figures on the public cases (test_tokens,
test_alignment) and on the snippets below, and `diff_ops` is checked against a
plain LCS (test_alignment).
"""

from __future__ import annotations

import random
from bisect import bisect_left
from collections.abc import Set as AbstractSet
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gitreduce.lang import grammars
from gitreduce.lang.grammars import Grammar
from gitreduce.lang.syntax import plain_tokens
from gitreduce.pair.alignment import SEED, VARIANT, Alignment, Equal, Hunk, diff_ops
from gitreduce.pair.state import PairState, _counts, _runs_of, _subtract, runs_indices
from gitreduce.pair.tokens import tokenize

CASES = Path(__file__).resolve().parents[2] / "benchmarks" / "cases"


def diff_size(seed: list[bytes], variant: list[bytes]) -> int:
    """Tokens inserted plus deleted by a minimal diff of two token lists."""
    return sum(count for op, count in diff_ops(seed, variant) if op)


def plain(text: bytes) -> list[bytes]:
    return [text[start:end] for start, end in plain_tokens(text)]


def measured(grammar: Grammar, seed: bytes, variant: bytes) -> tuple[list[bytes], list[bytes], int]:
    """Two rendered programs tokenised from scratch, and the difference size of their tokens."""
    seed_tokens = tokenize(seed, grammar).texts()
    variant_tokens = tokenize(variant, grammar).texts()
    return seed_tokens, variant_tokens, diff_size(seed_tokens, variant_tokens)


def expected_variant(
    alignment: Alignment,
    applied: AbstractSet[int],
    seed_removed: AbstractSet[int] = frozenset(),
    variant_removed: AbstractSet[int] = frozenset(),
) -> list[bytes]:
    """Patch(seed', subset of Δ) computed token by token, independently of the renderer."""
    seed, variant = alignment.seed, alignment.variant
    out: list[bytes] = []
    for op in alignment.ops:
        if isinstance(op, Equal):
            out += [
                variant.token(op.variant_start + index - op.seed_start)
                for index in range(op.seed_start, op.seed_end)
                if index not in seed_removed
            ]
        elif op.index in applied:
            out += [
                variant.token(index)
                for index in range(op.variant_start, op.variant_end)
                if index not in variant_removed
            ]
        else:
            out += [
                seed.token(index)
                for index in range(op.seed_start, op.seed_end)
                if index not in seed_removed
            ]
    return out


# --- runs --------------------------------------------------------------------------------------

index_sets = st.sets(st.integers(0, 60), max_size=40)


@given(index_sets, index_sets)
def test_subtract_is_set_difference(kept: set[int], removed: set[int]) -> None:
    result = _subtract(tuple(_runs_of(kept)), _runs_of(removed))
    assert runs_indices(result) == sorted(kept - removed)
    assert result == tuple(_runs_of(kept - removed))  # canonical: equal sets, equal tuples


@given(index_sets, st.lists(st.integers(0, 61), max_size=12))
def test_counts_in_ranges(kept: set[int], cuts: list[int]) -> None:
    bounds = sorted(cuts)
    ranges = list(zip(bounds[::2], bounds[1::2], strict=False))
    counts = _counts(tuple(_runs_of(kept)), ranges)
    assert counts == [len([i for i in kept if low <= i < high]) for low, high in ranges]


def test_runs_of_a_range_is_one_run() -> None:
    assert _runs_of(range(5, 9)) == [5, 9]
    assert _runs_of(range(5, 5)) == []
    assert _runs_of(range(0, 6, 2)) == [0, 1, 2, 3, 4, 5]


# --- random token lists ------------------------------------------------------------------------

ALPHABET = ["a", "b", "c", "x1", "yy", "0", "+", "-", "(", ")", ";", "{", "}", "=", "/", "*"]
SEPARATORS = [" ", "\n", "  ", "", "\t", " /*c*/ "]


@st.composite
def programs(draw: st.DrawFn) -> bytes:
    """Random texts; separators may be empty, so words sometimes run together (as in real code)."""
    tokens = draw(st.lists(st.sampled_from(ALPHABET), max_size=30))
    pieces = [draw(st.sampled_from(SEPARATORS)) + token for token in tokens]
    return ("".join(pieces) + draw(st.sampled_from(["", "\n", " "]))).encode()


@st.composite
def mutants(draw: st.DrawFn) -> tuple[bytes, bytes]:
    """A seed and a variant derived from it by a few token edits (the fuzzer's situation)."""
    seed = draw(programs())
    tokens = [seed[start:end].decode() for start, end in plain_tokens(seed)]
    for _ in range(draw(st.integers(0, 6))):
        where = draw(st.integers(0, len(tokens)))
        kind = draw(st.sampled_from(["insert", "delete", "replace"]))
        if kind == "insert" or not tokens:
            tokens.insert(where, draw(st.sampled_from(ALPHABET)))
        elif kind == "delete":
            del tokens[min(where, len(tokens) - 1)]
        else:
            tokens[min(where, len(tokens) - 1)] = draw(st.sampled_from(ALPHABET))
    variant = "".join(draw(st.sampled_from([" ", "\n", "  "])) + token for token in tokens)
    return seed, variant.encode()


pairs = st.one_of(mutants(), st.tuples(programs(), programs()))


@given(pairs)
def test_patch_with_the_whole_difference_gives_the_variant(pair: tuple[bytes, bytes]) -> None:
    seed, variant = pair
    alignment = Alignment.of(seed, variant)
    full = PairState.full(alignment)
    assert full.seed_text() == seed
    assert full.variant_text() == variant
    assert alignment.diff_size == diff_size(plain(seed), plain(variant))
    assert full.diff_tokens() == alignment.diff_size
    assert full.seed_tokens() == len(plain(seed))
    assert full.variant_tokens() == len(plain(variant))


@given(pairs)
def test_patch_with_no_hunk_gives_the_seed(pair: tuple[bytes, bytes]) -> None:
    seed, variant = pair
    alignment = Alignment.of(seed, variant)
    none = PairState.full(alignment).with_hunks(())
    assert plain(none.variant_text()) == plain(seed)
    if alignment.hunks:  # without hunks, "none" and "all" are the same state: the variant
        assert none.variant_text() == seed
    assert none.diff_tokens() == 0


@given(pairs, st.data())
def test_patch_with_a_subset_of_hunks(pair: tuple[bytes, bytes], data: st.DataObject) -> None:
    seed, variant = pair
    alignment = Alignment.of(seed, variant)
    subset = data.draw(
        st.sets(st.sampled_from(range(len(alignment.hunks)))) if alignment.hunks else st.just(set())
    )
    state = PairState.full(alignment).with_hunks(subset)
    rendered = state.variant_text()
    assert plain(rendered) == expected_variant(alignment, subset)
    assert state.variant_token_texts() == plain(rendered)
    assert state.seed_text() == seed
    # applying part of a minimal diff leaves exactly that part (triangle inequality)
    assert state.diff_tokens() == sum(alignment.hunks[index].size for index in subset)
    assert state.diff_tokens() == diff_size(plain(seed), plain(rendered))


@given(pairs, st.data())
def test_patching_a_reduced_seed_deletes_exactly_the_removed_tokens(
    pair: tuple[bytes, bytes], data: st.DataObject
) -> None:
    seed, variant = pair
    alignment = Alignment.of(seed, variant)
    n_seed = len(alignment.seed)
    removed = data.draw(st.sets(st.integers(0, n_seed - 1)) if n_seed else st.just(set()))
    subset = data.draw(
        st.sets(st.sampled_from(range(len(alignment.hunks)))) if alignment.hunks else st.just(set())
    )
    state = PairState.full(alignment).without_seed_tokens(removed).with_hunks(subset)

    seed_text = state.seed_text()
    assert plain(seed_text) == [
        alignment.seed.token(index) for index in range(n_seed) if index not in removed
    ]
    assert state.seed_kept_indices() == [index for index in range(n_seed) if index not in removed]
    variant_text = state.variant_text()
    assert plain(variant_text) == expected_variant(alignment, subset, seed_removed=removed)
    assert state.seed_tokens() == n_seed - len(removed)
    assert state.variant_tokens() == len(plain(variant_text))
    # deleting common tokens can only shorten the minimal diff
    assert state.minimal_diff_tokens() == diff_size(plain(seed_text), plain(variant_text))
    assert state.diff_tokens() >= state.minimal_diff_tokens()


@given(pairs, st.data())
def test_reducing_only_the_difference_keeps_diff_tokens_exact(
    pair: tuple[bytes, bytes], data: st.DataObject
) -> None:
    """MinTdiff-style deletions (hunk tokens only) never open a shorter alignment."""
    seed, variant = pair
    alignment = Alignment.of(seed, variant)
    seed_only = [i for i in range(len(alignment.seed)) if alignment.seed_hunk[i] >= 0]
    variant_only = [i for i in range(len(alignment.variant)) if alignment.variant_hunk[i] >= 0]
    drop_seed = data.draw(st.sets(st.sampled_from(seed_only)) if seed_only else st.just(set()))
    drop_variant = data.draw(
        st.sets(st.sampled_from(variant_only)) if variant_only else st.just(set())
    )
    subset = data.draw(
        st.sets(st.sampled_from(range(len(alignment.hunks)))) if alignment.hunks else st.just(set())
    )
    # seed-only tokens of hunks left unapplied are in both programs: keep them for this claim
    drop_seed = {index for index in drop_seed if alignment.seed_hunk[index] in subset}
    state = (
        PairState.full(alignment)
        .without_seed_tokens(drop_seed)
        .without_variant_tokens(drop_variant)
        .with_hunks(subset)
    )
    seed_text, variant_text = state.seed_text(), state.variant_text()
    assert plain(variant_text) == expected_variant(
        alignment, subset, seed_removed=drop_seed, variant_removed=drop_variant
    )
    assert state.diff_tokens() == diff_size(plain(seed_text), plain(variant_text))


# --- behaviour on small examples ---------------------------------------------------------------


def test_insertions_stay_anchored_to_their_seed_position() -> None:
    alignment = Alignment.of(b"a b c d", b"a b X c d")
    (hunk,) = alignment.hunks
    assert (hunk.seed_start, hunk.seed_end) == (2, 2)
    # delete both neighbours of the insertion
    state = PairState.full(alignment).without_seed_tokens([1, 2])
    assert state.seed_text() == b"a d"
    assert state.variant_text() == b"a X d"
    assert state.diff_tokens() == 1


def test_deleting_a_common_token_through_the_variant_deletes_it_from_the_seed() -> None:
    alignment = Alignment.of(b"f(a, b);", b"f(a, b, c);")
    state = PairState.full(alignment)
    b_in_variant = alignment.variant.texts().index(b"b")
    smaller = state.without_variant_tokens([b_in_variant])
    assert plain(smaller.seed_text()) == plain(b"f(a, );")
    assert plain(smaller.variant_text()) == plain(b"f(a, , c);")
    c_in_variant = alignment.variant.texts().index(b"c")
    only_variant = state.without_variant_tokens([c_in_variant])
    assert only_variant.seed_text() == b"f(a, b);"
    assert plain(only_variant.variant_text()) == plain(b"f(a, b,);")
    assert only_variant.diff_tokens() == 1


def test_deletions_never_glue_tokens_together() -> None:
    grammar = grammars.load("c")
    assert grammar is not None
    seed = b"int f(int a, int b) { return a+b-(-a)/(/**/b); }\n"
    variant = b"int f(int a, int b) { return a+b-(-a)/(/**/b) + 1; }\n"
    alignment = Alignment.of(seed, variant, grammar)
    texts = alignment.seed.texts()
    # `a+b` minus `+` must not read `ab`; `-(-a)` minus `(` not `--a`; `/(/**/b)` minus `(`
    # not `//**/b` (a comment)
    doomed = [texts.index(b"+"), *[i for i, t in enumerate(texts) if t in (b"(", b")")][2:]]
    state = PairState.full(alignment).without_seed_tokens(doomed)
    seed_text, variant_text = state.seed_text(), state.variant_text()
    assert b"a b" in seed_text and b"--" not in seed_text and b"//" not in seed_text
    parsed_seed = tokenize(seed_text, grammar).texts()
    parsed_variant = tokenize(variant_text, grammar).texts()
    assert parsed_seed == state.seed_token_texts()
    assert parsed_variant == state.variant_token_texts()
    assert state.diff_tokens() == 2
    # nothing deleted, nothing spaced: a subset of hunks keeps the original bytes around them
    assert PairState.full(alignment).with_hunks(()).variant_text() == seed


def test_whitespace_differences_follow_their_hunk() -> None:
    """Python: an inserted `if` re-indents common lines; they must move with the `if`."""
    grammar = grammars.load("python")
    assert grammar is not None
    seed = b"def f(c):\n    x = 1\n    return x\n"
    variant = b"def f(c):\n    if c:\n        x = 1\n    return x\n"
    alignment = Alignment.of(seed, variant, grammar)
    assert alignment.diff_size == 3  # `if` `c` `:`
    full = PairState.full(alignment)
    assert full.variant_text() == variant
    assert full.with_hunks(()).variant_text() == seed


def test_empty_and_identical_programs() -> None:
    empty = Alignment.of(b"", b"")
    assert PairState.full(empty).seed_text() == b"" and PairState.full(empty).variant_text() == b""
    only_space = Alignment.of(b"  \n", b"\n")
    assert PairState.full(only_space).variant_text() == b"\n"
    same_tokens = Alignment.of(b"a  b\n", b"a b\n")
    assert same_tokens.hunks == ()
    assert PairState.full(same_tokens).variant_text() == b"a b\n"
    assert PairState.full(same_tokens).diff_tokens() == 0
    grows = Alignment.of(b"", b"int x;")
    assert PairState.full(grows).variant_text() == b"int x;"
    assert PairState.full(grows).with_hunks(()).variant_text() == b""
    everything_gone = PairState.full(grows).without_variant_tokens(range(3))
    assert everything_gone.variant_text() == b""
    assert everything_gone.live_hunks() == ()


def test_states_are_values() -> None:
    alignment = Alignment.of(b"a b c d e", b"a X c d Y e")
    full = PairState.full(alignment)
    one_way = full.without_seed_tokens([0]).without_seed_tokens([3])
    other_way = full.without_seed_tokens([3, 0])
    assert one_way == other_way and hash(one_way) == hash(other_way)
    assert len({one_way, other_way, full}) == 2
    assert full.with_hunks(range(len(alignment.hunks))) is full
    assert full.without_seed_tokens([]) is full
    assert full.with_hunks([0]) != full
    assert PairState.full(Alignment.of(b"a b c d e", b"a X c d Y e")) != full  # another alignment


def test_live_hunks_and_variant_order() -> None:
    alignment = Alignment.of(b"p a q b r", b"p A q r B")
    state = PairState.full(alignment)
    assert state.live_hunks() == tuple(range(len(alignment.hunks)))
    order = state.variant_order()
    assert [alignment.variant.token(i) for side, i in order if side == VARIANT] == plain(
        b"p A q r B"
    )
    unapplied = state.with_hunks(())
    assert all(side == SEED for side, _ in unapplied.variant_order())
    first = alignment.hunks[0]
    gone = state.without_seed_tokens(range(first.seed_start, first.seed_end))
    gone = gone.without_variant_tokens(range(first.variant_start, first.variant_end))
    assert first.index not in gone.live_hunks()


def test_out_of_range_indices_are_rejected() -> None:
    state = PairState.full(Alignment.of(b"a b", b"a c"))
    with pytest.raises(IndexError):
        state.without_seed_tokens([2])
    with pytest.raises(IndexError):
        state.without_variant_tokens([-1])
    with pytest.raises(IndexError):
        state.with_hunks([1])


# --- real programs -----------------------------------------------------------------------------

C_SEED = b"""\
#include <stdio.h>
/* a comment that is trivia */
static int g = 1;
int f(int a, int b) {
    if (a > b)
        return a - b;   // trailing comment
    return g + "x"[0];
}
int main(void) { printf("%d\\n", f(3, 4)); return 0; }
"""
C_VARIANT = b"""\
#include <stdio.h>
/* a comment that is trivia */
static int g = 2;
int f(int a, int b) {
    {
        if (a >= b)
            return a - b - 1;
    }
    return g + "y"[0];
}
int main(void) { printf("%d\\n", f(3, 4) * 2); return 0; }
"""
RUST_SEED = b"""\
pub struct Table<const N: usize, T = u16> { slots: [T; N] }
fn make() -> Table<1024, u16> { todo!() }
impl<const N: usize> Table<N> {
    fn len(&self) -> usize { N }
}
"""
RUST_VARIANT = b"""\
pub struct Table<const N: usize, T = u16> { slots: [T; N] }
fn make() -> Table<1024> { todo!() }
impl<const N: usize> Table<N> {
    fn len(&self) -> usize { N + 0 }
    fn cap(&self) -> usize { N }
}
"""
# (seed tokens, variant tokens, difference size) as the benchmarks' reference token counter
# reports them (`tokens.py SEED VARIANT` on the snippets written to .c and .rs files, run once
# with tree-sitter 0.26.1, tree-sitter-c 0.24.2 and tree-sitter-rust 0.24.2)
SNIPPETS = [
    ("c", C_SEED, C_VARIANT, (65, 71, 12)),
    ("rust", RUST_SEED, RUST_VARIANT, (63, 74, 15)),
]


@pytest.mark.parametrize(("language", "seed", "variant", "benchmark_figures"), SNIPPETS)
def test_real_snippets_patch_exactly(
    language: str, seed: bytes, variant: bytes, benchmark_figures: tuple[int, int, int]
) -> None:
    grammar = grammars.load(language)
    assert grammar is not None
    alignment = Alignment.of(seed, variant, grammar)
    full = PairState.full(alignment)
    assert full.seed_text() == seed
    assert full.variant_text() == variant
    assert full.with_hunks(()).variant_text() == seed
    seed_tokens, variant_tokens, diff = measured(grammar, seed, variant)
    assert (len(seed_tokens), len(variant_tokens), diff) == benchmark_figures
    assert alignment.seed.texts() == seed_tokens
    assert alignment.variant.texts() == variant_tokens
    assert full.diff_tokens() == alignment.diff_size == diff
    for mask in range(1 << len(alignment.hunks)):
        subset = {index for index in range(len(alignment.hunks)) if mask >> index & 1}
        state = full.with_hunks(subset)
        got_seed, got_variant, got_diff = measured(grammar, state.seed_text(), state.variant_text())
        assert got_seed == seed_tokens
        assert got_variant == state.variant_token_texts() == expected_variant(alignment, subset)
        assert state.diff_tokens() == got_diff
        assert state.variant_tokens() == len(got_variant)


@pytest.mark.parametrize(
    "name", ["gcc12-pr109392", "gxx12-pr109804", "rustc195-105238", "toy-gcc-pattern"]
)
def test_benchmark_cases(name: str) -> None:
    """On the public cases: every patched pair measures what the state says it does."""
    case = CASES / name
    (seed_path,) = case.glob("seed.*")
    (variant_path,) = case.glob("variant.*")
    language = grammars.detect(seed_path.name)
    assert language is not None
    grammar = grammars.load(language)
    assert grammar is not None
    seed, variant = seed_path.read_bytes(), variant_path.read_bytes()
    alignment = Alignment.of(seed, variant, grammar)
    full = PairState.full(alignment)
    assert full.seed_text() == seed
    assert full.variant_text() == variant
    assert full.with_hunks(()).variant_text() == seed
    assert full.diff_tokens() == alignment.diff_size

    rng = random.Random(case.name)
    hunk_count = len(alignment.hunks)
    for _ in range(4):  # random halves of the difference (MinLdiff candidates)
        subset = set(rng.sample(range(hunk_count), hunk_count // 2))
        state = full.with_hunks(subset)
        got_seed, got_variant, got_diff = measured(grammar, state.seed_text(), state.variant_text())
        assert got_seed == alignment.seed.texts()
        assert got_variant == state.variant_token_texts()
        assert state.diff_tokens() == got_diff

    # MinCommonality: delete whole top-level definitions that hold no difference; the
    # variant loses the same tokens and the difference stays what it was
    tree = grammar.parser().parse(seed)
    state = full
    starts = alignment.seed.starts
    for node in tree.root_node.children:
        first = _token_at(starts, node.start_byte)
        last = _token_at(starts, node.end_byte)
        common = all(alignment.seed_hunk[i] < 0 for i in range(first, last))
        if last > first and common and rng.random() < 0.5:
            state = state.without_seed_tokens(range(first, last))
    assert state.seed_tokens() < full.seed_tokens()
    got_seed, got_variant, got_diff = measured(grammar, state.seed_text(), state.variant_text())
    assert got_seed == state.seed_token_texts()
    assert got_variant == state.variant_token_texts()
    assert state.diff_tokens() == got_diff == alignment.diff_size


def _token_at(starts: list[int], offset: int) -> int:
    """Index of the first token starting at or after `offset`."""
    return bisect_left(starts, offset)


def test_state_types() -> None:
    state = PairState.full(Alignment.of(b"a", b"b"))
    assert isinstance(state, PairState)
    assert isinstance(state.alignment.ops[0], Hunk)
