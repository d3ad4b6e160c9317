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
        replace(spec, file_set=True),
    ):
        assert changed.fingerprint() != before
    script(test, "exit 2\n")
    assert spec.fingerprint() != before


def test_a_single_file_keeps_the_fingerprint_it_had_before_file_sets():
    """Verdicts cached by earlier versions stay valid: only a set adds to the record."""
    assert TestSpec("true {}", "v.c").fingerprint() == "1528e337b26f8cf326e22e7b8836b692cbcb13fb"


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
