"""The majority rule of `--repeat N`: what several runs of one candidate add up to."""

from __future__ import annotations

import pytest

from gitreduce.core.outcome import Outcome, Verdict
from gitreduce.oracle.repeat import Tally, describe, repeated
from gitreduce.oracle.spec import TestSpec

BOOM = Outcome(Verdict.BAD, 1, 0.1, "exit 1: error: boom")
OTHER = Outcome(Verdict.BAD, 1, 0.1, "exit 1: error: other")
GOOD = Outcome(Verdict.GOOD, 0, 0.2)


def judge(spec: TestSpec, said: list[Outcome]) -> tuple[Outcome, int]:
    """The verdict `repeated` gives when the runs say `said` in turn, and runs it made."""
    pending = list(said)
    verdict = repeated(lambda content: pending.pop(0), spec)(b"candidate")
    return verdict, len(said) - len(pending)


def test_one_run_is_the_run_itself():
    run = repeated(lambda content: GOOD, TestSpec("t", "v.c"))
    assert run(b"x") is GOOD


@pytest.mark.parametrize(
    ("said", "verdict", "runs"),
    [
        ([BOOM, BOOM, BOOM, GOOD, GOOD], BOOM, 3),  # a majority stops the runs
        ([BOOM, GOOD, BOOM, GOOD, BOOM], BOOM, 5),
        ([GOOD, BOOM, GOOD, GOOD, BOOM], GOOD, 4),
        # failing in two ways: neither has a majority, so the candidate cannot be judged
        ([BOOM, OTHER, BOOM, OTHER, GOOD], Outcome(Verdict.SKIP, None, 0.2), 5),
    ],
)
def test_the_majority_of_n_runs_decides(said, verdict, runs):
    assert judge(TestSpec("t", "v.c", repeat=5), said) == (verdict, runs)


def test_runs_stop_once_no_majority_is_possible():
    assert judge(TestSpec("t", "v.c", repeat=4), [BOOM, GOOD, OTHER, GOOD]) == (
        Outcome(Verdict.SKIP, None, 0.2),
        3,
    )


def test_any_failure_ignores_the_signature():
    spec = TestSpec("t", "v.c", repeat=3, any_failure=True)
    assert judge(spec, [BOOM, OTHER, GOOD]) == (BOOM, 2)


def test_a_tally_describes_the_runs_signatures_only_where_they_differ():
    spec = TestSpec("t", "v.c")
    assert describe(spec, [BOOM, GOOD, BOOM]) == "bad, good, bad"
    assert describe(spec, [BOOM, OTHER]) == (
        "bad ('exit 1: error: boom'), bad ('exit 1: error: other')"
    )
    tally = Tally(spec, 3)
    tally.add(GOOD)
    assert not tally.decided() and tally.winner() is None
    tally.add(GOOD)
    assert tally.decided() and tally.verdict() is GOOD
