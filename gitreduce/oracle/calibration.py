"""Calibration: check that the test classifies the originals as expected, reliably.

Job: before a reduction starts, run the test on the original input (twice, to
catch flaky tests), derive the timeout every candidate runs under, and turn a
test that cannot serve as an oracle into a one-line `UserError` that says why.
"""

import math
import os
import signal
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

from gitreduce.core.errors import MisclassifiedOriginal, UserError
from gitreduce.core.outcome import Outcome, Verdict
from gitreduce.oracle.runner import PROVISIONAL_TIMEOUT, Oracle
from gitreduce.oracle.spec import TestSpec, first_word


def calibrate(
    spec: TestSpec, content: bytes, expect: Verdict, jobs: int = 1
) -> tuple[TestSpec, Outcome]:
    """Check that the test classifies the original input as `expect`, reliably.

    Runs the test on `content` twice (at the same time when `jobs` >= 2, which
    also exposes tests that trip over their own parallel copies). Returns the
    spec with its timeout set (kept if given, else ten times the slower run,
    at least one second) and the first outcome, whose signature is the one
    every candidate must reproduce. Raises `UserError` when the test cannot
    serve as an oracle.
    """
    _require_executable(spec.command)
    provisional = replace(spec, timeout=spec.timeout or PROVISIONAL_TIMEOUT)
    with Oracle(provisional, jobs=min(jobs, 2)) as oracle:
        if jobs >= 2:
            pool = ThreadPoolExecutor(2)
            try:
                (first, output), (second, _) = pool.map(oracle.run_with_output, [content, content])
            except BaseException:
                oracle.close()  # Ctrl-C: kill the tests now, not after they finish
                raise
            finally:
                pool.shutdown(wait=False)
            _require_runnable(spec, first, output, oracle.timeout)
        else:
            first, output = oracle.run_with_output(content)
            _require_runnable(spec, first, output, oracle.timeout)
            second, _ = oracle.run_with_output(content)
    if first.verdict is not second.verdict:
        raise UserError(
            f"flaky test: the original input was classified {first.verdict.value} then "
            f"{second.verdict.value}; make the test deterministic"
        )
    if not spec.any_failure and first.signature != second.signature:
        raise UserError(
            f"flaky test: the original input failed as {first.signature!r} then as "
            f"{second.signature!r}; make the test deterministic, or pass a signature "
            "pattern or --any-failure"
        )
    if first.verdict is not expect:
        excerpt = _last_line(output)
        wanted = expect.value
        if spec.polarity == "interesting" and expect is Verdict.BAD:
            wanted = "interesting"
        raise MisclassifiedOriginal(
            f"the original input is not {wanted} under the test ({_describe(first)})"
            + (f": {excerpt}" if excerpt else "")
        )
    if expect is Verdict.BAD and spec.signature_regex is not None and first.signature is None:
        raise UserError(
            f"the signature pattern {spec.signature_regex!r} matches nothing in the test's "
            "output on the original input"
        )
    timeout = spec.timeout or max(1.0, float(math.ceil(10 * max(first.seconds, second.seconds))))
    return replace(spec, timeout=timeout), first


def _require_executable(command: str) -> None:
    word = first_word(command)
    if word is not None and "/" in word:
        path = Path(word).expanduser()
        if path.is_file() and not os.access(path, os.X_OK):
            raise UserError(f"test script {word} is not executable (chmod +x {word})")


def _require_runnable(spec: TestSpec, outcome: Outcome, output: str, timeout: float) -> None:
    if outcome.verdict is Verdict.TIMEOUT:
        raise UserError(f"the test timed out on the original after {timeout:g} s")
    cannot_run = {127: ("not found",), 126: ("permission denied", "cannot execute")}
    markers = cannot_run.get(outcome.exit_code or 0)
    lowered = output.lower()
    if markers is not None and any(marker in lowered for marker in markers):
        word = first_word(spec.command)
        hint = ""
        if word is not None and "/" not in word and Path(word).is_file():
            hint = f" (to run the file in the current directory, write ./{word})"
        raise UserError(
            f"the test command could not run (exit {outcome.exit_code}): {_last_line(output)}{hint}"
        )


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
