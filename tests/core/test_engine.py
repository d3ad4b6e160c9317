"""The engine with in-process tests: deterministic winner, the gate, the cache, stats."""

from __future__ import annotations

import os
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator

import pytest
from support import eventually, processes, run_until_abandoned

from gitreduce.core import tickets
from gitreduce.core.engine import Engine
from gitreduce.core.errors import Interrupted
from gitreduce.core.keys import blob_id
from gitreduce.core.outcome import MemoryCache, Outcome, Verdict
from gitreduce.oracle.runner import Oracle
from gitreduce.oracle.spec import TestSpec


class Recorder:
    """A run_test that says BAD for texts containing `b"!"`, sleeping as told, logging runs."""

    def __init__(self, delay: Callable[[bytes], float] = lambda text: 0.0) -> None:
        self.delay = delay
        self.started: list[bytes] = []
        self.finished: list[bytes] = []
        self.lock = threading.Lock()
        self.running = 0
        self.max_running = 0

    def __call__(self, text: bytes) -> Outcome:
        with self.lock:
            self.started.append(text)
            self.running += 1
            self.max_running = max(self.max_running, self.running)
        try:
            time.sleep(self.delay(text))
        finally:
            with self.lock:
                self.running -= 1
                self.finished.append(text)
        if b"!" in text:
            return Outcome(Verdict.BAD, 1, 0.0, "exit 1")
        return Outcome(Verdict.GOOD, 0, 0.0)


def is_bad(outcome: Outcome) -> bool:
    return outcome.verdict is Verdict.BAD


@pytest.fixture
def make_engine():
    engines: list[Engine] = []

    def make(recorder: Recorder, jobs: int = 1) -> Engine:
        engine = Engine(recorder, is_bad, jobs=jobs)
        engines.append(engine)
        return engine

    yield make
    for engine in engines:
        engine.close()


@pytest.mark.parametrize("content", [b"", b"hello\n", b"\0binary\xff" * 50])
def test_blob_id_is_gits(content):
    git = subprocess.run(
        ["git", "hash-object", "--stdin"], input=content, capture_output=True, check=True
    )
    assert blob_id(content) == git.stdout.decode().strip()


# --- deterministic winner ----------------------------------------------------------------


def test_lowest_index_wins_even_when_a_later_one_finishes_first(make_engine):
    # earlier candidates take longer: index 3 (interesting) finishes first, then 1
    candidates = [b"c0", b"c1!", b"c2", b"c3!"]
    slowness = {text: 0.1 * (len(candidates) - i) for i, text in enumerate(candidates)}
    recorder = Recorder(lambda text: slowness[text])
    engine = make_engine(recorder, jobs=4)
    assert engine.first_success(candidates, smaller_than=100, label="test") == (1, b"c1!")
    assert recorder.max_running == 4  # all ran at once
    assert recorder.finished.index(b"c3!") < recorder.finished.index(b"c1!")
    assert engine.stats.interesting == 1


def test_later_success_is_returned_once_earlier_ones_fail(make_engine):
    candidates = [b"c0", b"c1", b"c2!", b"c3"]
    recorder = Recorder(lambda text: 0.15 if text == b"c0" else 0.0)
    engine = make_engine(recorder, jobs=4)
    assert engine.first_success(candidates, smaller_than=100, label="test") == (2, b"c2!")


def test_none_when_nothing_is_interesting(make_engine):
    engine = make_engine(Recorder(), jobs=2)
    assert engine.first_success([b"a", b"b", b"c"], smaller_than=100, label="test") is None
    assert engine.first_success([], smaller_than=100, label="test") is None
    assert engine.stats.interesting == 0


@pytest.mark.parametrize("jobs", [1, 2, 4])
def test_same_answer_for_any_jobs(make_engine, jobs):
    candidates = [b"x" * n + (b"!" if n % 5 == 3 else b"") for n in range(1, 12)]
    recorder = Recorder(lambda text: 0.01 * (len(text) % 3))
    engine = make_engine(recorder, jobs=jobs)
    assert engine.first_success(candidates, smaller_than=100, label="test") == (2, b"xxx!")
    assert recorder.max_running <= jobs


def test_candidates_are_pulled_lazily_and_never_past_a_known_success(make_engine):
    """At most one candidate is read ahead while the test before it runs (none once that
    test has ended), and none once a success is known."""
    pulled: list[int] = []

    def candidates() -> Iterator[bytes]:
        for index in range(100):
            pulled.append(index)
            yield b"c%d" % index + (b"!" if index == 2 else b"")

    recorder = Recorder()
    engine = make_engine(recorder, jobs=1)
    assert engine.first_success(candidates(), smaller_than=100, label="test") == (2, b"c2!")
    assert pulled in ([0, 1, 2], [0, 1, 2, 3])
    assert recorder.started == [b"c0", b"c1", b"c2!"]


def checked_during_tests(
    make_engine, batch: list[bytes], seconds: float
) -> tuple[list[int], list[bytes]]:
    """One job, tests of `seconds`, candidates starting with `bad` rejected by the syntax
    check: how many tests had ended at each check, and the candidates tested."""
    recorder = Recorder(lambda text: seconds)
    tests_ended_at_check: list[int] = []

    def precheck(text: bytes) -> bool:
        tests_ended_at_check.append(len(recorder.finished))
        return not text.startswith(b"bad")

    engine = make_engine(recorder, jobs=1)
    assert engine.first_success(batch, smaller_than=100, label="t", precheck=precheck) is None
    return tests_ended_at_check, recorder.started


def test_the_next_candidates_cheap_checks_run_while_the_test_before_it_does(make_engine):
    """One job: the syntax check of each candidate after the first runs during the test of
    the one before, so a job never waits for it; the rejected ones are read through too."""
    batch = [b"a", b"bad1", b"bad2", b"b", b"c"]
    checked, started = checked_during_tests(make_engine, batch, 0.3)
    assert checked == [0, 0, 0, 0, 1]  # one at a time: [0, 1, 1, 1, 2]
    assert started == [b"a", b"b", b"c"]


def test_a_long_stretch_of_syntax_rejections_is_read_through_while_the_test_runs(make_engine):
    """An exhaustive pass's candidates are mostly rejected by the syntax check, dozens in a
    row: all of them are checked during the test before, none while the job idles."""
    batch = [b"a", *(b"bad%d" % index for index in range(40)), b"b"]
    checked, started = checked_during_tests(make_engine, batch, 0.5)
    assert checked == [0] * len(batch)
    assert started == [b"a", b"b"]


def test_a_success_the_cheap_checks_find_while_every_job_is_busy_wins(make_engine):
    """Both jobs still held by an earlier batch's speculation: the next batch's candidates
    are read ahead, the second is known interesting from the cache, and that is the
    answer, at once, without waiting for the speculation to end."""
    release = threading.Event()
    recorder = Recorder()

    def run(text: bytes) -> Outcome:
        if text.startswith(b"slow"):
            assert release.wait(10)
        return recorder(text)

    engine = make_engine(run, jobs=3)
    try:
        engine.test(b"known-good")
        engine.test(b"known!")
        first = engine.first_success([b"won!", b"slow1", b"slow2"], smaller_than=100, label="t")
        assert first == (0, b"won!")
        engine.set_jobs(2)  # the two slow tests, given up, still hold both jobs
        batch = [b"known-good", b"known!", b"later"]
        assert engine.first_success(batch, smaller_than=100, label="t") == (1, b"known!")
        assert not release.is_set() and b"later" not in recorder.started
    finally:
        release.set()


def test_at_most_jobs_runs_at_once(make_engine):
    recorder = Recorder(lambda text: 0.1)
    engine = make_engine(recorder, jobs=3)
    assert (
        engine.first_success([b"%d" % i for i in range(10)], smaller_than=100, label="test") is None
    )
    assert recorder.max_running == 3
    assert engine.stats.tests_run == 10


def test_speculation_past_the_winner_is_abandoned_and_not_cached(make_engine):
    candidates = [b"w!", b"s1", b"s2", b"s3"]
    finished: list[bytes] = []

    def run(text: bytes) -> Outcome:
        if text != b"w!":
            run_until_abandoned()
        finished.append(text)
        return Recorder()(text)

    engine = make_engine(run, jobs=4)
    started = time.monotonic()
    assert engine.first_success(candidates, smaller_than=100, label="test") == (0, b"w!")
    # each abandoned judgement ends at once: stopped inside its run, or before it started one
    while engine._jobs.busy() and time.monotonic() - started < 30:
        time.sleep(0.01)
    assert time.monotonic() - started < 10
    assert finished == [b"w!"]
    assert engine.stats.tests_run == 1
    for text in candidates[1:]:
        assert engine.cache.get(blob_id(text)) is None


class _Stopped(Exception):
    """What a pass raises from its candidates to stop at once."""


def test_a_batch_its_candidates_stop_gives_up_the_judgements_in_flight(make_engine):
    """A pass may stop from inside its candidates (variant-first, once a lift beside the
    sweeps was refused): the exception ends the batch, and the tests still running for
    it are stopped, not left to hold the jobs the next batch needs."""
    running = threading.Event()

    def run(text: bytes) -> Outcome:
        running.set()
        run_until_abandoned()
        return Recorder()(text)

    def candidates() -> Iterator[bytes]:
        yield b"slow"
        assert running.wait(10)
        raise _Stopped

    engine = make_engine(run, jobs=2)
    started = time.monotonic()
    with pytest.raises(_Stopped):
        engine.first_success(candidates(), smaller_than=100, label="test")
    while engine._jobs.busy() and time.monotonic() - started < 30:
        time.sleep(0.01)
    assert time.monotonic() - started < 10
    assert engine.cache.get(blob_id(b"slow")) is None


def test_a_judgement_abandoned_before_its_test_starts_runs_none(make_engine):
    recorder = Recorder()
    engine = make_engine(recorder, jobs=1)
    ticket = tickets.Ticket()
    ticket.abandon()
    with tickets.holding(ticket), pytest.raises(tickets.Abandoned):
        engine.outcome(b"never")
    assert recorder.started == []


def test_duplicates_in_a_batch_run_once(make_engine):
    recorder = Recorder(lambda text: 0.05)
    engine = make_engine(recorder, jobs=2)
    assert engine.first_success([b"dup", b"dup", b"dup!"], smaller_than=100, label="test") == (
        2,
        b"dup!",
    )
    assert recorder.started.count(b"dup") == 1


# --- the gate ----------------------------------------------------------------------------


def test_not_smaller_is_rejected_without_a_run(make_engine):
    recorder = Recorder()
    engine = make_engine(recorder, jobs=2)
    assert engine.first_success([b"big!", b"bigger!"], smaller_than=4, label="test") is None
    assert recorder.started == []
    assert engine.stats.not_smaller == 2
    assert engine.stats.tests_run == 0
    assert engine.first_success([b"big!", b"ok!"], smaller_than=4, label="test") == (1, b"ok!")
    assert recorder.started == [b"ok!"]


def test_cache_hits_are_counted_and_not_rerun(make_engine):
    recorder = Recorder()
    engine = make_engine(recorder, jobs=2)
    assert engine.first_success([b"a", b"b!"], smaller_than=100, label="test") == (1, b"b!")
    assert engine.stats.tests_run == 2 and engine.stats.cache_hits == 0
    assert engine.first_success([b"a", b"b!"], smaller_than=100, label="test") == (1, b"b!")
    assert engine.stats.tests_run == 2
    assert engine.stats.cache_hits == 2
    assert recorder.started.count(b"a") == 1 and recorder.started.count(b"b!") == 1


def test_a_cached_success_stops_the_batch_before_any_run(make_engine):
    recorder = Recorder(lambda text: 0.05)
    engine = make_engine(recorder, jobs=4)
    engine.test(b"known!")
    before = list(recorder.started)
    assert engine.first_success([b"known!", b"x", b"y"], smaller_than=100, label="test") == (
        0,
        b"known!",
    )
    assert recorder.started == before


def test_shared_cache_is_used(make_engine):
    cache = MemoryCache()
    cache.put(blob_id(b"pre!"), Outcome(Verdict.BAD, 1, 0.0))
    recorder = Recorder()
    engine = Engine(recorder, is_bad, jobs=1, cache=cache)
    try:
        assert engine.first_success([b"pre!"], smaller_than=100, label="test") == (0, b"pre!")
        assert recorder.started == []
        assert engine.stats.cache_hits == 1
    finally:
        engine.close()


# --- verdicts from elsewhere ------------------------------------------------------------

FOREIGN_BAD = Outcome(Verdict.BAD, 1, 0.0, local=False)
FOREIGN_GOOD = Outcome(Verdict.GOOD, 0, 0.0, local=False)


def engine_with(cache: MemoryCache, recorder: Recorder, jobs: int = 1) -> Engine:
    return Engine(recorder, is_bad, jobs=jobs, cache=cache)


def test_a_foreign_verdict_may_reject_a_candidate_without_a_test():
    cache = MemoryCache()
    cache.put(blob_id(b"a"), FOREIGN_GOOD)
    recorder = Recorder()
    engine = engine_with(cache, recorder)
    try:
        assert engine.first_success([b"a", b"b!"], smaller_than=100, label="t") == (1, b"b!")
        assert recorder.started == [b"b!"]
        assert engine.stats.foreign_used == 1 and engine.stats.confirmations == 0
    finally:
        engine.close()


@pytest.mark.parametrize("jobs", [1, 3])
def test_a_foreign_verdict_that_would_accept_is_confirmed_by_a_run_first(jobs):
    cache = MemoryCache()
    cache.put(blob_id(b"a!"), FOREIGN_BAD)  # true
    recorder = Recorder()
    engine = engine_with(cache, recorder, jobs)
    try:
        assert engine.first_success([b"a!"], smaller_than=100, label="t") == (0, b"a!")
        assert recorder.started == [b"a!"]
        assert engine.stats.confirmations == 1 and engine.stats.contradicted == 0
        confirmed = cache.get(blob_id(b"a!"))
        assert confirmed is not None and confirmed.local  # the local verdict replaced it
        assert engine.first_success([b"a!"], smaller_than=100, label="t") == (0, b"a!")
        assert recorder.started == [b"a!"] and engine.stats.cache_hits == 1
    finally:
        engine.close()


def test_a_contradicted_foreign_verdict_ends_the_trust_in_foreign_verdicts():
    """A lie that would accept is caught by its confirmation; from then on a foreign
    rejection is not believed either."""
    cache = MemoryCache()
    cache.put(blob_id(b"a"), FOREIGN_BAD)  # a lie: a is good
    cache.put(blob_id(b"b!"), FOREIGN_GOOD)  # a lie: b! is bad
    recorder = Recorder()
    engine = engine_with(cache, recorder)
    try:
        assert engine.first_success([b"a", b"b!"], smaller_than=100, label="t") == (1, b"b!")
        assert recorder.started == [b"a", b"b!"]
        assert engine.stats.contradicted == 2 and engine.stats.foreign_used == 0
    finally:
        engine.close()


def test_a_single_check_confirms_any_foreign_verdict():
    cache = MemoryCache()
    cache.put(blob_id(b"a!"), FOREIGN_GOOD)  # would decide a bisection step: not taken
    recorder = Recorder()
    engine = engine_with(cache, recorder)
    try:
        assert engine.test(b"a!").verdict is Verdict.BAD
        assert recorder.started == [b"a!"]
        assert engine.stats.confirmations == 1 and engine.stats.contradicted == 1
    finally:
        engine.close()


def test_precheck_rejection_without_a_run(make_engine):
    recorder = Recorder()
    engine = make_engine(recorder, jobs=2)
    checked: list[bytes] = []

    def precheck(text: bytes) -> bool:
        checked.append(text)
        return not text.startswith(b"bad")

    result = engine.first_success(
        [b"bad1!", b"good", b"bad2!", b"fine!"], smaller_than=100, label="test", precheck=precheck
    )
    assert result == (3, b"fine!")
    # the two that parse ran, in whichever order their two jobs reached the test
    assert sorted(recorder.started) == [b"fine!", b"good"]
    assert engine.stats.syntax_rejected == 2
    # a rejected text is remembered: not checked again, not run, not counted twice
    assert (
        engine.first_success([b"bad1!"], smaller_than=100, label="test", precheck=precheck) is None
    )
    assert checked.count(b"bad1!") == 1
    assert engine.stats.syntax_rejected == 2
    assert sorted(recorder.started) == [b"fine!", b"good"]


def test_gate_order_size_before_cache_before_precheck(make_engine):
    recorder = Recorder()
    engine = make_engine(recorder, jobs=1)
    engine.test(b"cached!")
    calls: list[bytes] = []

    def precheck(text: bytes) -> bool:
        calls.append(text)
        return True

    engine.first_success([b"cached!"], smaller_than=3, label="test", precheck=precheck)
    assert engine.stats.not_smaller == 1 and engine.stats.cache_hits == 0
    assert engine.first_success(
        [b"cached!"], smaller_than=100, label="test", precheck=precheck
    ) == (
        0,
        b"cached!",
    )
    assert engine.stats.cache_hits == 1
    assert calls == []  # a cached verdict needs no parse


# --- test() and stats --------------------------------------------------------------------


def test_test_runs_without_gate_and_caches(make_engine):
    recorder = Recorder()
    engine = make_engine(recorder, jobs=2)
    outcome = engine.test(b"x" * 1000 + b"!")
    assert outcome.verdict is Verdict.BAD
    assert engine.test(b"x" * 1000 + b"!") == outcome
    assert engine.test(b"good").verdict is Verdict.GOOD
    assert len(recorder.started) == 2
    assert engine.stats.tests_run == 2
    assert engine.stats.cache_hits == 1
    assert engine.stats.interesting == 0  # test() is no search


def test_stats_counters(make_engine):
    recorder = Recorder(lambda text: 0.02)
    engine = make_engine(recorder, jobs=2)
    engine.first_success([b"a", b"b", b"c!"], smaller_than=100, label="alpha")
    engine.first_success([b"d!", b"toolong"], smaller_than=5, label="beta")
    engine.first_success([b"a"], smaller_than=100, label="beta")
    stats = engine.stats
    assert stats.tests_run == 4
    assert stats.by_pass == {"alpha": 3, "beta": 1}
    assert stats.passes["alpha"].successes == 1  # c! is the one
    assert stats.passes["beta"].successes == 1  # d!; the cached a is no success
    assert stats.passes["beta"].cache_hits == 1
    assert stats.interesting == 2
    assert stats.cache_hits == 1
    assert stats.not_smaller == 1  # "toolong" was pulled alongside "d!" (jobs=2)
    assert 0.04 <= stats.oracle_busy_seconds < stats.elapsed
    assert stats.elapsed > 0


def test_run_test_errors_propagate(make_engine):
    def explode(text: bytes) -> Outcome:
        raise RuntimeError("oracle broke")

    engine = Engine(explode, is_bad, jobs=2)
    try:
        with pytest.raises(RuntimeError, match="oracle broke"):
            engine.first_success([b"a", b"b"], smaller_than=100, label="test")
        with pytest.raises(RuntimeError, match="oracle broke"):
            engine.test(b"c")
    finally:
        engine.close()


def test_stop_from_another_thread_ends_a_batch_whose_tests_all_still_run(make_engine):
    """What an interrupt does: the watcher thread stops the engine while the main thread
    waits on tests that do not end; the main thread raises at its next look, no later."""
    release = threading.Event()

    def until_released(text: bytes) -> float:
        release.wait(10)
        return 0.0

    engine = make_engine(Recorder(until_released), jobs=2)
    timer = threading.Timer(0.2, engine.stop)
    timer.start()
    start = time.monotonic()
    try:
        with pytest.raises(Interrupted):
            engine.first_success([b"a", b"b", b"c!"], smaller_than=10, label="t")
        assert time.monotonic() - start < 1.0
        with pytest.raises(Interrupted):  # and stays stopped, even for a cached text
            engine.test(b"a")
    finally:
        release.set()
        timer.join()


def test_a_stopped_engine_answers_nothing_even_from_the_cache(make_engine):
    engine = make_engine(Recorder(), jobs=1)
    assert engine.first_success([b"x!"], smaller_than=10, label="t") == (0, b"x!")
    engine.stop()
    with pytest.raises(Interrupted):
        engine.first_success([b"x!"], smaller_than=10, label="t")


def test_set_jobs_widens_a_running_engine_and_tells_the_runner():
    recorder = Recorder(lambda text: 0.2)
    told: list[int] = []
    engine = Engine(recorder, is_bad, jobs=1, on_jobs=told.append)
    try:
        engine.set_jobs(3)
        assert told == [3] and engine.jobs == 3
        assert (
            engine.first_success([b"%d" % i for i in range(6)], smaller_than=100, label="t") is None
        )
        assert recorder.max_running == 3
    finally:
        engine.close()


# --- warm-ups ------------------------------------------------------------------------------


def wait_idle(engine: Engine) -> None:
    deadline = time.monotonic() + 10
    while engine._jobs.busy() and time.monotonic() < deadline:
        time.sleep(0.01)


def after_a_warm_up(
    make_engine, lookahead: list[bytes], hooks: dict[bytes, Callable[[], None]] | None = None
) -> Engine:
    """A two-job engine that judged the batch [`last`] with `lookahead`, whose test of
    `last` held until the warm-up of `next` had started (so only a warm-up can let it
    end); `hooks` run inside the tests of the texts they name."""
    warm_up_started = threading.Event()

    def run(text: bytes) -> Outcome:
        if text == b"last":
            assert warm_up_started.wait(10), "no warm-up ran beside the batch's last test"
        elif text == b"next":
            warm_up_started.set()
        (hooks or {}).get(text, lambda: None)()
        return Recorder()(text)

    engine = make_engine(run, jobs=2)
    found = engine.first_success(
        [b"last"], smaller_than=100, label="test", lookahead=lambda: lookahead
    )
    assert found is None
    return engine


def test_a_lookahead_fills_the_job_a_batchs_last_test_leaves_idle(make_engine):
    """The batch's only test holds until the lookahead's first candidate has started: at
    two jobs the warm-up starts it; the next batch then finds its verdict known."""
    engine = after_a_warm_up(make_engine, [b"next", b"after"])
    wait_idle(engine)
    warmed = engine.stats.tests_run  # `after` too, if `next` ended while `last` ran
    assert warmed in (2, 3)
    assert engine.first_success([b"next", b"next!"], smaller_than=100, label="test") == (
        1,
        b"next!",
    )
    assert engine.stats.tests_run == warmed + 1
    assert engine.stats.cache_hits == 1


def test_a_winner_abandons_the_warm_ups_of_the_text_it_replaced(make_engine):
    warm_up_started = threading.Event()
    finished: list[bytes] = []

    def run(text: bytes) -> Outcome:
        if text == b"stale":
            warm_up_started.set()
            run_until_abandoned()
        else:
            assert warm_up_started.wait(10)
        finished.append(text)
        return Recorder()(text)

    engine = make_engine(run, jobs=2)
    started = time.monotonic()
    found = engine.first_success(
        [b"last!"], smaller_than=100, label="test", lookahead=lambda: [b"stale"]
    )
    assert found == (0, b"last!")
    wait_idle(engine)
    assert time.monotonic() - started < 10
    assert finished == [b"last!"]
    assert engine.cache.get(blob_id(b"stale")) is None


def test_at_one_job_the_last_refusal_goes_on_with_what_the_caller_tries_next(make_engine):
    """At one job the lookahead is no speculation: the job whose refusal ends the batch
    with no winner goes straight on with the lookahead's first candidate, which the next
    batch takes over. Two batches, one test at a time, in order, one hand-off from a main
    thread (before: the lookahead was never read at one job, and the next batch's main
    thread started its first test once it had built the batch). Each test but the last
    lasts until the next candidate waits queued, however loaded the machine."""
    recorder = Recorder()

    def run(text: bytes) -> Outcome:
        tickets.test_under_way()
        if text != b"d!":
            assert eventually(lambda: engine._jobs.queued == 1), "the next was not queued"
        return recorder(text)

    engine = make_engine(run, jobs=1)
    handed_off = counting_hand_offs(engine)
    found = engine.first_success(
        [b"a", b"b"], smaller_than=100, label="t", lookahead=lambda: [b"c", b"d!"]
    )
    assert found is None
    assert engine.first_success([b"c", b"d!"], smaller_than=100, label="t") == (1, b"d!")
    assert recorder.started == [b"a", b"b", b"c", b"d!"]
    assert recorder.max_running == 1
    assert len(handed_off) == 1


def test_at_one_job_a_winner_leaves_the_lookahead_untested(make_engine):
    """The batch's last candidate wins: what was queued for its refusal is dropped unrun,
    and the next batch tests its candidates itself."""
    recorder = Recorder(lambda text: 0.02)

    def run(text: bytes) -> Outcome:
        tickets.test_under_way()
        return recorder(text)

    engine = make_engine(run, jobs=1)
    found = engine.first_success(
        [b"a", b"b!"], smaller_than=100, label="t", lookahead=lambda: [b"c"]
    )
    assert found == (1, b"b!")
    wait_idle(engine)
    time.sleep(0.1)
    assert recorder.started == [b"a", b"b!"]
    assert engine.first_success([b"c", b"d!"], smaller_than=100, label="t") == (1, b"d!")
    assert recorder.started == [b"a", b"b!", b"c", b"d!"]


def test_a_judgement_waiting_on_an_identical_test_holds_no_job(make_engine):
    """Two jobs, the same text twice, then a third: the duplicate waits on the first's
    test, and the third starts beside it instead of after it."""
    both_running = threading.Event()
    running: set[bytes] = set()
    lock = threading.Lock()

    def run(text: bytes) -> Outcome:
        with lock:
            running.add(text)
            if {b"dup", b"other"} <= running:
                both_running.set()
        assert both_running.wait(10), "the duplicate held the second job"
        return Recorder()(text)

    engine = make_engine(run, jobs=2)
    assert engine.first_success([b"dup", b"dup", b"other"], smaller_than=100, label="t") is None


class LateDuplicateJudge:
    """Judges (name, text) pairs by the test alone; `late` names wait before asking it."""

    def __init__(self, engine: Engine, late: set[str]) -> None:
        self.engine = engine
        self.late = late

    def quick(self, candidate: tuple[str, bytes]) -> bool | None:
        return None

    def full(self, candidate: tuple[str, bytes]) -> bool:
        name, text = candidate
        if name in self.late:
            time.sleep(0.3)  # the batch's main thread is surely waiting by now
        return is_bad(self.engine.outcome(text))


def held_until_started(awaited: bytes, failure: str) -> Callable[[bytes], Outcome]:
    """A run_test whose every test but `awaited`'s holds until `awaited`'s has started."""
    started = threading.Event()

    def run(text: bytes) -> Outcome:
        if text == awaited:
            started.set()
        else:
            assert started.wait(10), failure
        return Recorder()(text)

    return run


def test_a_judgement_that_starts_waiting_on_an_identical_test_wakes_the_batch(make_engine):
    """Both jobs taken, the batch waits; then one judgement finds its text already under
    test and waits on it, which frees its job: the batch's next candidate starts then,
    not when the first test ends (here it ends only once the third has started)."""
    run = held_until_started(b"other", "the batch slept while a job was free")
    engine = make_engine(run, jobs=2)
    judge = LateDuplicateJudge(engine, late={"again"})
    batch = [("first", b"same"), ("again", b"same"), ("third", b"other")]
    assert engine.first_judged(batch, judge, label="t") is None
    assert engine.stats.tests_run == 2


def test_set_jobs_during_a_batch_starts_the_next_candidate_at_once(make_engine):
    """One job, its test holding until a second runs: widening the engine from another
    thread wakes the waiting batch, which starts its next candidate in the new job."""
    run = held_until_started(b"second", "the batch did not use the job it was given")
    engine = make_engine(run, jobs=1)
    widen = threading.Timer(0.3, engine.set_jobs, args=(2,))
    widen.start()
    try:
        assert engine.first_success([b"first", b"second"], smaller_than=100, label="t") is None
    finally:
        widen.cancel()


def test_a_batch_takes_over_the_warm_up_still_judging_its_candidate(make_engine):
    """The next batch asks for the warm-up's candidate while its test still runs: that
    judgement is taken over, so the batch's second candidate starts beside it at once
    (a second judgement waiting on the same test would hold the other job)."""
    other_started = threading.Event()

    def other_runs_beside() -> None:
        assert other_started.wait(10), "the batch's second candidate did not start"

    engine = after_a_warm_up(
        make_engine, [b"next"], {b"next": other_runs_beside, b"other": other_started.set}
    )
    assert engine.first_success([b"next", b"other"], smaller_than=100, label="test") is None
    assert engine.stats.tests_run == 3


def test_a_job_that_refuses_goes_on_with_the_next_candidate_itself(make_engine):
    """At one job, a batch of refusals is judged by one worker one after another: each
    next candidate was queued while the test before it ran, and the job that refused
    took it at once, not the batch's main thread after waking (one hand-off to the pool
    for the whole batch, not one per candidate). Each test still starts only after the
    one before it ended, and in order. Each test lasts until the next candidate waits
    queued, however slowly the main thread gets to it on a loaded machine."""
    recorder = Recorder()

    def run(text: bytes) -> Outcome:
        tickets.test_under_way()  # as the oracle says once it has spawned the test
        assert eventually(lambda: engine._jobs.queued == 1), "the next was not queued"
        return recorder(text)

    engine = make_engine(run, jobs=1)
    handed_off = counting_hand_offs(engine)
    batch = [b"a", b"b", b"c", b"d", b"e!", b"f"]
    assert engine.first_success(batch, smaller_than=100, label="t") == (4, b"e!")
    assert recorder.started == batch[:5]
    assert recorder.max_running == 1
    assert len(handed_off) == 1


def test_while_every_job_is_busy_one_next_candidate_per_job_waits_queued(make_engine):
    """Two jobs whose tests end together both go on at once: while they run, the next two
    candidates are read and queued, not one, so neither job waits for the main thread."""
    release = threading.Event()
    recorder = Recorder()
    begun: list[bytes] = []

    def run(text: bytes) -> Outcome:
        begun.append(text)
        tickets.test_under_way()
        if text in (b"a", b"b"):
            assert release.wait(10)
        return recorder(text)

    engine = make_engine(run, jobs=2)
    answer: list[tuple[int, bytes] | None] = []
    batch = [b"a", b"b", b"c", b"d", b"e!", b"f"]
    judging = threading.Thread(
        target=lambda: answer.append(engine.first_success(batch, smaller_than=100, label="t"))
    )
    judging.start()
    try:
        deadline = time.monotonic() + 10
        while engine._jobs.queued < 2 and time.monotonic() < deadline:
            time.sleep(0.005)
        assert engine._jobs.queued == 2
        assert sorted(begun) == [b"a", b"b"]
    finally:
        release.set()
        judging.join(10)
    assert answer == [(4, b"e!")]


def test_a_winners_job_does_not_go_on_with_what_was_queued_after_it(make_engine):
    """The job whose candidate wins leaves the queue alone: at one job nothing past the
    winner is ever tested, as before."""
    recorder = Recorder(lambda text: 0.05)
    engine = make_engine(recorder, jobs=1)
    assert engine.first_success([b"a!", b"b", b"c"], smaller_than=100, label="t") == (0, b"a!")
    wait_idle(engine)
    time.sleep(0.1)
    assert recorder.started == [b"a!"]


def counting_hand_offs(engine: Engine) -> list[object]:
    """The engine's hand-offs to its pool from now on: one per job a main thread starts."""
    handed_off: list[object] = []
    submit = engine._jobs._pool.submit

    def counted(*args, **kwargs):
        handed_off.append(args)
        return submit(*args, **kwargs)

    engine._jobs._pool.submit = counted
    return handed_off


def taught_that_slow_ones_win(make_engine, run: Callable[[bytes], Outcome]) -> Engine:
    """A two-job engine that judged five batches whose loser ended at once and whose winner
    (a text with `!`) took 0.2 s: its odds favour a candidate running a while to win."""
    engine = make_engine(run, jobs=2)
    for lesson in range(5):
        batch = [b"lose %d" % lesson, b"win %d!" % lesson]
        assert engine.first_success(batch, smaller_than=100, label="t") == (1, batch[1])
    return engine


def slow_winners(text: bytes) -> float:
    return 0.2 if b"!" in text else 0.0


def lessons_of_a_tenth(text: bytes) -> float:
    """Slow winners, and lessons' losers of 0.1 s: a candidate is no likelier to win before
    it ran 0.1 s, time for the other job to start the batch's next, however loaded the
    machine (a job still free once the oldest looks likely to win bets, stopping nothing)."""
    return 0.1 if text.startswith(b"lose") else slow_winners(text)


def test_while_a_slow_candidate_runs_a_free_job_tests_what_follows_its_win(make_engine):
    """The batch's one candidate runs longer than the losers did: the idle job tests what
    its caller says it tries next if it wins, so the next batch finds both verdicts known.
    Without the bet, both tests ran in the next batch."""
    recorder = Recorder(slow_winners)
    engine = taught_that_slow_ones_win(make_engine, recorder)
    found = engine.first_success(
        [b"slow!"], smaller_than=100, label="t", after=lambda index: [b"next", b"then!"]
    )
    assert found == (0, b"slow!")
    assert engine.stats.success_bets == 2
    wait_idle(engine)
    tests = engine.stats.tests_run
    found = engine.first_success([b"next", b"then!"], smaller_than=100, label="t")
    assert found == (1, b"then!")
    assert engine.stats.tests_run == tests


def test_the_bets_on_a_candidate_that_lost_are_abandoned(make_engine):
    """The slow candidate loses after all: what was started on its win is killed and
    leaves no verdict, and the batch does not wait for it."""
    bet_started = threading.Event()

    def run(text: bytes) -> Outcome:
        if text == b"bet":
            bet_started.set()
            run_until_abandoned()
        if text == b"slow":
            assert bet_started.wait(10), "no bet on the slow candidate"
        return Recorder(slow_winners)(text)

    engine = taught_that_slow_ones_win(make_engine, run)
    started = time.monotonic()
    found = engine.first_success(
        [b"slow"], smaller_than=100, label="t", after=lambda index: [b"bet"]
    )
    assert found is None
    wait_idle(engine)
    assert time.monotonic() - started < 10
    assert engine.cache.get(blob_id(b"bet")) is None


def test_a_bet_takes_the_job_of_a_later_candidate_once_the_oldest_is_likelier_to_win(
    make_engine,
):
    """Both jobs are busy: the oldest candidate has run long enough to more likely win, and
    the other job tests a later one, worth something only if the oldest loses. That test
    is stopped, leaving no verdict, and its job tests what follows the oldest's win; the
    oldest's test holds until then (before: the later test kept its job till the oldest
    ended, and nothing was bet)."""
    bet_started = threading.Event()
    recorder = Recorder(lessons_of_a_tenth)

    def run(text: bytes) -> Outcome:
        tickets.test_under_way()
        if text == b"later":
            run_until_abandoned()
        elif text == b"slow!":
            assert bet_started.wait(10), "no bet in the later candidate's job"
        elif text == b"next":
            bet_started.set()
        return recorder(text)

    engine = taught_that_slow_ones_win(make_engine, run)
    found = engine.first_success(
        [b"slow!", b"later"], smaller_than=100, label="t", after=lambda index: [b"next"]
    )
    assert found == (0, b"slow!")
    assert engine.stats.preempted_for_bets == 1
    wait_idle(engine)
    assert engine.cache.get(blob_id(b"later")) is None
    tests = engine.stats.tests_run
    assert engine.first_success([b"next"], smaller_than=100, label="t") is None
    assert engine.stats.tests_run == tests


def test_a_candidate_stopped_for_a_bet_is_judged_again_when_the_oldest_loses(make_engine):
    """The oldest candidate looked like a winner and lost: the later one whose test was
    stopped for the bet is tested again, and the answer is what one job finds."""
    recorder = Recorder(lambda text: 0.3 if text == b"slow" else lessons_of_a_tenth(text))
    begun: list[bytes] = []

    def run(text: bytes) -> Outcome:
        tickets.test_under_way()
        begun.append(text)
        if text == b"b!":  # a test of 0.2 s that stops when its judgement is given up
            run_until_abandoned(0.2)
        return recorder(text)

    engine = taught_that_slow_ones_win(make_engine, run)
    batch = [b"slow", b"b!", b"c"]
    found = engine.first_success(batch, smaller_than=100, label="t", after=lambda i: [b"z!"])
    assert found == (1, b"b!")
    assert engine.stats.preempted_for_bets == 1
    assert begun[10:14] == [b"slow", b"b!", b"z!", b"b!"]  # after the lessons' ten


def test_no_spinning_while_the_likely_winner_has_nothing_to_stop_a_test_for(make_engine):
    """The oldest candidate looks like a winner and a later one runs beside it, but the
    oldest's judgement says no test of its own is under way, so nothing is stopped: the
    main thread waits for a judgement to end rather than wake again and again (before,
    thousands of wake-ups in 0.3 s, a processor taken from the tests)."""
    recorder = Recorder(lambda text: 0.3 if text == b"later" else slow_winners(text))
    engine = taught_that_slow_ones_win(make_engine, recorder)
    waits = 0
    wait_any = engine._wait_any

    def counted(*args, **kwargs):
        nonlocal waits
        waits += 1
        return wait_any(*args, **kwargs)

    engine._wait_any = counted
    found = engine.first_success(
        [b"slow!", b"later"], smaller_than=100, label="t", after=lambda index: [b"next"]
    )
    assert found == (0, b"slow!")
    assert engine.stats.preempted_for_bets == 0
    assert waits < 50, waits


class TwoTests:
    """A judgement of two tests, as a pair's seed and variant: `A:` and the candidate, then,
    if that said bad, `B:` and it, which must say bad too; it says when the first passed."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def quick(self, candidate: bytes) -> bool | None:
        return None

    def full(self, candidate: bytes) -> bool:
        if not is_bad(self.engine.outcome(b"A:" + candidate, is_bad)):
            return False
        tickets.passed_one()
        return is_bad(self.engine.outcome(b"B:" + candidate, is_bad))


def test_a_bet_takes_a_job_once_the_oldests_first_test_passed_where_such_ones_won(make_engine):
    """Taught that a judgement whose first test passed won every time, while the time a
    judgement runs tells nothing (losers ran longest): once the oldest candidate's first
    test passes, the later candidate's test is stopped and its job tests what follows the
    oldest's win; the oldest's second test holds until then. Before, a bet went by the
    time run alone, and none was made."""
    bet_started = threading.Event()
    later_under_way = threading.Event()  # before the oldest's first test passes, however
    # loaded the machine: else a job still free then bets without stopping a test

    def run(text: bytes) -> Outcome:
        tickets.test_under_way()
        if text.startswith(b"A:lose"):
            time.sleep(0.3)
        elif text.startswith(b"B:win"):
            time.sleep(0.05)
        elif text == b"A:slow!":
            assert later_under_way.wait(5)
        elif text == b"A:later":
            later_under_way.set()
            run_until_abandoned()
        elif text == b"B:slow!":
            assert bet_started.wait(5), "no bet once the oldest's first test passed"
        elif text == b"A:next":
            bet_started.set()
        return Recorder()(text)

    engine = make_engine(run, jobs=2)
    judge = TwoTests(engine)
    for lesson in range(5):
        batch = [b"lose %d" % lesson, b"win %d!" % lesson]
        assert engine.first_judged(batch, judge, label="t") == (1, batch[1])
    found = engine.first_judged(
        [b"slow!", b"later"], judge, label="t", after=lambda index: [b"next"]
    )
    assert found == (0, b"slow!")
    assert engine.stats.preempted_for_bets == 1
    wait_idle(engine)
    assert engine.cache.get(blob_id(b"A:later")) is None


def judged_slow_then_won(make_engine, run) -> Engine:
    """A two-job engine that judged [slow, won!] with `run`, `next` following either's
    win; the answer is `won!`."""
    engine = make_engine(run, jobs=2)
    found = engine.first_success(
        [b"slow", b"won!"], smaller_than=100, label="t", after=lambda index: [b"next"]
    )
    assert found == (1, b"won!")
    return engine


def test_a_free_job_bets_on_a_later_candidate_known_to_win(make_engine):
    """The second candidate has won while the first still runs: a free job tests what
    follows the second's win, which is the answer unless the first wins too. The first's
    test holds until that bet has started (before: the job idled until it ended)."""
    bet_started = threading.Event()

    def run(text: bytes) -> Outcome:
        tickets.test_under_way()
        if text == b"slow":
            assert bet_started.wait(10), "no bet on the candidate known to win"
        elif text == b"next":
            bet_started.set()
        return Recorder()(text)

    engine = judged_slow_then_won(make_engine, run)
    assert engine.stats.success_bets == 1
    wait_idle(engine)
    tests = engine.stats.tests_run
    assert engine.first_success([b"next"], smaller_than=100, label="t") is None
    assert engine.stats.tests_run == tests


def test_no_bet_on_a_later_winner_while_the_oldest_is_decided_without_a_test(make_engine):
    """The oldest candidate's judgement runs no test (a rerun from a full cache, here a run
    that never says its test is under way): no bet is made on the later winner, whose
    `after` a rerun would test for nothing."""

    def run(text: bytes) -> Outcome:
        if text == b"slow":
            time.sleep(0.2)
        return Recorder()(text)

    engine = judged_slow_then_won(make_engine, run)
    assert engine.stats.success_bets == 0


def test_bets_never_change_the_answer(make_engine):
    """A bet on the slow first candidate, which loses: the answer is still the first
    winner in order, as at one job."""
    engine = taught_that_slow_ones_win(make_engine, Recorder(lambda text: 0.2 * (b"slow" in text)))
    batch = [b"slow", b"b!", b"c!"]
    found = engine.first_success(batch, smaller_than=100, label="t", after=lambda i: [b"z!"])
    assert found == (1, b"b!")


def test_test_seconds_sum_every_tests_own_time_while_busy_seconds_count_overlap_once(
    make_engine,
):
    """Two tests of 0.3 s side by side: about 0.6 s of tests in about 0.3 s of busy time,
    so the two jobs were both busy."""
    engine = make_engine(Recorder(lambda text: 0.3), jobs=2)
    assert engine.first_success([b"a", b"b"], smaller_than=100, label="t") is None
    stats = engine.stats
    assert 0.55 <= stats.test_seconds < 2 * stats.oracle_busy_seconds + 0.05
    assert stats.oracle_busy_seconds < 0.55


def test_a_started_jobs_test_is_running_before_the_next_candidates_are_read_ahead(tmp_path):
    """While its one job runs a test, the engine reads the next candidates through the
    cheap checks. Those checks hold the GIL (a parse, in C), so begun before the job's
    thread had spawned its test they delayed every test by a parse. Before: the check of
    the next candidate ran first, with no test process yet. Now the job's test is running
    by then, a real process of the real oracle."""
    marker = f"gitreduce-handover-{uuid.uuid4().hex}"
    spec = TestSpec(f"sleep 0.2 # {marker}", "candidate.txt", timeout=10)
    tests_running: list[int] = []

    def precheck(text: bytes) -> bool:
        tests_running.append(
            sum(
                1
                for _, (state, parent, _, command) in processes().items()
                if parent == os.getpid() and marker.encode() in command and state != "Z"
            )
        )
        return True

    with Oracle(spec, jobs=1, scratch_root=tmp_path) as oracle:
        engine = Engine(oracle.run, lambda outcome: outcome.verdict is Verdict.BAD, jobs=1)
        found = engine.first_success(
            [b"a\n", b"bb\n", b"ccc\n", b"dddd\n"], smaller_than=100, label="t", precheck=precheck
        )
    assert found is None
    # the first check comes before any test; each later one is a read-ahead during a test
    assert tests_running == [0, 1, 1, 1]
