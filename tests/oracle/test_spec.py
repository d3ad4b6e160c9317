"""The test spec: its fingerprint follows the rules and the test script; interestingness."""

from dataclasses import replace

from support import script

from gitreduce.core.outcome import Outcome, Verdict
from gitreduce.oracle.spec import TestSpec


def test_fingerprint_follows_the_test_script_and_the_rules(tmp_path):
    test = script(tmp_path / "t.sh", "exit 1\n")
    spec = TestSpec(f"{test} {{}}", "v.c", timeout=2.0)
    before = spec.fingerprint()
    assert spec.fingerprint() == before
    assert len(before) == 40
    for changed in (
        replace(spec, polarity="interesting"),
        replace(spec, timeout=3.0),
        replace(spec, signature_regex="x"),
        replace(spec, any_failure=True),
    ):
        assert changed.fingerprint() != before
    script(test, "exit 2\n")
    assert spec.fingerprint() != before


def test_is_interesting_requires_the_same_failure():
    spec = TestSpec("true", "v.c")
    original = Outcome(Verdict.BAD, 1, 0.1, "exit 1: internal compiler error: in f, at a.cc:1")
    same = Outcome(Verdict.BAD, 1, 0.2, original.signature)
    other = Outcome(Verdict.BAD, 1, 0.2, "exit 1: error: expected ';'")
    skip = Outcome(Verdict.SKIP, 125, 0.2)
    assert spec.is_interesting(original, same)
    assert not spec.is_interesting(original, other)
    assert not spec.is_interesting(original, skip)
    assert replace(spec, any_failure=True).is_interesting(original, other)
    assert not replace(spec, any_failure=True).is_interesting(original, skip)
