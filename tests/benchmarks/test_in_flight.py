"""What a second job's tests were worth, measured against a one-job run's texts."""

import pytest
from in_flight import TimedRun, slowdown, spent


def run(start: float, end: float, text: str, cut: bool = False) -> TimedRun:
    return TimedRun(start, end, text, cut)


ONE_JOB = [run(0.0, 1.0, "a"), run(1.0, 3.0, "b"), run(3.0, 4.0, "c")]


def test_test_time_is_sorted_by_what_the_one_job_run_needed():
    two_jobs = [
        run(0.0, 1.5, "a"),
        run(0.0, 0.5, "x"),  # speculation that lost, run to the end
        run(0.5, 1.0, "b", cut=True),  # stopped for a bet, run again below
        run(1.5, 3.5, "b"),
        run(1.5, 1.75, "y", cut=True),  # past a winner, killed
        run(3.5, 4.5, "c"),
        run(4.5, 5.0, "c"),  # asked again after a revoked verdict
    ]
    assert spent(two_jobs, ONE_JOB) == {
        "needed": (3, 1.5 + 2.0 + 1.0),
        "again": (2, 0.5 + 0.5),
        "unneeded": (1, 0.5),
        "unneeded, cut short": (1, 0.25),
    }


def test_the_slowdown_compares_each_needed_texts_first_completed_run():
    two_jobs = [run(0.0, 0.25, "a", cut=True), run(0.5, 1.7, "a"), run(1.0, 3.4, "b")]
    assert slowdown(two_jobs, ONE_JOB) == pytest.approx((1.2 + 2.4) / (1.0 + 2.0))
    assert slowdown([run(0.0, 1.0, "x")], ONE_JOB) is None
