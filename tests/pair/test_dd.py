"""dd isolation against in-process tests: the failure-inducing hunk, interactions, 1-minimality."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gitreduce.lang import grammars
from gitreduce.pair.alignment import Alignment
from gitreduce.pair.dd import Subset, Verdict, dd, dd_search, isolate_hunks, isolate_tokens
from gitreduce.pair.state import PairState


class Recorder:
    """A test function that remembers every subset it was asked about, in order."""

    def __init__(self, rule: Callable[[frozenset[int]], Verdict]) -> None:
        self.rule = rule
        self.calls: list[Subset] = []

    def __call__(self, subset: Subset) -> Verdict:
        self.calls.append(subset)
        return self.rule(frozenset(subset))


def fails_with(*needed: int) -> Callable[[frozenset[int]], Verdict]:
    return lambda subset: "fail" if set(needed) <= subset else "pass"


def assert_isolated(
    result: tuple[Subset, Subset], rule: Callable[[frozenset[int]], Verdict]
) -> None:
    """Zeller's guarantee: c_pass passes, c_fail fails, and no single change can be moved."""
    c_pass, c_fail = result
    assert set(c_pass) <= set(c_fail)
    assert rule(frozenset(c_pass)) == "pass"
    assert rule(frozenset(c_fail)) == "fail"
    for change in set(c_fail) - set(c_pass):
        assert rule(frozenset(c_pass) | {change}) != "pass"
        assert rule(frozenset(c_fail) - {change}) != "fail"


def test_finds_the_single_failure_inducing_change_among_many() -> None:
    changes = tuple(range(200))
    test = Recorder(fails_with(137))
    c_pass, c_fail = dd(changes, test)
    assert set(c_fail) - set(c_pass) == {137}
    assert_isolated((c_pass, c_fail), fails_with(137))
    assert len(test.calls) <= 4 * 8  # logarithmic: a few tests per halving


def test_interacting_changes_are_isolated_to_one_given_the_other() -> None:
    changes = tuple(range(64))
    rule = fails_with(5, 50)
    c_pass, c_fail = dd(changes, Recorder(rule))
    difference = set(c_fail) - set(c_pass)
    assert len(difference) == 1
    (culprit,) = difference
    assert culprit in {5, 50}
    assert ({5, 50} - {culprit}) <= set(c_pass)  # the partner is part of the passing side
    assert_isolated((c_pass, c_fail), rule)


def test_unresolved_configurations_keep_a_larger_difference() -> None:
    """3 and 4 only compile together (a use and its declaration): both stay in the difference."""

    def rule(subset: frozenset[int]) -> Verdict:
        if (3 in subset) != (4 in subset):
            return "unresolved"
        return "fail" if 3 in subset else "pass"

    c_pass, c_fail = dd(tuple(range(10)), Recorder(rule))
    assert set(c_fail) - set(c_pass) == {3, 4}
    assert_isolated((c_pass, c_fail), rule)


def test_starting_from_a_passing_subset() -> None:
    rule = fails_with(1, 7, 8)
    c_pass, c_fail = dd(tuple(range(10)), Recorder(rule), passing=(7, 1))
    assert {1, 7} <= set(c_pass)
    assert set(c_fail) - set(c_pass) == {8}
    assert_isolated((c_pass, c_fail), rule)
    with pytest.raises(ValueError):
        dd((1, 2), Recorder(rule), passing=(3,))
    with pytest.raises(ValueError):
        dd((1, 1), Recorder(rule))


def test_trivial_inputs_need_no_test() -> None:
    test = Recorder(fails_with(4))
    assert dd((4,), test) == ((), (4,))
    assert dd((), test) == ((), ())
    assert test.calls == []


def test_every_subset_is_tested_at_most_once_and_in_the_given_order() -> None:
    test = Recorder(fails_with(3, 11, 29))
    dd(tuple(range(40)), test)
    assert len(test.calls) == len(set(test.calls))
    for call in test.calls:
        assert list(call) == sorted(call)


def test_deterministic() -> None:
    runs = []
    for _ in range(3):
        test = Recorder(fails_with(2, 9, 33))
        result = dd(tuple(range(48)), test)
        runs.append((result, test.calls))
    assert runs[0] == runs[1] == runs[2]


def test_batched_search_gives_the_sequential_answer() -> None:
    rule = fails_with(12, 30)
    batches: list[list[Subset]] = []

    def find_first(candidates: Sequence[Subset], wanted: Verdict) -> int | None:
        batches.append(list(candidates))
        for position, candidate in enumerate(candidates):
            if rule(frozenset(candidate)) == wanted:
                return position
        return None

    assert dd_search(tuple(range(40)), find_first) == dd(tuple(range(40)), Recorder(rule))
    assert batches and all(batches)


def verdict_table(salt: int) -> Callable[[frozenset[int]], Verdict]:
    """An arbitrary deterministic test: any verdict for any subset, except the two ends."""

    def rule(subset: frozenset[int]) -> Verdict:
        digest = hashlib.sha256(f"{salt}:{sorted(subset)}".encode()).digest()
        return ("pass", "fail", "unresolved")[digest[0] % 3]

    return rule


@given(st.integers(1, 24), st.integers(0, 10**9), st.sets(st.integers(0, 23)))
def test_result_is_one_minimal_for_any_test(size: int, salt: int, passing: set[int]) -> None:
    changes = tuple(range(size))
    passing = {change for change in passing if change < size}
    table = verdict_table(salt)

    def rule(subset: frozenset[int]) -> Verdict:
        if subset == frozenset(passing):
            return "pass"
        if subset == frozenset(changes):
            return "fail"
        return table(subset)

    if frozenset(passing) == frozenset(changes):
        return
    result = dd(changes, Recorder(rule), passing=tuple(sorted(passing)))
    assert_isolated(result, rule)
    assert set(passing) <= set(result[0])


@given(st.integers(2, 40), st.data())
def test_monotone_failures_isolate_a_culprit(size: int, data: st.DataObject) -> None:
    culprits = data.draw(st.sets(st.integers(0, size - 1), min_size=1, max_size=3))
    rule = fails_with(*culprits)
    c_pass, c_fail = dd(tuple(range(size)), Recorder(rule))
    difference = set(c_fail) - set(c_pass)
    assert len(difference) == 1 and difference <= culprits
    assert culprits - difference <= set(c_pass)


# --- on a pair ---------------------------------------------------------------------------------

SEED = b"int a = 1;\nint b = 1;\nint c = 1;\nint d = 1;\nint main(void) { return a; }\n"
VARIANT = b"int a = 2;\nint b = 2;\nint c = 2;\nlong d = 1;\nint main(void) { return a + b; }\n"


def test_isolate_hunks_on_a_pair() -> None:
    grammar = grammars.load("c")
    assert grammar is not None
    state = PairState.full(Alignment.of(SEED, VARIANT, grammar))

    def test(candidate: PairState) -> Verdict:
        return "fail" if b"long d" in candidate.variant_text() else "pass"

    passing, failing = isolate_hunks(state, test)
    assert test(passing) == "pass" and test(failing) == "fail"
    assert failing.applied - passing.applied == {
        state.alignment.variant_hunk[state.alignment.variant.texts().index(b"long")]
    }
    # dd narrows the difference only: both programs keep every token
    assert passing.seed_text() == failing.seed_text() == SEED
    assert failing.diff_tokens() - passing.diff_tokens() == 2  # `int` -> `long`


def test_isolate_hunks_skips_hunks_reduced_away() -> None:
    grammar = grammars.load("c")
    assert grammar is not None
    alignment = Alignment.of(SEED, VARIANT, grammar)
    state = PairState.full(alignment)
    first = alignment.hunks[0]
    state = state.without_seed_tokens(range(first.seed_start, first.seed_end))
    state = state.without_variant_tokens(range(first.variant_start, first.variant_end))
    seen: list[frozenset[int]] = []

    def test(candidate: PairState) -> Verdict:
        seen.append(candidate.applied)
        return "fail" if b"long d" in candidate.variant_text() else "pass"

    passing, failing = isolate_hunks(state, test)
    assert first.index in passing.applied and first.index in failing.applied
    assert all(first.index in applied for applied in seen)


def test_isolate_tokens_grows_a_passing_program_from_nothing() -> None:
    """The PPR paper's DD: the variant's tokens are the changes, the empty program passes."""
    grammar = grammars.load("c")
    assert grammar is not None
    from_nothing = PairState.full(Alignment.of(b"", VARIANT, grammar))
    steps: list[tuple[bytes, bytes]] = []

    def test(candidate: PairState) -> Verdict:
        text = candidate.variant_text()
        return "fail" if b"long" in text and b"main" in text else "pass"

    passing, failing = isolate_tokens(
        from_nothing, test, lambda p, f: steps.append((p.variant_text(), f.variant_text()))
    )
    assert test(passing) == "pass" and test(failing) == "fail"
    kept_passing = set(passing.variant_order())
    kept_failing = set(failing.variant_order())
    assert kept_passing < kept_failing and len(kept_failing - kept_passing) == 1
    # the first step is (empty program, variant); the last is the result
    assert steps[0][1] == VARIANT and steps[0][0].strip() == b""
    assert steps[-1] == (passing.variant_text(), failing.variant_text())
    # the seed plays no part: both programs are subsets of the variant's tokens
    assert passing.seed_text().strip() == b""


CASE = Path(__file__).resolve().parents[2] / "benchmarks" / "cases" / "gcc12-pr109392"


def test_isolate_hunks_on_a_benchmark_case() -> None:
    """The critical change of gcc12-pr109392 adds `returns_twice`: dd must single it out."""
    grammar = grammars.load("c")
    assert grammar is not None
    seed, variant = (CASE / "seed.c").read_bytes(), (CASE / "variant.c").read_bytes()
    state = PairState.full(Alignment.of(seed, variant, grammar))
    tests = 0

    def test(candidate: PairState) -> Verdict:
        nonlocal tests
        tests += 1
        return "fail" if b"returns_twice" in candidate.variant_text() else "pass"

    passing, failing = isolate_hunks(state, test)
    (culprit,) = failing.applied - passing.applied
    hunk = state.alignment.hunks[culprit]
    inserted = state.alignment.variant.texts()[hunk.variant_start : hunk.variant_end]
    assert b"returns_twice" in inserted
    assert tests < 40
