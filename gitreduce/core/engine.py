"""The one road from a candidate to the oracle: gate, cache, parallel runs, deterministic winner.

Passes hand the engine an ordered batch of candidates (texts, or seed/variant
pairs) with a judge, and ask for the first interesting one. Cheap checks come
first (not smaller, already known, does not parse); what survives is judged
in parallel, up to `jobs` at once. Later
candidates are only speculation: the answer is always the lowest-indexed
success, so results do not depend on `--jobs` or on which run finishes first.
Runs of candidates past the answer are abandoned (`core/tickets.py`): the
oracle kills them and nothing is cached for them, so the next batch gets
their slots at once. Runs of candidates before it are awaited.

Jobs nobody needs for a batch's answer judge, for the cache only, what the
caller asks next: if no candidate wins (its `lookahead`: warm-ups, once every
candidate is in flight) or if the oldest one, still running and more likely
winning than losing, wins (`after`: bets). The next batch finds their
verdicts known or takes their judgements over; what a batch's answer makes
stale is abandoned (`core/speculation.py`). Even with no job free, the
lookahead does not wait for the main thread: once every candidate is in
flight, its first candidates are queued for the jobs that end with a
refusal. At one job that refusal is the batch's answer, so one job goes on
from a batch that takes nothing to the next without a pause.

`stop()` (from any thread) makes the main thread raise `Interrupted` at its
next step: it never waits on a future without a timeout, so it notices within
`_POLL_SECONDS` even while every test is still running.

While every job is busy, the batch's main thread reads its next candidates
through the cheap checks, so a job that comes free starts the next test at
once, not after that candidate's render and parse. The one it finds is
queued: the first job to end with a refusal goes on with it in its own
thread, without waking the main thread first (`core/jobs.py`).

A batch's main thread waits on its own judgements, yet a job can come free
while none of them ends: a judgement starts waiting on another's identical
test, a warm-up or a test beside another ends, `set_jobs` widens the engine.
Each of these wakes it (`Jobs.watch_for_free`), so the next candidate starts
at once rather than when one of the batch's own judgements happens to end; so
does a judgement whose first test passed, a likelier winner to bet on.

What a candidate's cheap checks and tests know, and which cached verdicts may
decide it, is `core/memo.py`, the engine's base.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, wait
from typing import Any, TypeVar

from gitreduce.core import tickets
from gitreduce.core.errors import Interrupted
from gitreduce.core.jobs import Job, Jobs
from gitreduce.core.judges import Accepts, AfterSuccess, Judge, Lookahead, Precheck, TextJudge
from gitreduce.core.memo import ORIGINALS, VerdictMemo
from gitreduce.core.outcome import Outcome, VerdictCache
from gitreduce.core.speculation import PREEMPTION_MARGIN, Bet, Speculation, judging_later

# How often a main thread waiting on tests looks whether it was stopped: rarely enough
# to cost nothing, often enough that an interrupt feels immediate.
_POLL_SECONDS = 0.05
# How many lookahead candidates per job one wait for a batch's last tests may read
_WARM_UP_READS = 4
# The most of a batch's candidates one wait while every job is busy may read ahead through
# the cheap checks, looking for the next one a free job will run: a stretch of syntax
# rejections is crossed while the tests run (an exhaustive pass's hundreds), yet a batch
# does not wander without end past a winner still running
_READ_AHEAD = 512
# The longest the main thread lets a job it just started get its test going before it reads
# ahead (see `_first_judged`): a spawn on a loaded machine. Every judgement says when its
# test runs, or that it has none to run, so the bound only matters when spawning is slow.
_HAND_OVER_SECONDS = 0.1
# The most tests `set_jobs` lets one engine have in flight (its pool's threads start
# only as they are needed).
MAX_JOBS = 256


C = TypeVar("C")
T = TypeVar("T")
_NONE_LEFT = object()  # an iterator's end, where a candidate may be anything


class Engine(VerdictMemo):
    """Runs batches of candidates through their judge and the oracle."""

    def __init__(
        self,
        run_test: Callable[[bytes], Outcome],
        is_interesting: Callable[[Outcome], bool],
        *,
        jobs: int,
        cache: VerdictCache | None = None,
        skipped_passes: Iterable[str] = (),
        on_jobs: Callable[[int], None] | None = None,
    ) -> None:
        lock = threading.Lock()
        self._speculation = Speculation()
        super().__init__(
            run_test,
            cache,
            lock,
            Jobs(lock, MAX_JOBS, lambda job: not self._speculation.bet_preferred_locked(job)),
        )
        self._is_interesting = is_interesting
        self.jobs = min(max(1, jobs), MAX_JOBS)
        self._on_jobs = on_jobs
        self.skipped_passes = frozenset(skipped_passes)
        # whether a batch may still start candidates, and the tests waiting till it does not
        self._batch_open = False
        self._offers: deque[Job] = deque()
        self._stopped = False

    def close(self) -> None:
        self._jobs.close()

    def set_jobs(self, jobs: int) -> None:
        """Run up to `jobs` tests at once from the next candidate on; safe from any thread.

        For a triage whose other reductions ended: their workers go to the
        ones still running. Results do not depend on `jobs`. `on_jobs` (the
        test runner's own limit) hears of it first, so the extra tests find
        room to run.
        """
        jobs = min(max(1, jobs), MAX_JOBS)
        if self._on_jobs is not None:
            self._on_jobs(jobs)
        self.jobs = jobs
        with self._lock:
            self._jobs.free_locked()

    def stop(self) -> None:
        """Make the main thread raise `Interrupted` at its next step; safe from any thread.

        Only a flag: the tests in flight are the oracle's to kill.
        """
        self._stopped = True

    def _check(self) -> None:
        if self._stopped:
            raise Interrupted

    def _wait_any(
        self, futures: list[Future[T]], wake: Future[None] | None = None, until: float | None = None
    ) -> None:
        """Until one of `futures` (or `wake`) is done, or the clock reads `until`, or
        `Interrupted` once stopped.

        A timed wait: a signal never has to break into `concurrent.futures.wait`'s
        locks, and the flag is looked at even while no test finishes.
        """
        awaited: list[Future[Any]] = [*futures]
        if wake is not None:
            awaited.append(wake)
        while True:
            self._check()
            timeout = _POLL_SECONDS
            if until is not None:
                timeout = min(timeout, max(0.0, until - time.monotonic()))
            done, _ = wait(awaited, timeout=timeout, return_when=FIRST_COMPLETED)
            if done or (until is not None and time.monotonic() >= until):
                return

    def test(self, text: bytes, *, label: str = ORIGINALS) -> Outcome:
        """Run (or recall) one text without any gate: for single checks (bisection steps, a
        pair's final comment check). Every verdict of such a check decides something, so
        only a local one is recalled; a foreign one is confirmed by a run."""
        self._check()
        outer = self._label()
        self._context.label = label
        try:
            cached = self.recall(text)
        finally:
            self._context.label = outer
        if cached is not None:
            return cached

        def labelled() -> Outcome:
            self._context.label = label
            return self.outcome(text)

        future = self._jobs.run(labelled)
        self._wait_any([future])
        return future.result()

    def _submit(
        self,
        judge: Judge[C],
        candidate: C,
        label: str,
        *,
        queued: bool = False,
        first: bool = False,
    ) -> Job:
        """A job judging `candidate`, started now, or `queued` for the next job that ends with
        a refusal (or for the batch's main thread, should none); `first`: ahead of the
        queue."""
        ticket = tickets.Ticket()
        ticket.on_pass = self._wake  # a first test passed: the odds of a bet on it changed

        def labelled() -> bool:
            self._context.label = label
            with tickets.holding(ticket):
                return judge.full(candidate)

        job = self._jobs.make(labelled, ticket)
        with self._lock:
            if queued:
                self._jobs.queue_locked(job, first=first)
            else:
                self._jobs.start_locked(job)
        return job

    def _wake(self) -> None:
        """Wake the batch's main thread to look at its jobs again (`Jobs.watch_for_free`)."""
        with self._lock:
            self._jobs.free_locked()

    def test_beside(self, text: bytes, accepts: Accepts) -> tickets.Ticket | None:
        """Run the test of `text` in a job nobody needs; None when there will be none.

        A judgement that needs two tests (a pair's seed and variant) asks them
        one after the other, so that a candidate the first refuses costs one
        test. While a job idles (a batch's last judgements, a lone check), the
        second may as well run beside the first: when both pass, the judgement
        takes one test's time instead of two. The run only fills the cache;
        the judgement still asks `outcome`, which waits on the run in flight.
        While the batch still has candidates to start, the next candidate's
        first test is worth more than this one's second (most first tests
        refuse), so the test waits as an offer that the batch starts once it
        has nothing else for an idle job. The caller abandons the returned
        ticket once the answer is not wanted (the first test refused, the
        judgement itself was given up): an offer is then dropped, a running
        test killed by the oracle, as any speculation's is.
        """
        if self.jobs < 2:
            return None
        label = self._label()
        ticket = tickets.Ticket()

        def labelled() -> bool:
            self._context.label = label
            try:
                with tickets.holding(ticket):
                    return accepts(self.outcome(text, accepts))
            finally:
                ticket.end()

        job = self._jobs.make(labelled, ticket)
        # checked and taken under one lock: workers ask too, and two must not take one job
        with self._lock:
            if self._batch_open:
                self._offers.append(job)
                return ticket
            if self._jobs.busy_locked() >= self.jobs:
                return None
            self._jobs.start_locked(job)
        return ticket

    def _close_batch(self) -> None:
        """The batch has nothing left to start before the offers: idle jobs take the offers
        waiting (tests beside a judgement's first), and later ones start at once."""
        with self._lock:
            self._batch_open = False
            while self._offers and self._jobs.busy_locked() < self.jobs:
                job = self._offers.popleft()
                if not job.ticket.abandoned:
                    self._jobs.start_locked(job)

    def _warm_up(self, lookahead: Iterator[C], judge: Judge[C], label: str) -> None:
        """Judge what `lookahead` yields while jobs are idle, for the cache only.

        Candidates the cheap checks decide cost no job, so at most a few jobs'
        worth of them is read per call: the main thread renders and parses
        them while the last tests run, and must not wander far ahead.
        """
        self._speculation.forget_ended()
        for _ in range(_WARM_UP_READS * self.jobs):
            if self._jobs.busy() >= self.jobs:
                return
            candidate, counted = self._read(lookahead, label)
            if candidate is _NONE_LEFT:
                return
            with self.counting_for(counted):
                verdict = judge.quick(candidate)
            if verdict is None:
                self._speculation.add(candidate, self._submit(judge, candidate, counted))

    def _read(self, candidates: Iterator[C], label: str) -> tuple[Any, str]:
        """The next of what a lookahead or a bet reads (`_NONE_LEFT` at its end) and the pass
        its checks and test count for: `label`, the reading batch's, unless the lookahead
        announced the candidate as another pass's (`announce`)."""
        self._announced = None
        candidate: Any = next(candidates, _NONE_LEFT)
        return candidate, self._announced or label

    def _queue_warm_ups(
        self, lookahead: Iterator[C], judge: Judge[C], label: str, job_freed: Future[None]
    ) -> list[Job]:
        """While every job is busy, queue judgements of what `lookahead` yields, one per job,
        for the jobs that end with a refusal (`core/jobs.py`); the judgements queued.

        Read as far as the batch's own read-ahead (`_READ_AHEAD`), since the main thread
        has nothing else to do: a stretch of syntax rejections the next batch opens with
        (the exhaustive pass's) is parsed now, and remembered; none is read once a job
        has come free, for the main thread then starts what it has.
        """
        queued: list[Job] = []
        for _ in range(_READ_AHEAD):
            if self._jobs.queued >= self.jobs or self._jobs.busy() < self.jobs:
                break
            if job_freed.done():
                break
            candidate, counted = self._read(lookahead, label)
            if candidate is _NONE_LEFT:
                break
            with self.counting_for(counted):
                verdict = self._quick(judge, candidate, reading_ahead=True)
            if verdict is None and not self._speculation.running(candidate):
                job = self._submit(judge, candidate, counted, queued=True)
                self._speculation.add(candidate, job)
                queued.append(job)
        return queued

    def _quick(self, judge: Judge[C], candidate: C, *, reading_ahead: bool) -> bool | None:
        """`judge.quick(candidate)`; `reading_ahead`: while tests run, where a foreign verdict
        decides nothing yet (one of those tests may be the confirmation that ends the trust
        in them, and the answer must not depend on whether it ended first)."""
        self._context.reading_ahead = reading_ahead
        try:
            return judge.quick(candidate)
        finally:
            self._context.reading_ahead = False

    def _backed(
        self,
        after: AfterSuccess[C] | None,
        bet: Bet | None,
        oldest: int,
        running: dict[int, Job],
        earliest_success: int | None,
    ) -> int | None:
        """Which candidate a free job bets on, if any: the oldest one, still running, once
        it more likely wins than loses; else a later one already known to win, which
        wins unless the oldest, whose test is running, does (most lose), while
        anything is left to read after it. Not while the oldest is decided without
        a test: a rerun from a full cache would test what the bet reads."""
        if after is None:
            return None
        judging = running.get(oldest)
        if self._speculation.worth_making(bet, oldest, judging):
            return oldest
        if earliest_success is None or earliest_success == oldest:
            return None
        if judging is None or not judging.ticket.tested or judging.future.done():
            return None
        if bet is not None and bet.index == earliest_success and bet.exhausted:
            return None
        return earliest_success

    def _bet_on_success(
        self, bet: Bet, judge: Judge[C], label: str, instead_of: Job | None = None
    ) -> Job | None:
        """Start a judgement of the next candidate `bet` says its caller tries after the
        winner it assumes, for the cache; None when the reads allowed found none to start.
        `instead_of`: a judgement to give up for it, only once there is one to start.

        Read ahead like any speculation: a foreign verdict decides nothing yet.
        """
        for _ in range(_WARM_UP_READS * self.jobs):
            candidate, counted = self._read(bet.following, label)
            if candidate is _NONE_LEFT:
                bet.exhausted = True
                return None
            with self.counting_for(counted):
                verdict = self._quick(judge, candidate, reading_ahead=True)
            if verdict is None and not self._speculation.running(candidate):
                if instead_of is not None:
                    instead_of.ticket.abandon()
                    self.stats.preempted_for_bets += 1
                job = self._submit(judge, candidate, counted)
                self._speculation.add(candidate, job, bet.index)
                self.stats.success_bets += 1
                return job
        return None

    def first_success(
        self,
        candidates: Iterable[bytes],
        *,
        smaller_than: int,
        label: str,
        precheck: Precheck | None = None,
        place: Callable[[bytes], bytes] | None = None,
        accepts: Accepts | None = None,
        lookahead: Lookahead[bytes] | None = None,
        after: AfterSuccess[bytes] | None = None,
    ) -> tuple[int, bytes] | None:
        """The lowest-indexed interesting text and the text itself, or None (`place`: see
        `TextJudge`; `accepts`: what a verdict must say instead of interesting, for one
        file of a pair of file sets that only the seed holds; `lookahead`, `after`: see
        `first_judged`)."""
        wanted = accepts if accepts is not None else self._is_interesting
        judge = TextJudge(self, wanted, smaller_than, precheck, place)
        return self.first_judged(candidates, judge, label=label, lookahead=lookahead, after=after)

    def first_judged(
        self,
        candidates: Iterable[C],
        judge: Judge[C],
        *,
        label: str,
        lookahead: Lookahead[C] | None = None,
        after: AfterSuccess[C] | None = None,
    ) -> tuple[int, C] | None:
        """The lowest-indexed candidate `judge` finds interesting, or None.

        Candidates are pulled lazily, at most `jobs` judgements in flight
        (abandoned runs of earlier batches included, until they end), and
        never past a known success; while every job is busy, the next ones
        go through the cheap checks until one needs a job (see the module's
        docstring). Every test, cache hit and syntax rejection
        of the batch counts for the pass `label`. `lookahead`, called at most
        once, once every candidate is in flight and a job is idle, gives the
        candidates the caller will try next if none of these wins: they are
        warmed up (see the module's docstring), never answered. `after(i)`,
        likewise, what it tries next if candidate `i` is the answer: while the
        oldest candidate in flight has run long enough that it more likely wins
        than loses (`core/odds.py`), a free job warms up those rather than
        test the candidates past it.
        """
        with self.counting_for(label):
            with self._lock:
                self._batch_open = True
            running: dict[int, Job] = {}
            found = None
            try:
                found = self._first_judged(candidates, judge, label, lookahead, after, running)
            except BaseException:
                for job in running.values():
                    job.ticket.abandon()  # the batch was given up: nobody reads their answers
                raise
            finally:
                with self._lock:
                    self._batch_open = False
                    self._offers.clear()  # their judgements were answered or given up
                    self._jobs.clear_queue_locked()  # given up with the batch's other judgements
                self._speculation.settle(None if found is None else found[0])
        if found is not None:
            with self._lock:
                self.stats.of_pass(label).successes += 1
        return found

    def _first_judged(
        self,
        candidates: Iterable[C],
        judge: Judge[C],
        label: str,
        lookahead: Lookahead[C] | None,
        after: AfterSuccess[C] | None,
        running: dict[int, Job],
    ) -> tuple[int, C] | None:
        """`running`: the judgements in flight, by candidate index (the caller's, so that
        it can abandon them when the batch ends by an exception)."""
        pending = iter(enumerate(candidates))
        ahead: Iterator[C] | None = None
        held: dict[int, C] = {}
        known: dict[int, bool] = {}
        ready: deque[int] = deque()  # past the cheap checks, each waiting for a job
        next_to_resolve = 0
        earliest_success: int | None = None
        exhausted = False
        bet: Bet | None = None
        queued: list[Job] = []  # queued for a worker, not yet seen begun

        def pull(reading_ahead: bool = False) -> None:
            """The next candidate through the cheap checks (`_quick`): known, or ready for
            a job."""
            nonlocal exhausted, earliest_success
            try:
                index, candidate = next(pending)
            except StopIteration:
                exhausted = True
                return
            held[index] = candidate
            verdict = self._quick(judge, candidate, reading_ahead=reading_ahead)
            if verdict is None:
                ready.append(index)
                return
            known[index] = verdict
            if verdict:
                earliest_success = index

        while True:
            while next_to_resolve in known:
                if known[next_to_resolve]:
                    self.stats.interesting += 1
                    for job in running.values():
                        job.ticket.abandon()  # all past the winner: nothing earlier is left
                    return next_to_resolve, held[next_to_resolve]
                held.pop(next_to_resolve, None)
                next_to_resolve += 1
            self._check()  # after an answer already known: it still improves the best result
            job_freed = self._jobs.watch_for_free()
            started: list[Job] = []
            while self._jobs.busy() < self.jobs:
                backed = self._backed(after, bet, next_to_resolve, running, earliest_success)
                if backed is not None and after is not None:
                    if bet is None or bet.index != backed:
                        bet = Bet(backed, iter(after(backed)))
                    placed = self._bet_on_success(bet, judge, label)
                    if placed is not None:
                        started.append(placed)
                        continue
                if self._jobs.queued and self._jobs.start_queued():
                    continue  # queued earlier than anything ready, and no ending job took it
                if ready:
                    index = ready.popleft()
                    if earliest_success is not None and index > earliest_success:
                        ready.clear()  # past a success the cheap checks found
                        continue
                    claimed = self._speculation.claim(held[index])
                    running[index] = claimed or self._submit(judge, held[index], label)
                    if claimed is None:
                        started.append(running[index])
                elif exhausted or earliest_success is not None:
                    break
                else:
                    pull()
            # With candidates to warm up, an idle job takes those before a test beside a
            # judgement's first (the offers wait for the warm-ups below): most first tests
            # refuse (a pair's likelier refusal is asked first), and then the second ran
            # for nothing, while the batch most likely ends without a winner and its
            # lookahead is asked next.
            warm_ups_first = lookahead is not None and earliest_success is None and self.jobs > 1
            if not ready and (exhausted or earliest_success is not None) and not warm_ups_first:
                self._close_batch()
            # The read-ahead below parses while holding the GIL, in C code that lets no other
            # thread in: begun before a new job's thread has spawned its test, it would delay
            # the test by a parse (a millisecond at 23,000 tokens), at every test. The jobs
            # begun meanwhile include those a worker took from the queue.
            started.extend(job for job in queued if job.started)
            queued = [job for job in queued if not job.started]
            hand_over = time.monotonic() + _HAND_OVER_SECONDS
            for job in started:
                job.ticket.wait_under_way(max(0.0, hand_over - time.monotonic()))
            # every job busy: the next candidates' cheap checks run meanwhile, not after, for
            # as long as no job has come free to take one; each found waits, queued, for the
            # first job to end with a refusal, one for each job (two jobs that end together
            # both go on at once)
            while self._jobs.queued < self.jobs and self._jobs.busy() >= self.jobs:
                for _ in range(_READ_AHEAD):
                    if ready or exhausted or earliest_success is not None or job_freed.done():
                        break
                    pull(reading_ahead=True)
                if not ready or (earliest_success is not None and ready[0] > earliest_success):
                    break
                index = ready.popleft()
                claimed = self._speculation.claim(held[index])
                running[index] = claimed or self._submit(judge, held[index], label, queued=True)
                if claimed is None:
                    queued.append(running[index])
            # every candidate of the batch in flight or queued: what its caller tries next
            # if none wins goes on where one of them ends with a refusal (at one job, the
            # batch's last refusal is its answer)
            if (
                exhausted
                and not ready
                and lookahead is not None
                and running
                and earliest_success is None
            ):
                if ahead is None:
                    ahead = iter(lookahead())
                queued.extend(self._queue_warm_ups(ahead, judge, label, job_freed))
            if next_to_resolve in known:
                continue
            if exhausted and not ready and lookahead is not None and self.jobs > 1 and running:
                if ahead is None:
                    ahead = iter(lookahead())
                self._warm_up(ahead, judge, label)
                self._close_batch()  # the offers, for jobs no warm-up took
            if not running:
                if not ready and (exhausted or earliest_success is not None):
                    return None
                orphans = self._jobs.in_flight()
                if orphans:
                    self._wait_any(orphans, job_freed)
                continue
            # every job busy while the oldest candidate looks far likelier to win than to
            # lose: the judgement past it begun last, worth something only if the oldest
            # loses, gives its job to a bet and waits, queued ahead of the candidates after it
            stop_at = None  # when the oldest becomes likely enough to win to stop a test for
            if (
                after is not None
                and self._jobs.busy() >= self.jobs
                and judging_later(running, next_to_resolve)
            ):
                stop_at = self._speculation.when_to_bet(
                    bet, next_to_resolve, running.get(next_to_resolve), PREEMPTION_MARGIN
                )
                victim = None
                if stop_at is not None and stop_at <= time.monotonic():
                    victim = self._speculation.preemptible(running, next_to_resolve)
                if victim is not None:
                    if bet is None or bet.index != next_to_resolve:
                        bet = Bet(next_to_resolve, iter(after(next_to_resolve)))
                    placed = self._bet_on_success(bet, judge, label, instead_of=running[victim])
                    if placed is not None:
                        running[victim] = self._submit(
                            judge, held[victim], label, queued=True, first=True
                        )
                        queued.append(running[victim])
                        continue
            # what an ending job weighs before it goes on with the queue
            if after is None or (
                bet is not None and bet.index == next_to_resolve and bet.exhausted
            ):
                self._speculation.target = None
            else:
                self._speculation.target = running.get(next_to_resolve)
            # with a job free, wake when the oldest candidate turns into the better bet; with
            # none, when it is likely enough to win to stop a later candidate's test for it
            until = None
            if after is not None and self._jobs.busy() < self.jobs:
                until = self._speculation.when_to_bet(
                    bet, next_to_resolve, running.get(next_to_resolve)
                )
            elif stop_at is not None and stop_at > time.monotonic():
                # (a moment already past found nothing to stop a test for: no wake-up
                # again until a judgement ends; before, the main thread spun until one did)
                until = stop_at
            self._wait_any([job.future for job in running.values()], job_freed, until)
            for index in [index for index, job in running.items() if job.future.done()]:
                job = running.pop(index)
                known[index] = job.future.result()
                with self._lock:  # workers read the odds too (`bet_preferred_locked`)
                    self._speculation.record(job, known[index])
                if not known[index]:
                    self._speculation.lost(index)
                elif earliest_success is None or index < earliest_success:
                    earliest_success = index
            if earliest_success is not None:
                for index in [index for index in running if index > earliest_success]:
                    running.pop(index).ticket.abandon()  # speculation past the winner
