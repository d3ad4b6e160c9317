"""How a candidate pair is judged: the likelier refusal first, the other side beside it
while a job idles, and nothing left running once an answer is known."""

from __future__ import annotations

import threading
import time

import pytest
from support import run_until_abandoned

from gitreduce.core.engine import Engine
from gitreduce.core.keys import blob_id
from gitreduce.core.outcome import Outcome, Verdict
from gitreduce.pair.current import PairCandidate, PairJudge, Refusals

SMALLER = (0, 1)  # the measure of every candidate here: below the judge's limit
LIMIT = (1, 0)


def verdict(text: bytes) -> Outcome:
    """Bad (the bug) for texts with a `!`, good otherwise."""
    if b"!" in text:
        return Outcome(Verdict.BAD, 1, 0.0, "exit 1")
    return Outcome(Verdict.GOOD, 0, 0.0)


def seed_ok(outcome: Outcome) -> bool:
    return outcome.verdict is Verdict.GOOD


def variant_ok(outcome: Outcome) -> bool:
    return outcome.verdict is Verdict.BAD


@pytest.fixture
def engines():
    made: list[Engine] = []
    yield made
    for engine in made:
        engine.close()


def judged(engines, run, pairs: list[tuple[bytes, bytes]], jobs: int):
    engine = Engine(run, variant_ok, jobs=jobs)
    engines.append(engine)
    judge = PairJudge(engine, seed_ok, variant_ok, None, LIMIT)
    candidates = [PairCandidate(seed, variant, SMALLER) for seed, variant in pairs]
    return engine, engine.first_judged(candidates, judge, label="test")


def settle(engine: Engine) -> None:
    deadline = time.monotonic() + 10
    while engine._jobs.busy() and time.monotonic() < deadline:
        time.sleep(0.01)


def test_the_second_sides_test_runs_beside_the_first_while_a_job_idles(engines):
    """One pair, two jobs: each test holds until the other has started, which only
    happens when the second runs beside the first (one after the other, the first
    would wait in vain)."""
    started = {b"seed": threading.Event(), b"bug!": threading.Event()}

    def run(text: bytes) -> Outcome:
        started[text].set()
        other = b"seed" if text == b"bug!" else b"bug!"
        assert started[other].wait(10), "the other side's test never ran beside this one"
        return verdict(text)

    engine, found = judged(engines, run, [(b"seed", b"bug!")], jobs=2)
    assert found is not None and found[0] == 0
    assert engine.stats.tests_run == 2


def test_a_batchs_next_candidate_goes_before_a_test_beside(engines):
    """Two pairs, two jobs: both first tests (the variants: no refusals seen yet) run at
    once, each holding until the other started, which only happens if the first pair's
    second test (a seed's, lasting until given up) did not take the idle job."""
    started = {b"one": threading.Event(), b"two": threading.Event()}

    def run(text: bytes) -> Outcome:
        if text not in started:
            run_until_abandoned()
        started[text].set()
        other = b"two" if text == b"one" else b"one"
        assert started[other].wait(10), "the second pair's first test waited"
        return verdict(text)

    began = time.monotonic()
    engine, found = judged(engines, run, [(b"seed 1", b"one"), (b"seed 2", b"two")], jobs=2)
    assert found is None
    settle(engine)
    assert time.monotonic() - began < 10
    assert engine.cache.get(blob_id(b"seed 1")) is None


def test_an_idle_job_warms_up_what_comes_next_before_a_test_beside(engines):
    """One pair left in the batch, two jobs: its first test (the variant's) holds until
    another test starts. The idle job takes the first test of what the batch's lookahead
    offers (asked next unless this pair wins, and most pairs' first tests refuse), not
    this pair's second test; the second runs once the first has passed."""
    order: list[bytes] = []
    other_started = threading.Event()

    def run(text: bytes) -> Outcome:
        order.append(text)
        if text == b"bug 1!":
            assert other_started.wait(10), "no other test started beside the first"
        else:
            other_started.set()
        return verdict(text)

    engine = Engine(run, variant_ok, jobs=2)
    engines.append(engine)
    judge = PairJudge(engine, seed_ok, variant_ok, None, LIMIT)
    found = engine.first_judged(
        [PairCandidate(b"seed 1", b"bug 1!", SMALLER)],
        judge,
        label="test",
        lookahead=lambda: iter([PairCandidate(b"seed 2", b"bug 2!", SMALLER)]),
    )
    assert found is not None and found[0] == 0
    assert order[:2] == [b"bug 1!", b"bug 2!"], order
    assert b"seed 1" in order


def test_the_test_beside_is_stopped_once_the_first_refuses(engines):
    """The variant (asked first: no refusals seen yet) is not bad: the seed's test
    running beside it is stopped at once, and leaves no verdict behind."""
    finished: list[bytes] = []

    def run(text: bytes) -> Outcome:
        if text == b"seed":
            run_until_abandoned()
        finished.append(text)
        return verdict(text)

    began = time.monotonic()
    engine, found = judged(engines, run, [(b"seed", b"no bug")], jobs=2)
    assert found is None
    settle(engine)
    assert time.monotonic() - began < 10
    assert finished == [b"no bug"]
    assert engine.cache.get(blob_id(b"seed")) is None


def test_a_judgement_given_up_stops_its_test_beside_too(engines):
    """Four jobs, two pairs, each pair's two tests at once: the first pair wins while
    the second pair's two tests still run (one as the judgement's, one beside it); both
    are stopped."""
    finished: list[bytes] = []
    loser_started = threading.Event()
    lock = threading.Lock()
    loser_running = 0

    def run(text: bytes) -> Outcome:
        nonlocal loser_running
        if text in (b"late seed", b"late!"):
            with lock:
                loser_running += 1
                if loser_running == 2:
                    loser_started.set()
            run_until_abandoned()
        else:
            assert loser_started.wait(10), "the second pair's tests did not both start"
        finished.append(text)
        return verdict(text)

    began = time.monotonic()
    engine, found = judged(engines, run, [(b"seed", b"bug!"), (b"late seed", b"late!")], jobs=4)
    assert found is not None and found[0] == 0
    settle(engine)
    assert time.monotonic() - began < 10
    assert sorted(finished) == [b"bug!", b"seed"]
    assert engine.cache.get(blob_id(b"late seed")) is None
    assert engine.cache.get(blob_id(b"late!")) is None


def test_one_job_asks_one_side_at_a_time_and_a_refusal_costs_one_test(engines):
    running: list[bytes] = []
    most = 0
    lock = threading.Lock()

    def run(text: bytes) -> Outcome:
        nonlocal most
        with lock:
            running.append(text)
            most = max(most, len(running))
        time.sleep(0.05)
        with lock:
            running.remove(text)
        return verdict(text)

    engine, found = judged(engines, run, [(b"seed", b"no bug"), (b"seed", b"bug!")], jobs=1)
    assert found is not None and found[0] == 1
    assert most == 1
    assert engine.stats.tests_run == 3  # `no bug`; then `bug!` and `seed`


def test_a_pair_whose_sides_are_the_same_text_is_refused_without_a_test(engines):
    """A deletion that takes the whole difference (the statement holding it, its
    function) leaves one text on both sides, which cannot pass and fail at once: no
    test is spent on it, the next pair is judged as usual."""
    tested: list[bytes] = []

    def run(text: bytes) -> Outcome:
        tested.append(text)
        return verdict(text)

    engine, found = judged(engines, run, [(b"same", b"same"), (b"seed", b"bug!")], jobs=1)
    assert found is not None and found[0] == 1
    assert sorted(tested) == [b"bug!", b"seed"]
    assert engine.stats.tests_run == 2


def test_a_measure_that_costs_a_count_is_counted_only_for_pairs_that_parse(engines):
    """A pair whose measure is a count (a deletion beside a changed token: both texts
    tokenized and aligned) is counted once its texts pass the syntax check, and only
    then: a pair the check refuses costs no count, one the count finds no smaller costs
    no test, and one found smaller is tested and taken."""
    counted: list[bytes] = []
    tested: list[bytes] = []

    def run(text: bytes) -> Outcome:
        tested.append(text)
        return verdict(text)

    def counting(seed: bytes, measure: tuple[int, int]):
        def count() -> tuple[int, int]:
            counted.append(seed)
            return measure

        return count

    def parses(text: bytes) -> bool:
        return b"?" not in text

    engine = Engine(run, variant_ok, jobs=1)
    engines.append(engine)
    judge = PairJudge(engine, seed_ok, variant_ok, (parses, parses), LIMIT)
    candidates = [
        PairCandidate(b"broken?", b"bug!", counting(b"broken?", SMALLER)),
        PairCandidate(b"larger", b"bug!", counting(b"larger", LIMIT)),
        PairCandidate(b"seed", b"bug!", counting(b"seed", SMALLER)),
    ]
    found = engine.first_judged(candidates, judge, label="test")
    assert found is not None and found[0] == 2
    assert counted == [b"larger", b"seed"]
    assert sorted(tested) == [b"bug!", b"seed"]
    assert engine.stats.not_smaller == 1 and engine.stats.syntax_rejected == 1


def _first_tested_of(engines, cached_first: list[bytes], asked: list[tuple[bytes, bytes]]):
    """The texts tested for each pair of `asked` (one batch each, one job), once
    `cached_first` were tested alone: every judge shares one tally of refusals."""
    tested: list[bytes] = []

    def run(text: bytes) -> Outcome:
        tested.append(text)
        return verdict(text)

    engine = Engine(run, variant_ok, jobs=1)
    engines.append(engine)
    for text in cached_first:
        engine.test(text)
    refusals = Refusals()
    per_pair = []
    for seed, variant in asked:
        judge = PairJudge(engine, seed_ok, variant_ok, None, LIMIT, refusals)
        tested.clear()
        engine.first_judged([PairCandidate(seed, variant, SMALLER)], judge, label="test")
        per_pair.append(list(tested))
    return per_pair


def test_a_pair_the_cache_already_refuses_counts_as_a_refusal(engines):
    """A spare job tested the seed ahead (a lift's test beside the variant's sweeps): the
    pair is refused from the cache, as one job would refuse it by testing, and the next
    pair asks the seed first, as it would at one job."""
    per_pair = _first_tested_of(
        engines, [b"seed 1!"], [(b"seed 1!", b"bug 1!"), (b"seed 2!", b"bug 2!")]
    )
    assert per_pair == [[], [b"seed 2!"]]


def test_a_pair_refused_twice_counts_once(engines):
    """The same pair read twice (ahead of its batch, then in it) is one refusal: after it
    and one refusal by a variant, the sides are even and the variant goes first."""
    per_pair = _first_tested_of(
        engines,
        [b"seed 1!"],
        [(b"seed 1!", b"bug 1!"), (b"seed 1!", b"bug 1!"), (b"seed 2", b"no bug 2"), (b"s", b"b")],
    )
    assert per_pair[:2] == [[], []]
    assert per_pair[3] == [b"b"]
