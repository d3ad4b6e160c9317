"""`Current.try_until_none`: a pass that derives its candidates again after every win tells
the engine what follows each candidate's win, so one job's tests run back to back."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from gitreduce.core import tickets
from gitreduce.core.current import Current
from gitreduce.core.engine import Engine
from gitreduce.core.outcome import Outcome, Verdict
from gitreduce.lang import grammars
from gitreduce.lang.syntax import Syntax

PROGRAM = b"int a;\nint keep;\nint b;\nint c;\nint d;\n"


def without_one_line(current: Current) -> Iterator[bytes]:
    """Each line of the current text deleted, first to last."""
    assert current.parsed is not None
    lines = current.parsed.text.splitlines(keepends=True)
    for index in range(len(lines)):
        yield b"".join(lines[:index] + lines[index + 1 :])


class KeepIsInteresting:
    """A run_test that keeps `int keep;` interesting, logging what it ran."""

    def __init__(self) -> None:
        self.started: list[bytes] = []
        self.lock = threading.Lock()

    def __call__(self, text: bytes) -> Outcome:
        tickets.test_under_way()  # as the oracle says once its test runs
        with self.lock:
            self.started.append(text)
        time.sleep(0.05)  # time for the main thread to read ahead, as beside a real test
        if b"keep" in text:
            return Outcome(Verdict.BAD, 1, 0.0, "exit 1")
        return Outcome(Verdict.GOOD, 0, 0.0)


def reduced(jobs: int) -> tuple[bytes, list[bytes], int]:
    """The text `without_one_line` leaves, the tests in the order they started, and how
    many jobs a main thread handed to the pool."""
    grammar = grammars.load("c")
    assert grammar is not None
    tests = KeepIsInteresting()
    engine = Engine(tests, lambda outcome: outcome.verdict is Verdict.BAD, jobs=jobs)
    handed_off: list[object] = []
    submit = engine._jobs._pool.submit

    def counted(*args, **kwargs):
        handed_off.append(args)
        return submit(*args, **kwargs)

    engine._jobs._pool.submit = counted
    try:
        current = Current(PROGRAM, engine, Syntax(grammar, PROGRAM))
        assert current.try_until_none(without_one_line)
        return current.text, tests.started, len(handed_off)
    finally:
        engine.close()


def test_at_one_job_each_win_goes_straight_on_to_the_next_rounds_first_test():
    """Four lines go, one round each: the job whose candidate wins tests the next round's
    first candidate itself, so the main thread hands the pool one job for all the rounds
    (before: one per round). The tests and their order are those of rounds run one
    after another."""
    text, started, hand_offs = reduced(jobs=1)
    assert text == b"int keep;\n"
    assert started == [
        b"int keep;\nint b;\nint c;\nint d;\n",
        b"int b;\nint c;\nint d;\n",
        b"int keep;\nint c;\nint d;\n",
        b"int c;\nint d;\n",
        b"int keep;\nint d;\n",
        b"int d;\n",
        b"int keep;\n",
        b"",
        # the last round: nothing left to delete but `int keep;` itself, refused
    ]
    assert hand_offs == 1


@pytest.mark.parametrize("jobs", [1, 2, 3])
def test_what_follows_a_win_changes_no_result(jobs):
    assert reduced(jobs)[0] == b"int keep;\n"
