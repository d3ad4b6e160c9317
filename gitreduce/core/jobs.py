"""The engine's jobs: judgements run in worker threads, and the count `--jobs` limits.

A job is one judgement (`Judge.full`, or a test beside another) running in a
worker thread. The engine starts a job only while fewer than its `jobs` are
busy; a judgement waiting on another's identical test holds none (`waiting`).
Whenever a job may have come free (one ends, one starts waiting, `set_jobs`
widens the engine), the batch's main thread is woken (`watch_for_free`).

The main thread reads a batch's next candidates while every job is busy and
queues their judgements, one for each job. A job whose judgement refuses
goes on with the oldest queued one in its own thread, before its own answer
is published, so the count of busy jobs never dips: a refusal ends no
batch, so that judgement is
what the main thread would start next anyway, and going on here spares the
round trip through it (its wake-up, the pool's hand-off: about 0.16 ms of a
0.32-ms gap between two tests, measured at one job). A job whose answer
accepts may have ended the batch, and what was queued after it lies past the
winner: the main thread decides (`start_queued`), as it does when the engine
would rather use the free job otherwise (`may_go_on`).

Every method whose name ends in `_locked` expects the caller to hold the
engine's lock (`lock`); the others take it.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TypeVar

from gitreduce.core import tickets

T = TypeVar("T")


@dataclass(eq=False)
class Job:
    """One judgement: its work, its future, the ticket that lets the engine give it up, and
    when it started and (once its work returned) ended."""

    work: Callable[[], bool]
    ticket: tickets.Ticket
    future: Future[bool] = field(default_factory=Future)
    started: float = 0.0  # 0 while queued
    ended: float = 0.0

    @property
    def seconds(self) -> float:
        """How long the judgement took, once it is done."""
        return self.ended - self.started


class Jobs:
    """The worker threads of one engine, the jobs they run and the judgements queued for
    them. `may_go_on(job)`, asked under the lock when `job` has just refused, says
    whether its worker may take the queue's next judgement."""

    def __init__(
        self, lock: threading.Lock, workers: int, may_go_on: Callable[[Job], bool]
    ) -> None:
        self.lock = lock
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="oracle")
        self._may_go_on = may_go_on
        self._in_flight: set[Future[bool]] = set()
        self._waiting = 0  # judgements blocked on an identical test another one runs
        self._queued: deque[Job] = deque()
        self._freed: Future[None] = Future()  # set when a job may have come free

    def close(self, *, wait: bool = False) -> None:
        """Start no more work; with `wait`, until what runs has ended."""
        self._pool.shutdown(wait=wait, cancel_futures=True)

    def make(self, work: Callable[[], bool], ticket: tickets.Ticket) -> Job:
        """A job, not begun: once begun, its end frees its place (the callback is added
        here, outside the lock it takes, while nothing can run it)."""
        job = Job(work, ticket)
        job.future.add_done_callback(self._done)
        return job

    def start_locked(self, job: Job) -> None:
        self._begin_locked(job)
        self._pool.submit(self._work, job)

    def run(self, work: Callable[[], T]) -> Future[T]:
        """Run `work` in a worker, outside the count: a single check the caller awaits."""
        return self._pool.submit(work)

    def queue_locked(self, job: Job, *, first: bool = False) -> None:
        """Queue `job` last, or `first` (ahead of what was queued after the candidate it
        judges)."""
        if first:
            self._queued.appendleft(job)
        else:
            self._queued.append(job)

    @property
    def queued(self) -> int:
        return len(self._queued)

    def clear_queue_locked(self) -> None:
        self._queued.clear()

    def start_queued(self) -> bool:
        """Start, in a new job, a queued judgement no ending job took; whether there was one."""
        with self.lock:
            job = self._next_queued_locked()
            if job is None:
                return False
            self._pool.submit(self._work, job)
            return True

    def busy(self) -> int:
        """Jobs running a test: a judgement waiting on another's identical test holds none."""
        with self.lock:
            return self.busy_locked()

    def busy_locked(self) -> int:
        return len(self._in_flight) - self._waiting

    def in_flight(self) -> list[Future[bool]]:
        with self.lock:
            return list(self._in_flight)

    def wait_begins_locked(self) -> None:
        """A judgement starts waiting on another's identical test: its job is free."""
        self._waiting += 1
        self.free_locked()

    def wait_ends_locked(self) -> None:
        self._waiting -= 1

    def watch_for_free(self) -> Future[None]:
        """A future set once a job may have come free from now on: the main thread takes
        it before it counts busy jobs, so a job freed after the count still wakes it."""
        with self.lock:
            if self._freed.done():
                self._freed = Future()
            return self._freed

    def free_locked(self) -> None:
        if not self._freed.done():
            self._freed.set_result(None)

    def _begin_locked(self, job: Job) -> None:
        job.started = time.monotonic()
        self._in_flight.add(job.future)

    def _work(self, job: Job | None) -> None:
        """Run `job` in this worker; then, if its answer was a refusal, the next queued
        judgement, and so on (see the module's docstring)."""
        while job is not None:
            try:
                answer = job.work()
            except BaseException as error:  # the judgement's own failure, for its reader
                job.ended = time.monotonic()
                job.ticket.under_way()
                job.future.set_exception(error)
                return
            job.ended = time.monotonic()
            job.ticket.under_way()  # decided, maybe by no test at all: nobody waits for one
            following = None
            try:
                if not answer:
                    with self.lock:
                        if self._may_go_on(job):
                            following = self._next_queued_locked()
            finally:
                job.future.set_result(answer)  # whatever happens, its reader hears of it
            job = following

    def _next_queued_locked(self) -> Job | None:
        """The oldest queued judgement not given up, begun; None if there is none."""
        while self._queued:
            job = self._queued.popleft()
            if not job.ticket.abandoned:
                self._begin_locked(job)
                return job
        return None

    def _done(self, future: Future[bool]) -> None:
        with self.lock:
            self._in_flight.discard(future)
            self.free_locked()
