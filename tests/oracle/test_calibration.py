"""Calibration against real shells: derived timeouts, and tests that cannot serve as oracles."""

import time
from dataclasses import replace
from pathlib import Path

import pytest
from support import script

from gitreduce.core.errors import UserError
from gitreduce.core.outcome import Verdict
from gitreduce.oracle.calibration import MAX_RUNS, calibrate
from gitreduce.oracle.spec import TestSpec


def test_calibrate_derives_timeout_and_returns_the_signature():
    spec = TestSpec("echo 'v.c:1:1: error: boom' >&2; exit 1", "v.c")
    calibrated, outcome = calibrate(spec, b"", Verdict.BAD)
    assert calibrated == replace(spec, timeout=1.0)
    assert outcome.verdict is Verdict.BAD and outcome.signature == "exit 1: error: boom"


def test_calibrate_scales_the_timeout_with_the_slower_run():
    calibrated, _ = calibrate(TestSpec("sleep 0.15", "v.c"), b"", Verdict.GOOD, jobs=2)
    assert calibrated.timeout is not None and 2.0 <= calibrated.timeout <= 10.0
    assert calibrated.timeout == int(calibrated.timeout)


def test_calibrate_keeps_a_given_timeout():
    calibrated, outcome = calibrate(TestSpec("exit 0", "v.c", timeout=7.5), b"", Verdict.GOOD)
    assert calibrated.timeout == 7.5 and outcome.verdict is Verdict.GOOD


def test_calibrate_accepts_interestingness_tests():
    spec = TestSpec("grep -q crash {}", "v.c", polarity="interesting")
    assert calibrate(spec, b"crash here", Verdict.BAD)[1].signature == "interesting"
    with pytest.raises(UserError, match=r"not interesting under the test \(exit 1\)$"):
        calibrate(spec, b"fine", Verdict.BAD)


def test_calibrate_rejects_a_non_executable_script(tmp_path):
    test = script(tmp_path / "t.sh", "exit 1\n", executable=False)
    with pytest.raises(UserError, match=r"test script .*t\.sh is not executable \(chmod \+x"):
        calibrate(TestSpec(f"{test} {{}}", "v.c"), b"", Verdict.BAD)


@pytest.mark.parametrize("command", ["./no-such-test.sh {}", "no-such-command-xyz {}"])
def test_calibrate_reports_a_missing_command(command):
    with pytest.raises(UserError, match=r"could not run \(exit 127\): .*not found"):
        calibrate(TestSpec(command, "v.c"), b"", Verdict.BAD)


def test_calibrate_hints_at_dot_slash(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    script(tmp_path / "t.sh", "exit 1\n")
    with pytest.raises(UserError, match=r"write \./t\.sh"):
        calibrate(TestSpec("t.sh {}", "v.c"), b"", Verdict.BAD)


def counting(tmp_path: Path, body: str) -> tuple[str, Path]:
    """A test script that knows how often it ran before (`$n`, from 0; two runs at once may
    both see the same) and logs each run in a file whose lines `runs` counts."""
    counter = tmp_path / "counter"
    test = script(
        tmp_path / "t.sh",
        f'echo run >> "{tmp_path / "runs.log"}"\n'
        f'n=$(cat "{counter}" 2>/dev/null || echo 0); echo $((n + 1)) > "{counter}"\n{body}\n',
    )
    return str(test), counter


def runs(counter: Path) -> int:
    return len((counter.parent / "runs.log").read_text().splitlines())


def test_calibrate_detects_a_flaky_test(tmp_path):
    command, _ = counting(tmp_path, "exit $((n % 2))")
    with pytest.raises(
        UserError,
        match=r"^the test is flaky: it classified the original input good, bad in 2 runs; make "
        r"the test deterministic, or pass --repeat N to judge every candidate by the majority",
    ):
        calibrate(TestSpec(command, "v.c"), b"", Verdict.BAD)


@pytest.mark.parametrize("jobs", [1, 2])
def test_calibrate_runs_a_cheap_test_five_times_and_catches_a_late_disagreement(tmp_path, jobs):
    """Two agreeing runs are no proof: a test that fails now and then is caught later."""
    command, counter = counting(tmp_path, "[ $n -lt 2 ] && exit 1; exit 0")
    # Two at a time, runs may read the same count and finish in either order: the
    # verdicts' order varies, but the first two agree and a good one follows.
    with pytest.raises(
        UserError, match=r"original input bad, bad, (bad|good)(, (bad|good))* in [3-5] runs"
    ) as caught:
        calibrate(TestSpec(command, "v.c"), b"", Verdict.BAD, jobs=jobs)
    assert "good" in str(caught.value)
    (tmp_path / "steady").mkdir()
    steady, counter = counting(tmp_path / "steady", "exit 1")
    calibrate(TestSpec(steady, "v.c"), b"", Verdict.BAD, jobs=jobs)
    assert runs(counter) == MAX_RUNS


def test_calibrate_runs_a_slow_test_twice_only(tmp_path):
    command, counter = counting(tmp_path, "sleep 1.1; exit 1")
    calibrated, _ = calibrate(TestSpec(command, "v.c"), b"", Verdict.BAD)
    assert runs(counter) == 2
    assert calibrated.timeout == 12.0


def test_calibrate_detects_a_flaky_signature(tmp_path):
    command, counter = counting(tmp_path, 'echo "error: attempt $n"; exit 1')
    with pytest.raises(
        UserError,
        match=r"flaky: .*bad \('exit 1: error: attempt 0'\), bad \('exit 1: error: attempt 1'\) "
        r"in 2 runs; .*pass a signature pattern or --any-failure, or pass --repeat N",
    ):
        calibrate(TestSpec(command, "v.c"), b"", Verdict.BAD)
    counter.unlink()
    calibrate(TestSpec(command, "v.c", any_failure=True), b"", Verdict.BAD)


def test_repeat_classifies_the_original_by_the_majority(tmp_path):
    """--repeat 5: bad in four runs of five is bad; runs stop once three agree."""
    command, counter = counting(tmp_path, "echo 'error: boom' >&2; [ $n -eq 1 ] && exit 0; exit 1")
    calibrated, outcome = calibrate(TestSpec(command, "v.c", repeat=5), b"", Verdict.BAD)
    assert outcome.verdict is Verdict.BAD and outcome.signature == "exit 1: error: boom"
    assert runs(counter) == 4  # bad, good, bad, bad
    assert calibrated.repeat == 5
    counter.unlink()
    with pytest.raises(UserError, match=r"original input is not good .*\(exit 1 in 3 runs\)"):
        calibrate(TestSpec(command, "v.c", repeat=3), b"", Verdict.GOOD)


def test_repeat_refuses_a_test_without_a_majority(tmp_path):
    command, _ = counting(tmp_path, "exit $((n % 2))")
    with pytest.raises(
        UserError,
        match=r"^the test is flaky even for --repeat 4: it classified the original input good, "
        r"bad, good, bad, no verdict in a majority of 4 runs$",
    ):
        calibrate(TestSpec(command, "v.c", repeat=4), b"", Verdict.BAD)


@pytest.mark.parametrize(
    ("command", "expect", "message"),
    [
        (
            "echo all fine; exit 0",
            Verdict.BAD,
            r"^the original input is not bad .*\(exit 0\): all fine$",
        ),
        ("echo nope; exit 125", Verdict.BAD, r"not bad under the test \(exit 125\): nope"),
        (
            "echo 'error: x' >&2; exit 1",
            Verdict.GOOD,
            r"not good under the test \(exit 1\): error: x",
        ),
        ("kill -9 $$", Verdict.GOOD, r"not good under the test \(killed by SIGKILL\)$"),
    ],
)
def test_calibrate_rejects_the_wrong_verdict(command, expect, message):
    with pytest.raises(UserError, match=message):
        calibrate(TestSpec(command, "v.c"), b"", expect)


def test_calibrate_rejects_a_signature_regex_that_matches_nothing():
    spec = TestSpec("echo 'error: x'; exit 1", "v.c", signature_regex="internal compiler error")
    with pytest.raises(UserError, match="matches nothing"):
        calibrate(spec, b"", Verdict.BAD)


def test_calibrate_reports_a_hanging_test():
    start = time.monotonic()
    with pytest.raises(UserError, match=r"^the test timed out on the original after 0\.3 s$"):
        calibrate(TestSpec("sleep 10", "v.c", timeout=0.3), b"", Verdict.BAD)
    assert time.monotonic() - start < 2
