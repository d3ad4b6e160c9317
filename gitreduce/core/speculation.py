"""What the engine's spare jobs judge for the cache: warm-ups and bets, and their bookkeeping.

A warm-up judges a candidate the caller will ask for next if no candidate of
the running batch wins (its lookahead); a bet, one it will ask for next if
the batch's oldest candidate, still running, wins (`after`). Neither answers
the batch: their verdicts fill the cache, and the next batch takes over a
judgement still running that asks for the same candidate (`claim`). At the
batch's end only the warm-ups made for the answer it gave are kept
(`settle`); a candidate that loses takes its bets with it (`lost`).

When to bet comes from `core/odds.py`: once the oldest candidate has run so
long that, of the recent judgements that ran as long, more won than lost; or,
for a judgement of two tests whose first passed (a pair's seed, then its
variant: `tickets.passed_one`), once it has run so long since that, of the
recent judgements that got as far and ran on as long, more won than lost. On
rustc's pair, 12 of the 13 candidates whose first test passed in the
variant's repair won, and 23 of 49 in MinCommonality: where passing the
first test says little, those odds say so, and nothing changes.
The engine (docs/architecture.md, "Warm-ups" and "Bets") decides what to
start; this module only keeps what was started and answers when to bet.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

from gitreduce.core.jobs import Job
from gitreduce.core.odds import Odds

# How many more recent judgements as long as the oldest one running must have won than lost
# before a later candidate's test is stopped for a bet on it. A bet in a free job costs
# nothing when it loses (the job would have tested a later candidate, worth something only
# if the oldest loses); a stopped test loses what it ran, and is run again should the oldest
# lose. Measured at two jobs with the plain majority: bets on the g++ pair won 55 times in
# 100, and 63 tests were stopped in one run (32 with this margin).
PREEMPTION_MARGIN = 3.0


@dataclass(frozen=True)
class WarmUp:
    """A judgement run for the cache ahead of the batch that will ask for it: the
    candidate, its job, and the candidate of the running batch whose success it
    assumes (None: that no candidate of it wins)."""

    candidate: object
    job: Job
    assumes: int | None = None


@dataclass
class Bet:
    """Speculation on one running candidate's success: its index in the batch and what its
    caller tries next if it wins, read as jobs come free."""

    index: int
    following: Iterator[object]
    exhausted: bool = False


class Speculation:
    """The warm-ups and bets of one engine, and the odds its bets follow. Used by the
    batch's main thread, except `record` and `bet_preferred_locked`, which the engine
    calls under its lock (workers ask the latter)."""

    def __init__(self) -> None:
        self.warm_ups: list[WarmUp] = []
        self._odds = Odds()
        # the judgements a first test passed, by how long they ran on from there
        self._odds_once_passed = Odds()
        # the running candidate the batch would bet on, while its caller says what follows
        self.target: Job | None = None

    def add(self, candidate: object, job: Job, assumes: int | None = None) -> None:
        self.warm_ups.append(WarmUp(candidate, job, assumes))

    def running(self, candidate: object) -> bool:
        return any(warm.candidate == candidate for warm in self.warm_ups)

    def forget_ended(self) -> None:
        self.warm_ups = [warm for warm in self.warm_ups if not warm.job.future.done()]

    def claim(self, candidate: object) -> Job | None:
        """The warm-up judging `candidate`, taken over by the batch that now asks for it.

        Its judge was the batch's before this one, made from the same text (a
        lookahead yields only what its caller asks next if nothing is taken,
        a bet what it asks next if the candidate it assumed was taken), so its
        answer is this batch's. Taking the job over, rather than submitting
        another that would wait on the same test, keeps the count of busy jobs
        right from the start. Only a begun one is taken: one still queued may never
        begin, and a batch waiting on it would wait for ever.
        """
        for position, warm in enumerate(self.warm_ups):
            if warm.candidate == candidate and warm.job.started:
                del self.warm_ups[position]
                return warm.job
        return None

    def settle(self, winner: int | None) -> None:
        """At a batch's end (`winner`: the index it answered, or None), keep the warm-ups
        made for what follows that answer, for the next batch to find, and abandon the
        rest: derived from a text the answer replaced, or assuming a winner it is not,
        or never begun (queued for a refusal no job ended with)."""
        kept = []
        for warm in self.warm_ups:
            if warm.assumes == winner and warm.job.started:
                kept.append(WarmUp(warm.candidate, warm.job))
            else:
                warm.job.ticket.abandon()
        self.warm_ups = kept
        self.target = None

    def lost(self, index: int) -> None:
        """Abandon the warm-ups that assumed the batch's candidate `index`, which lost."""
        for warm in [warm for warm in self.warm_ups if warm.assumes == index]:
            warm.job.ticket.abandon()
            self.warm_ups.remove(warm)

    def record(self, job: Job, won: bool) -> None:
        """A judgement of the batch ended (`job`, done), winning or not."""
        self._odds.record(job.seconds, won)
        if job.ticket.passed_at:
            self._odds_once_passed.record(job.ended - job.ticket.passed_at, won)

    def worth_making(self, bet: Bet | None, index: int, job: Job | None) -> bool:
        """Whether the batch's oldest candidate, `index`, judged by `job` (None: not
        running), more likely wins than loses and has something left to bet on."""
        return job is not None and _open_to_bets(bet, index, job) and self._favoured(job)

    def _favoured(self, job: Job) -> bool:
        """Whether the judgement `job` runs is now likelier to win than to lose, by how long
        it has run or, once its first test passed, by how long it has run since."""
        now, passed = time.monotonic(), job.ticket.passed_at
        return self._odds.favour_success(now - job.started) or (
            passed > 0 and self._odds_once_passed.favour_success(now - passed)
        )

    def when_to_bet(
        self, bet: Bet | None, index: int, job: Job | None, margin: float = 1.0
    ) -> float | None:
        """When, if it is still running then, the oldest candidate `index` (judged by
        `job`) becomes the better bet to win (by `margin`), by how long it has run or,
        once its first test passed, by how long it has run since; None if it will not."""
        if job is None or not _open_to_bets(bet, index, job):
            return None
        turns = (
            _turn(self._odds, job.started, margin),
            _turn(self._odds_once_passed, job.ticket.passed_at, margin),
        )
        return min((turn for turn in turns if turn is not None), default=None)

    @staticmethod
    def preemptible(running: dict[int, Job], oldest: int) -> int | None:
        """The later candidate of a batch (`running`: its judgements by index) whose job a
        bet on the oldest one, `oldest`, takes over once the oldest looks
        `PREEMPTION_MARGIN` times likelier to win than to lose (`when_to_bet`), if any:
        while the oldest's test runs, the one begun last (the least of its test is lost
        should it have to run again). Whatever its own verdict, a later candidate's test
        is worth something only if the oldest loses."""
        judging = running.get(oldest)
        if judging is None or not judging.ticket.tested or judging.future.done():
            return None
        later = judging_later(running, oldest)
        return max(later, key=lambda index: running[index].started, default=None)

    def bet_preferred_locked(self, ended: Job) -> bool:
        """Whether the batch's oldest candidate (`target`), running in another job than
        `ended`, is now the better bet to win: the free job is then the main thread's to
        bet with, and the queue waits."""
        target = self.target
        if target is None or target is ended or not target.started or target.future.done():
            return False
        return self._favoured(target)


def _open_to_bets(bet: Bet | None, index: int, job: Job) -> bool:
    """Whether `job`, judging the batch's oldest candidate `index`, is running with
    something left to bet on after it (`bet` not read out)."""
    return bool(job.started) and not (bet is not None and bet.index == index and bet.exhausted)


def _turn(odds: Odds, since: float, margin: float = 1.0) -> float | None:
    """The moment a judgement running `since` then (0: not begun, or no such moment)
    becomes the better bet by `odds`; None if it will not."""
    if not since:
        return None
    turn = odds.when_success_favoured(time.monotonic() - since, margin)
    return None if turn is None else since + turn


def judging_later(running: dict[int, Job], oldest: int) -> list[int]:
    """The candidates past `oldest` whose judgements hold a job: begun and not ended."""
    return [
        index
        for index, job in running.items()
        if index > oldest and job.started and not job.future.done()
    ]
