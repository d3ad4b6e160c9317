"""The jobs a triage gives each reduction: more for the last ones, to keep the workers busy."""

from __future__ import annotations

from gitreduce.sessions.triage import _tail_jobs
from gitreduce.sessions.triage_state import TriageState


def jobs_by_position(findings: int, workers: int, jobs: int) -> list[int]:
    state = TriageState([], workers=workers, jobs=jobs)
    return [_tail_jobs(state, findings - position) for position in range(findings)]


def test_every_reduction_but_the_last_workers_keeps_its_jobs():
    given = jobs_by_position(24, workers=8, jobs=1)
    assert given[:17] == [1] * 17
    assert given[17:] == [2, 2, 2, 2, 3, 4, 8]


def test_the_last_one_alone_may_use_every_worker():
    assert jobs_by_position(3, workers=2, jobs=2) == [2, 2, 4]
    assert jobs_by_position(1, workers=4, jobs=1) == [4]


def test_one_worker_changes_nothing():
    assert jobs_by_position(5, workers=1, jobs=3) == [3] * 5
