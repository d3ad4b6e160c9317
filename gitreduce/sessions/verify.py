"""The final re-verification of a result, and the back-off when it is not stably bad.

Why: a reduction's verdicts come from runs made side by side (`--jobs`), each
once. A test that fails only sometimes, or a timing-dependent one ("bad when
the compiler needs more than 4 s", judged while another compile runs), can
end a reduction at a result that is not bad when the user runs it alone. So
once the reduction is over, the result is run again alone (nothing else
running) `STABLE_RUNS` times, or `--repeat N` times when that is more, and
must be judged as it was by every run (with `--repeat`, by a majority).

When it is not, the reduction walks back the chain of texts it accepted,
newest first, to the last one that is stably bad, and says so; the run's
verdicts are revoked (`GitVerdictCache.revoke_run`), so no later run replays
them. A text found stable is stored with the number of runs that confirmed
it alone (`Outcome.solo_runs`), so a rerun of the same reduction, recalling
that local verdict, runs no test for the re-verification either.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Generic, TypeVar

from gitreduce.core.errors import UserError
from gitreduce.core.judges import Accepts
from gitreduce.core.keys import candidate_key
from gitreduce.core.outcome import Outcome
from gitreduce.oracle.executor import TestRunner
from gitreduce.oracle.repeat import describe
from gitreduce.sessions.run import CalibratedRun

STABLE_RUNS = 3
LABEL = "verify"  # the tests of the re-verification, in `tests_by_pass`
T = TypeVar("T")

# What a result must show to stand: (text, what its verdict must say, what that is called).
Checks = Callable[[T], list[tuple[bytes, Accepts, str]]]


@dataclass(frozen=True)
class Settled(Generic[T]):
    """The result that stands: `chain[-1 - back]`; `unstable` describes the runs that made
    the final one fail its re-verification ("" when it did not)."""

    result: T
    back: int
    unstable: str


def settle(run: CalibratedRun, chain: Sequence[T], checks: Checks[T]) -> Settled[T]:
    """The last text of `chain` (the original first, then each accepted one) that is stably
    what `checks` asks, re-run alone; raises `UserError` when not even the original is.

    Stops the reduction's oracle first: its leftover speculative runs would
    not leave the re-verification alone. They are killed at once; waiting for
    their slots and removing its scratch directories are left to the end of the
    run (`calibrated_run`), 1-1.5 ms that were spent with no test running. The
    runner the re-verification runs in was made while the reduction's first
    tests ran (`CalibratedRun.alone`). The cache seals and packs the
    reduction's verdicts meanwhile.
    """
    run.oracle.stop()
    run.engine.close()
    total = max(STABLE_RUNS, run.spec.repeat)
    unstable = failure = ""
    seen: dict[str, str] = {}  # texts found unstable (by key): what their runs said
    with run.alone.result() as alone:
        # After the runner is made: the seal's Python work holds the interpreter in 5-ms
        # slices, and making a runner waits on it at every system call (20-60 ms instead
        # of 1-5 on sequence-point's fixture).
        run.cache.pack_soon()
        for back, entry in enumerate(reversed(chain)):
            found = _first_failure(run, alone, checks(entry), total, seen)
            if found is None:
                run.verified = True
                return Settled(entry, back, unstable)
            failure = found
            if back == 0:
                unstable = failure
                run.cache.revoke_run()
    raise UserError(
        f"the test is flaky: not even the original input is stable when re-run alone ({failure}); "
        "make the test deterministic, or pass --repeat N to judge every candidate by the "
        "majority of N runs"
    )


def backed_off(settled: Settled[T], size: str) -> str:
    """The warning that the result had to be walked back to `settled`, of `size`."""
    steps = f"{settled.back} accepted step{'s' if settled.back > 1 else ''}"
    return (
        f"the result was not stably bad: re-run alone, {settled.unstable}; backed off {steps} "
        f"to the last result that is ({size}); this run's verdicts are not kept for later runs"
    )


def _first_failure(
    run: CalibratedRun,
    alone: TestRunner,
    checks: list[tuple[bytes, Accepts, str]],
    total: int,
    seen: dict[str, str],
) -> str | None:
    """None when every check holds stably; else what the first that does not saw. A text
    already found unstable (a pair's seed that stayed the same) is not run again."""
    for text, accepts, name in checks:
        key = candidate_key(text)
        if key in seen:
            return seen[key]
        outcomes = _stable_runs(run, alone, text, accepts, total)
        if outcomes is not None:
            count = f"{len(outcomes)} run{'s' if len(outcomes) > 1 else ''}"
            seen[key] = f"{name} was classified {describe(run.spec, outcomes)} in {count}"
            return seen[key]
    return None


def _stable_runs(
    run: CalibratedRun, alone: TestRunner, text: bytes, accepts: Accepts, total: int
) -> list[Outcome] | None:
    """None when `text` is stably what `accepts` asks: a local verdict says so for `total`
    runs alone, or `total` runs now do (with --repeat, a majority of them). Else the runs."""
    key = candidate_key(text)
    cached = run.cache.get(key)
    if cached is not None and cached.local and cached.solo_runs >= total and accepts(cached):
        return None
    needed = total if run.spec.repeat == 1 else total // 2 + 1
    outcomes: list[Outcome] = []
    passed: list[Outcome] = []
    started = time.monotonic()
    try:
        while len(passed) < needed and len(outcomes) - len(passed) <= total - needed:
            outcome = alone.run(text)
            outcomes.append(outcome)
            if accepts(outcome):
                passed.append(outcome)
    finally:
        stats = run.engine.stats
        stats.tests_run += len(outcomes)
        stats.of_pass(LABEL).tests += len(outcomes)
        seconds = time.monotonic() - started  # one test at a time: busy time is test time
        stats.oracle_busy_seconds += seconds
        stats.test_seconds += seconds
    if len(passed) < needed:
        return outcomes
    run.cache.put(key, replace(passed[0], solo_runs=total), content=text)
    return None
