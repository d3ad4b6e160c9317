"""Speculative judgements the engine gave up on, and how their tests are stopped.

With `--jobs N` the engine judges candidates past the one it waits for. Once
an earlier candidate wins, a later one still running answers a question
nobody asks any more: its text was derived from the pair or program just
replaced, so the next batch never looks it up. Left to finish, such a test
still held one of the N slots, and on a machine with N cores its CPU, while
the next batch started one test short. So every judgement the engine submits
carries a `Ticket`; the engine abandons the tickets of the candidates past a
winner, and the oracle that is running a test for an abandoned ticket kills
it. An abandoned test raises `Abandoned` instead of returning a verdict, so
nothing is cached for it, and which candidate wins never depends on it.

The ticket travels with the worker thread (`holding`), so the layers between
the engine and the oracle (the judge, the cache's recording wrapper, the
repeat rule) need not pass it along. A judgement of several tests (a pair's
seed and variant) also says through it when one passed with another to come
(`passed_one`): most such judgements that get that far win, which the
engine's bets weigh (`core/speculation.py`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

_local = threading.local()


class Abandoned(Exception):
    """The judgement this test was for no longer matters; the test was stopped or skipped."""


class Ticket:
    """One submitted judgement: whether it still matters, and how to stop its running test."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._abandoned = False
        self._stops: list[Callable[[], None]] = []
        self._under_way = threading.Event()
        self._ended = threading.Event()
        self._tested = False
        # when a test of the judgement last passed with another still to run (0: none did)
        self.passed_at = 0.0
        # called, in the judgement's thread, when that happens: the engine weighs it at once
        self.on_pass: Callable[[], None] | None = None

    @property
    def abandoned(self) -> bool:
        return self._abandoned

    def abandon(self) -> None:
        """No answer is wanted any more: stop the test running for it, skip any later one."""
        with self._lock:
            self._abandoned = True
            stops = list(self._stops)
        for stop in stops:
            stop()

    def under_way(self) -> None:
        """The judgement's test is running (or the judgement needs none any more)."""
        self._under_way.set()

    def testing(self) -> None:
        """A test runs for the judgement (its own, or an identical one it waits on)."""
        self._tested = True
        self._under_way.set()

    @property
    def tested(self) -> bool:
        """Whether a test ran for the judgement: it was not decided by the cache alone."""
        return self._tested

    def end(self) -> None:
        """The judgement returned or gave up: its verdict, if any, is in the cache. Set by
        the engine for a test beside another (`Engine.test_beside`), which nobody awaits."""
        self._ended.set()

    @property
    def ended(self) -> bool:
        return self._ended.is_set()

    def wait_under_way(self, seconds: float) -> None:
        """Until the judgement's test is running, for at most `seconds`."""
        self._under_way.wait(seconds)

    @contextmanager
    def stoppable(self, stop: Callable[[], None]) -> Iterator[None]:
        """While inside, `abandon()` calls `stop` (at once, if already abandoned)."""
        with self._lock:
            self._stops.append(stop)
            abandoned = self._abandoned
        if abandoned:
            stop()
        try:
            yield
        finally:
            with self._lock:
                self._stops.remove(stop)


def current() -> Ticket | None:
    """The ticket of the judgement this thread works for, if any."""
    ticket: Ticket | None = getattr(_local, "ticket", None)
    return ticket


@contextmanager
def holding(ticket: Ticket) -> Iterator[None]:
    """Make `ticket` this thread's for the duration."""
    outer = current()
    _local.ticket = ticket
    try:
        yield
    finally:
        _local.ticket = outer


def test_under_way() -> None:
    """Tell this thread's judgement, if any, that its test is running: where it runs (the
    oracle, a cluster) calls this once the test is started and the thread is about to wait."""
    ticket = current()
    if ticket is not None:
        ticket.testing()


def passed_one() -> None:
    """Tell this thread's judgement, if any, that one of its tests passed and another
    follows: from now on it is a judgement that got that far (`Ticket.passed_at`)."""
    ticket = current()
    if ticket is not None:
        ticket.passed_at = time.monotonic()
        if ticket.on_pass is not None:
            ticket.on_pass()


def check() -> None:
    """Raise `Abandoned` if this thread's judgement was given up: don't start another test."""
    ticket = current()
    if ticket is not None and ticket.abandoned:
        raise Abandoned
