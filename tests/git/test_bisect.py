"""Bisect: the pure search (exhaustive and property tests) and the adapter on a real history."""

from __future__ import annotations

import math
import subprocess
from pathlib import Path

import pygit2
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gitreduce.core.errors import UserError
from gitreduce.core.outcome import Verdict
from gitreduce.git.bisect import BisectAborted, bisect_path, first_bad

SIGNATURE = pygit2.Signature("Ada Tester", "ada@example.com", 1_700_000_000, 0)


def oracle(first: int, skipped: frozenset[int] = frozenset()):
    calls: list[int] = []

    def classify(index: int) -> Verdict:
        calls.append(index)
        if index in skipped:
            return Verdict.SKIP
        return Verdict.BAD if index >= first else Verdict.GOOD

    return classify, calls


def test_every_first_bad_in_every_length_within_log2_tests():
    for length in range(2, 70):
        bound = math.ceil(math.log2(length - 1)) if length > 2 else 0
        for first in range(1, length):
            classify, calls = oracle(first)
            result = first_bad(range(length), classify)
            assert result.exact and result.first_bad == first and result.good == first - 1
            assert result.tests == len(calls) <= bound, (length, first)
            assert 0 not in calls and length - 1 not in calls  # the ends are known


@given(
    length=st.integers(3, 80),
    data=st.data(),
)
def test_skips_are_stepped_around(length, data):
    first = data.draw(st.integers(1, length - 1))
    skipped = frozenset(data.draw(st.sets(st.integers(1, length - 2), max_size=length)))
    classify, calls = oracle(first, skipped)
    result = first_bad(range(length), classify)
    assert result.good < first <= result.bad
    assert all(index in skipped for index in range(result.good + 1, result.bad))
    assert result.skipped == tuple(range(result.good + 1, result.bad))
    assert len(calls) == len(set(calls)) == result.tests  # nothing tested twice
    if first not in skipped:
        assert result.bad == first  # only a skipped first bad can stay hidden
    if result.exact:
        assert result.first_bad == first and result.suspects == (first,)
    else:
        assert result.first_bad is None and first in result.suspects


def test_timeout_counts_as_untestable_and_broken_aborts():
    result = first_bad(range(10), lambda i: Verdict.TIMEOUT if i == 4 else Verdict.BAD)
    assert result.exact and result.first_bad == 1
    with pytest.raises(BisectAborted) as excinfo:
        first_bad(range(10), lambda i: Verdict.BROKEN)
    assert excinfo.value.index in range(1, 9)


def test_needs_two_versions():
    with pytest.raises(ValueError):
        first_bad([1], lambda v: Verdict.BAD)


# --- the adapter, on a real repository ------------------------------------------------------

FIRST_BAD = 37
SKIP_AT = 32  # the middle of 0..64: the very first version bisect would test

CHECK = """#!/bin/sh
grep -q SKIPME "$1" && exit 125
grep -q BROKEN "$1" && exit 129
grep -q BUG "$1" && exit 1
exit 0
"""


def build_history(
    path: Path, marks: dict[int, str], delete_at: int | None = None
) -> tuple[pygit2.Repository, list[pygit2.Oid]]:
    """GOOD (commit 0) and 64 commits that each change prog.c; BUG from commit FIRST_BAD on.

    Every 9th commit also touches an unrelated file, so trees differ beyond prog.c.
    """
    repo = pygit2.init_repository(str(path), initial_head="main")
    ids: list[pygit2.Oid] = []
    parents: list[pygit2.Oid] = []
    for number in range(65):
        lines = [f"int step = {number};"]
        if number >= FIRST_BAD:
            lines.append("int BUG;")
        if number in marks:
            lines.append(f"/* {marks[number]} */")
        builder = repo.TreeBuilder()
        if number != delete_at:
            blob = repo.create_blob(("\n".join(lines) + "\n").encode())
            builder.insert("prog.c", blob, pygit2.enums.FileMode.BLOB)
        notes = repo.create_blob(f"notes {number // 9}\n".encode())
        builder.insert("NOTES", notes, pygit2.enums.FileMode.BLOB)
        message = f"step {number}\n"
        commit = repo.create_commit(
            "refs/heads/main", SIGNATURE, SIGNATURE, message, builder.write(), parents
        )
        ids.append(commit)
        parents = [commit]
    return repo, ids


class ScriptOracle:
    """The test as a real process, git-bisect-run convention; counts its runs."""

    def __init__(self, directory: Path) -> None:
        self.script = directory / "check.sh"
        self.script.write_text(CHECK)
        self.script.chmod(0o755)
        self.candidate = directory / "prog.c"
        self.runs = 0

    def __call__(self, content: bytes) -> Verdict:
        self.runs += 1
        self.candidate.write_bytes(content)
        code = subprocess.run([str(self.script), str(self.candidate)], check=False).returncode
        if code == 0:
            return Verdict.GOOD
        if code == 125:
            return Verdict.SKIP
        return Verdict.BAD if 1 <= code <= 127 else Verdict.BROKEN


def test_64_commit_history_finds_the_first_bad_commit_in_at_most_8_tests(tmp_path):
    repo, ids = build_history(tmp_path / "repo", {})
    test = ScriptOracle(tmp_path)
    lines: list[str] = []
    found = bisect_path(repo, str(ids[0]), "main", "prog.c", test, echo=lines.append)
    assert found.first_bad_commit is not None
    assert found.first_bad_commit.id == ids[FIRST_BAD]
    assert found.seed_commit.id == ids[FIRST_BAD - 1]
    assert found.variant_commit.id == ids[FIRST_BAD]
    assert test.runs == found.result.tests == len(lines) <= 8
    assert found.report()[0] == f"{ids[FIRST_BAD]} is the first bad commit"
    assert found.report()[1] == f"    step {FIRST_BAD}"
    print(f"\nbisect over 64 commits: {test.runs} tests")


def test_a_skipped_commit_in_the_middle_is_stepped_around(tmp_path):
    repo, ids = build_history(tmp_path / "repo", {SKIP_AT: "SKIPME"})
    test = ScriptOracle(tmp_path)
    lines: list[str] = []
    found = bisect_path(repo, str(ids[0]), str(ids[64]), "prog.c", test, echo=lines.append)
    assert found.first_bad_commit is not None and found.first_bad_commit.id == ids[FIRST_BAD]
    assert test.runs <= 8
    assert any(line.startswith(str(ids[SKIP_AT])[:12] + " skip") for line in lines)


def test_a_skipped_first_bad_commit_leaves_git_s_ambiguity_message(tmp_path):
    repo, ids = build_history(tmp_path / "repo", {FIRST_BAD: "SKIPME"})
    found = bisect_path(repo, str(ids[0]), "main", "prog.c", ScriptOracle(tmp_path))
    assert found.first_bad_commit is None
    assert found.seed_commit.id == ids[FIRST_BAD - 1]  # still a good/bad pair to reduce
    assert found.variant_commit.id == ids[FIRST_BAD + 1]
    assert found.report() == [
        "There are only 'skip'ped commits left to test.",
        "The first bad commit could be any of:",
        str(ids[FIRST_BAD]),
        str(ids[FIRST_BAD + 1]),
        "We cannot bisect more!",
    ]


def test_a_commit_without_the_file_is_skipped_without_running_the_test(tmp_path):
    repo, ids = build_history(tmp_path / "repo", {}, delete_at=SKIP_AT)
    test = ScriptOracle(tmp_path)
    found = bisect_path(repo, str(ids[0]), "main", "prog.c", test)
    assert found.first_bad_commit is not None and found.first_bad_commit.id == ids[FIRST_BAD]
    assert SKIP_AT in dict(found.result.log)
    assert test.runs == found.result.tests - 1


def test_a_broken_test_stops_the_bisection_with_one_line(tmp_path):
    repo, ids = build_history(tmp_path / "repo", {SKIP_AT: "BROKEN"})
    with pytest.raises(UserError) as excinfo:
        bisect_path(repo, str(ids[0]), "main", "prog.c", ScriptOracle(tmp_path))
    message = str(excinfo.value)
    assert "\n" not in message and "test itself broke" in message and str(ids[SKIP_AT]) in message


def test_one_changing_commit_needs_no_test(tmp_path):
    repo, ids = build_history(tmp_path / "repo", {})
    test = ScriptOracle(tmp_path)
    found = bisect_path(repo, str(ids[FIRST_BAD - 1]), str(ids[FIRST_BAD]), "prog.c", test)
    assert test.runs == 0
    assert found.first_bad_commit is not None and found.first_bad_commit.id == ids[FIRST_BAD]
