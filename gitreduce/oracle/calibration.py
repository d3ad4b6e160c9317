"""Calibration: check that the test classifies the originals as expected, reliably.

Job: before a reduction starts, run the test on the original input several
times, to catch flaky tests, derive the timeout every candidate runs under,
and turn a test that cannot serve as an oracle into a one-line `UserError`
that says why.

How many runs: at least two, and up to five while they are cheap (all of
them within `CHEAP_SECONDS`), as ClusterFuzz re-runs a crash before
minimising it: a test that fails half the time then slips through once in
sixteen calibrations instead of once in two. Any disagreement is an error,
unless `--repeat N` asks for the majority of N runs, the rule every
candidate is then judged by too (`gitreduce.oracle.repeat`).
"""

import math
import os
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import replace
from pathlib import Path

from gitreduce.core.errors import MisclassifiedOriginal, UserError
from gitreduce.core.outcome import Outcome, Verdict
from gitreduce.oracle.executor import TestRunner, open_runner
from gitreduce.oracle.repeat import Tally, describe, kind
from gitreduce.oracle.runner import PROVISIONAL_TIMEOUT
from gitreduce.oracle.spec import TestSpec, first_word

MIN_RUNS = 2
MAX_RUNS = 5
# Runs beyond the first two are made while all of them fit in this budget.
CHEAP_SECONDS = 3.0

Run = tuple[Outcome, str]  # a run's outcome and the output it printed


def calibration_runner(spec: TestSpec, jobs: int) -> TestRunner:
    """The runner calibration runs the test with: up to two runs at a time, each under the
    spec's timeout or, without one, a provisional one (`calibrate(..., runner=)` takes one
    made here, e.g. to share processors with another original's calibration)."""
    return open_runner(replace(spec, timeout=spec.timeout or PROVISIONAL_TIMEOUT), min(jobs, 2))


def calibrate(
    spec: TestSpec,
    content: bytes,
    expect: Verdict,
    jobs: int = 1,
    runner: TestRunner | None = None,
) -> tuple[TestSpec, Outcome]:
    """Check that the test classifies the original input as `expect`, reliably.

    Runs the test on `content` two to five times (see the module's
    docstring), two at a time when `jobs` >= 2, which also exposes tests that
    trip over their own parallel copies; with `spec.repeat` > 1, until the
    majority rule decides. Returns the spec with its timeout set (kept if
    given, else ten times the slowest run, at least one second) and the
    outcome whose signature every candidate must reproduce. Raises
    `UserError` when the test cannot serve as an oracle. `runner`: a
    `calibration_runner`, or one that runs through it, to use (and leave open)
    instead of one of this calibration's own.
    """
    _require_executable(spec.command)
    with nullcontext(runner) if runner is not None else calibration_runner(spec, jobs) as oracle:
        runs = _runs(oracle, spec, content, parallel=jobs >= 2)
    outcomes = [outcome for outcome, _ in runs]
    first = _agreed(spec, outcomes)
    output = next(output for outcome, output in runs if outcome is first)
    if first.verdict is not expect:
        excerpt = _last_line(output)
        wanted = expect.value
        if spec.polarity == "interesting":  # a C-Reduce script tells only these two apart
            wanted = "interesting" if expect is Verdict.BAD else "uninteresting"
        counted = f" in {len(runs)} runs" if spec.repeat > 1 else ""
        raise MisclassifiedOriginal(
            f"the original input is not {wanted} under the test ({_describe(first)}{counted})"
            + (f": {excerpt}" if excerpt else ""),
            given=first.verdict,
        )
    if expect is Verdict.BAD and spec.signature_regex is not None and first.signature is None:
        raise UserError(
            f"the signature pattern {spec.signature_regex!r} matches nothing in the test's "
            "output on the original input"
        )
    slowest = max(outcome.seconds for outcome in outcomes)
    timeout = spec.timeout or max(1.0, float(math.ceil(10 * slowest)))
    return replace(spec, timeout=timeout), first


def _agreed(spec: TestSpec, outcomes: list[Outcome]) -> Outcome:
    """The outcome the runs agree on: all of them, or with --repeat N a majority of N."""
    if spec.repeat > 1:
        tally = Tally(spec, spec.repeat)
        for outcome in outcomes:
            tally.add(outcome)
        winner = tally.winner()
        if winner is None:
            raise UserError(
                f"the test is flaky even for --repeat {spec.repeat}: it classified the original "
                f"input {describe(spec, outcomes)}, no verdict in a majority of {spec.repeat} "
                "runs"
            )
        return winner
    if len({kind(spec, outcome) for outcome in outcomes}) > 1:
        signatures_only = {outcome.verdict for outcome in outcomes} == {Verdict.BAD}
        raise UserError(
            f"the test is flaky: it classified the original input {describe(spec, outcomes)} "
            f"in {len(outcomes)} runs; make the test deterministic"
            + (", pass a signature pattern or --any-failure" if signatures_only else "")
            + ", or pass --repeat N to judge every candidate by the majority of N runs"
        )
    return outcomes[0]


def _runs(oracle: TestRunner, spec: TestSpec, content: bytes, *, parallel: bool) -> list[Run]:
    """The runs calibration makes: see `calibrate`. The first must show that the test runs
    at all; more are made while the answer is open and, without --repeat, while cheap."""
    started = time.monotonic()
    size = 2 if parallel else 1
    runs = _batch(oracle, content, size)
    _require_runnable(spec, *runs[0], oracle.timeout)
    if spec.repeat > 1:
        tally = Tally(spec, spec.repeat)
        for outcome, _ in runs:
            tally.add(outcome)
        while not tally.decided():
            more = _batch(oracle, content, min(size, spec.repeat - len(runs)))
            for outcome, _ in more:
                tally.add(outcome)
            runs += more
        return runs
    while len(runs) < MAX_RUNS:
        if len(runs) >= MIN_RUNS:
            if len({kind(spec, outcome) for outcome, _ in runs}) > 1:
                break  # flaky already
            slowest = max(outcome.seconds for outcome, _ in runs)
            if time.monotonic() - started + slowest > CHEAP_SECONDS:
                break
        runs += _batch(oracle, content, min(size, MAX_RUNS - len(runs)))
    return runs


def _batch(oracle: TestRunner, content: bytes, count: int) -> list[Run]:
    """`count` runs of `content`, at the same time when more than one."""
    if count == 1:
        return [oracle.run_with_output(content)]
    pool = ThreadPoolExecutor(count)
    try:
        return list(pool.map(oracle.run_with_output, [content] * count))
    except BaseException:
        oracle.close()  # Ctrl-C: kill the tests now, not after they finish
        raise
    finally:
        pool.shutdown(wait=False)


def _require_executable(command: str) -> None:
    if not command.strip():
        raise UserError('the test command is empty (an unset variable in --test "$TEST"?)')
    word = first_word(command)
    if word is not None and "/" in word:
        path = Path(word).expanduser()
        if path.is_file() and not os.access(path, os.X_OK):
            raise UserError(f"test script {word} is not executable (chmod +x {word})")


def _require_runnable(spec: TestSpec, outcome: Outcome, output: str, timeout: float) -> None:
    if outcome.verdict is Verdict.TIMEOUT:
        raise UserError(f"the test timed out on the original after {timeout:g} s")
    reason = cannot_run(spec, outcome, output)
    if reason is not None:
        raise UserError(reason)


def cannot_run(spec: TestSpec, outcome: Outcome, output: str) -> str | None:
    """Why the test command itself could not run (the shell's exit 127 or 126 with its
    message), or None: such a run says nothing about the candidate."""
    cannot = {127: ("not found",), 126: ("permission denied", "cannot execute")}
    markers = cannot.get(outcome.exit_code or 0)
    lowered = output.lower()
    if markers is None or not any(marker in lowered for marker in markers):
        return None
    word = first_word(spec.command)
    hint = ""
    if word is not None and "/" not in word and Path(word).is_file():
        hint = f" (to run the file in the current directory, write ./{word})"
    return f"the test command could not run (exit {outcome.exit_code}): {_last_line(output)}{hint}"


def _describe(outcome: Outcome) -> str:
    if outcome.exit_code is not None and outcome.exit_code < 0:
        try:
            return f"killed by {signal.Signals(-outcome.exit_code).name}"
        except ValueError:
            return f"killed by signal {-outcome.exit_code}"
    return f"exit {outcome.exit_code}"


def _last_line(output: str, limit: int = 200) -> str:
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    if not lines:
        return ""
    return lines[-1] if len(lines[-1]) <= limit else lines[-1][: limit - 3] + "..."
