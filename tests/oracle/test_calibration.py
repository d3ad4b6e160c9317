"""Calibration against real shells: derived timeouts, and tests that cannot serve as oracles."""

import time
from dataclasses import replace

import pytest
from support import script

from gitreduce.core.errors import UserError
from gitreduce.core.outcome import Verdict
from gitreduce.oracle.calibration import calibrate
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


def test_calibrate_detects_a_flaky_test(tmp_path):
    counter = tmp_path / "counter"
    test = script(
        tmp_path / "t.sh",
        f'n=$(cat "{counter}" 2>/dev/null || echo 0); echo $((n + 1)) > "{counter}"; '
        "exit $((n % 2))\n",
    )
    with pytest.raises(UserError, match=r"flaky test: .* classified good then bad; make the test"):
        calibrate(TestSpec(str(test), "v.c"), b"", Verdict.BAD)


def test_calibrate_detects_a_flaky_signature(tmp_path):
    counter = tmp_path / "counter"
    command = (
        f'n=$(cat "{counter}" 2>/dev/null || echo 0); echo $((n + 1)) > "{counter}"; '
        'echo "error: attempt $n"; exit 1'
    )
    with pytest.raises(UserError, match=r"flaky test: .*'exit 1: error: attempt 0'"):
        calibrate(TestSpec(command, "v.c"), b"", Verdict.BAD)
    counter.unlink()
    calibrate(TestSpec(command, "v.c", any_failure=True), b"", Verdict.BAD)


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
