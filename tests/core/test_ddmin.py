"""ddmin against in-process predicates: minimality, subsets, idempotence, batch order."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable

from hypothesis import given, settings
from hypothesis import strategies as st

from gitreduce.core.ddmin import Plan, Subset, ddmin

Predicate = Callable[[Subset], bool]


class Oracle:
    """Adapts a plain predicate to ddmin's batch interface as the engine at one job does
    (reading candidates only up to the first success) and records what it read."""

    def __init__(self, predicate: Predicate) -> None:
        self.predicate = predicate
        self.batches: list[list[Subset]] = []

    def __call__(self, batch: Iterable[Subset]) -> int | None:
        read: list[Subset] = []
        self.batches.append(read)
        for index, subset in enumerate(batch):
            read.append(subset)
            if self.predicate(subset):
                return index
        return None

    @property
    def tried(self) -> list[Subset]:
        return [subset for batch in self.batches for subset in batch]


def contains_all(needed: frozenset[int]) -> Predicate:
    return lambda subset: needed <= set(subset)


def is_subsequence(small: Subset, big: Subset) -> bool:
    remaining = iter(big)
    return all(unit in remaining for unit in small)


def one_minimal(result: Subset, predicate: Predicate) -> bool:
    return all(not predicate(result[:i] + result[i + 1 :]) for i in range(len(result)))


def run(units: Subset, predicate: Predicate, *, try_empty: bool = True) -> Subset:
    return ddmin(units, Oracle(predicate), try_empty=try_empty)


# --- properties --------------------------------------------------------------------------

monotone_cases = st.integers(min_value=1, max_value=40).flatmap(
    lambda n: st.tuples(
        st.just(tuple(range(n))),
        st.frozensets(st.integers(min_value=0, max_value=n - 1), max_size=min(n, 6)),
    )
)


@settings(max_examples=200, deadline=None)
@given(monotone_cases, st.booleans())
def test_monotone_result_is_exactly_the_needed_units(case, try_empty):
    units, needed = case
    predicate = contains_all(needed)
    result = run(units, predicate, try_empty=try_empty)
    assert predicate(result)
    assert is_subsequence(result, units)
    assert one_minimal(result, predicate)
    # for "contains all of these" the only 1-minimal interesting subset is the needed set
    # (ddmin may only keep more than that when it is not allowed to try the empty set)
    if needed or try_empty:
        assert set(result) == needed


@settings(max_examples=200, deadline=None)
@given(monotone_cases, st.booleans())
def test_idempotent_on_monotone_predicates(case, try_empty):
    units, needed = case
    predicate = contains_all(needed)
    once = run(units, predicate, try_empty=try_empty)
    assert run(once, predicate, try_empty=try_empty) == once


def random_predicate(seed: int, full: Subset, density: int) -> Predicate:
    """An arbitrary deterministic predicate (not monotone) that holds for the full set."""

    def predicate(subset: Subset) -> bool:
        if subset == full:
            return True
        digest = hashlib.sha1(repr((seed, subset)).encode()).digest()
        return digest[0] % density == 0

    return predicate


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.integers(-1000, 1000), unique=True, max_size=25).map(tuple),
    st.integers(0, 2**32),
    st.integers(2, 5),
    st.booleans(),
)
def test_any_predicate_gives_interesting_one_minimal_subsequence(units, seed, density, empty):
    predicate = random_predicate(seed, units, density)
    oracle = Oracle(predicate)
    result = ddmin(units, oracle, try_empty=empty)
    assert predicate(result)
    assert is_subsequence(result, units)
    assert one_minimal(result, predicate)
    # every candidate ddmin asks about is a proper subsequence of the input
    for candidate in oracle.tried:
        assert is_subsequence(candidate, units) and len(candidate) < len(units)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.integers(0, 100), unique=True, min_size=1, max_size=20).map(tuple),
    st.integers(0, 2**32),
)
def test_deterministic(units, seed):
    predicate = random_predicate(seed, units, 3)
    first, second = Oracle(predicate), Oracle(predicate)
    assert ddmin(units, first) == ddmin(units, second)
    assert first.batches == second.batches


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.integers(0, 100), unique=True, min_size=1, max_size=25).map(tuple),
    st.integers(0, 2**32),
    st.integers(2, 5),
    st.booleans(),
    st.booleans(),
)
def test_what_a_plan_says_follows_a_success_is_what_ddmin_reads_next(
    units, seed, density, empty, ahead
):
    """On any predicate, after each batch with a winner, the next batch reads exactly what
    `Plan.after` gave for that winner, in order, as far as it reads; after the last batch
    with a winner, ddmin reads nothing more when `after` gives nothing."""
    predicate = random_predicate(seed, units, density)
    oracle = Oracle(predicate)
    promised: list[list[Subset] | None] = []

    def first_success(plan: Plan) -> int | None:
        winner = oracle(plan)
        promised.append(None if winner is None else list(plan.after(winner)))
        return winner

    ddmin(units, first_success, try_empty=empty, ahead=ahead)
    for position, following in enumerate(promised):
        if following is None:
            continue
        if position + 1 == len(promised):
            assert following == []
            continue
        read = oracle.batches[position + 1]
        assert read == following[: len(read)]


@settings(max_examples=100, deadline=None)
@given(monotone_cases)
def test_result_depends_only_on_the_first_success_of_each_batch(case):
    """A batch oracle that evaluates every candidate gives the same answer as a lazy one."""
    units, needed = case
    predicate = contains_all(needed)

    def eager(batch: Iterable[Subset]) -> int | None:
        verdicts = [predicate(subset) for subset in reversed(list(batch))][::-1]
        return verdicts.index(True) if True in verdicts else None

    assert ddmin(units, eager) == run(units, predicate)


# --- examples ----------------------------------------------------------------------------


def test_single_needed_unit():
    units = tuple(range(100))
    oracle = Oracle(contains_all(frozenset({37})))
    assert ddmin(units, oracle) == (37,)
    assert len(oracle.tried) < 60  # logarithmic-ish, nowhere near 2^100


def test_needed_pair_far_apart():
    units = tuple(range(64))
    assert run(units, contains_all(frozenset({0, 63}))) == (0, 63)


def test_keeps_the_input_order():
    units = (9, 3, 7, 1, 5)
    assert run(units, contains_all(frozenset({5, 9}))) == (9, 5)


def test_empty_result_when_try_empty():
    oracle = Oracle(lambda subset: True)
    assert ddmin(tuple(range(10)), oracle, try_empty=True) == ()
    assert oracle.batches == [[()]]  # a single test


def test_try_empty_false_does_not_start_with_the_empty_set():
    oracle = Oracle(lambda subset: True)
    result = ddmin(tuple(range(10)), oracle, try_empty=False)
    assert oracle.batches[0] != [()]
    assert one_minimal(result, lambda subset: True)


def test_empty_input():
    oracle = Oracle(lambda subset: True)
    assert ddmin((), oracle) == ()
    assert oracle.batches == []


def test_single_unit_that_is_needed():
    assert run((4,), contains_all(frozenset({4}))) == (4,)
    assert run((4,), contains_all(frozenset({4})), try_empty=False) == (4,)


def test_nothing_removable():
    units = tuple(range(12))
    oracle = Oracle(lambda subset: subset == units)
    assert ddmin(units, oracle) == units
    # the final round tried removing each unit on its own
    singles = {units[:i] + units[i + 1 :] for i in range(len(units))}
    assert singles <= set(oracle.tried)


def test_first_round_tries_both_halves():
    oracle = Oracle(lambda subset: False)
    units = tuple(range(8))
    ddmin(units, oracle, try_empty=False, ahead=False)
    assert oracle.batches[0] == [(4, 5, 6, 7), (0, 1, 2, 3)]


def test_ahead_the_next_batches_follow_a_failing_one_in_the_same_call():
    """A batch of one (the empty set) and the end of each batch no longer leave jobs
    idle: the granularities after a failing batch come in the same call, lazily."""
    oracle = Oracle(lambda subset: False)
    ddmin(tuple(range(8)), oracle)
    assert len(oracle.batches) == 1
    assert oracle.tried[:3] == [(), (4, 5, 6, 7), (0, 1, 2, 3)]
    assert oracle.tried[-8:] == [tuple(u for u in range(8) if u != k) for k in range(8)]


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=1, max_value=30), st.integers(min_value=0, max_value=10**6))
def test_reading_ahead_tries_the_same_candidates_in_the_same_order(count, seed):
    """What one job tests, and the result, are the same batch by batch or read ahead."""
    units = tuple(range(count))
    for try_empty in (True, False):
        predicate = random_predicate(seed, units, 3)
        batched, ahead = Oracle(predicate), Oracle(predicate)
        result = ddmin(units, batched, try_empty=try_empty, ahead=False)
        assert ddmin(units, ahead, try_empty=try_empty) == result
        assert ahead.tried == batched.tried
