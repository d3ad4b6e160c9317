"""A slot's candidate file between runs, against real shells: rewritten in place only where
the next test cannot tell it from a fresh file."""

import os
import time
from pathlib import Path

import pytest

from gitreduce.core.outcome import Verdict
from gitreduce.oracle.runner import Oracle
from gitreduce.oracle.spec import TestSpec

# Good when the candidate holds exactly what the test is told to expect: the expected
# text is the candidate's first line, so every run checks its own content.
HOLDS_ITSELF = 'test "$(cat {})" = "$(head -n 1 {})"'


def test_an_untouched_candidate_keeps_its_file_and_never_shows_an_older_tail(tmp_path):
    births = tmp_path / "births"  # a new file has a new birth time, even on a reused inode
    command = f'stat -c %w {{}} >> {births}; test "$(cat {{}})" = "$(head -n 1 {{}})"'
    with Oracle(TestSpec(command, "src/v.c", timeout=10), jobs=1) as oracle:
        texts = [b"a much longer first candidate", b"short", b"", b"grown again, longer"]
        for text in texts:
            assert oracle.run(text).verdict is Verdict.GOOD
            time.sleep(0.01)
    seen = births.read_text().splitlines()
    if set(seen) <= {"0", "-"}:
        pytest.skip("this file system does not report birth times")
    assert len(seen) == 4 and len(set(seen)) == 1


def test_a_candidate_the_test_linked_elsewhere_keeps_its_text_there(tmp_path):
    saved = tmp_path / "saved"
    saved.mkdir()
    command = f'ln {{}} {saved}/"$(cat {{}})"; exit 0'
    with Oracle(TestSpec(command, "v.c", timeout=10), jobs=1) as oracle:
        for text in (b"one", b"two", b"three"):
            oracle.run(text)
    assert {path.name: path.read_text() for path in saved.iterdir()} == {
        "one": "one",
        "two": "two",
        "three": "three",
    }


def test_a_mode_the_test_changed_is_not_seen_by_the_next_run(tmp_path):
    modes = tmp_path / "modes"
    command = f"stat -c %a {{}} >> {modes}; chmod 755 {{}}"
    with Oracle(TestSpec(command, "v.c", timeout=10), jobs=1) as oracle:
        for text in (b"one", b"two", b"three"):
            oracle.run(text)
    first, *later = modes.read_text().split()
    assert first != "755" and later == [first, first]


def test_a_candidate_made_read_only_is_replaced(tmp_path):
    command = 'test "$(cat {})" = "$(head -n 1 {})" && chmod 0 {} && chmod 0 .'
    with Oracle(TestSpec(command, "v.c", timeout=10), jobs=1) as oracle:
        assert [oracle.run(t).verdict for t in (b"a", b"b", b"c")] == [Verdict.GOOD] * 3


def test_a_candidate_turned_into_a_link_never_writes_through_it(tmp_path):
    outside = tmp_path / "outside.c"
    outside.write_text("precious")
    command = f'test "$(cat {{}})" = "$(head -n 1 {{}})" || exit 1; rm {{}}; ln -s {outside} {{}}'
    with Oracle(TestSpec(command, "v.c", timeout=10), jobs=1) as oracle:
        assert [oracle.run(t).verdict for t in (b"a", b"b", b"c")] == [Verdict.GOOD] * 3
    assert outside.read_text() == "precious"


def test_a_directory_on_the_way_turned_into_a_link_never_writes_through_it(tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "v.c").write_text("precious")
    command = (
        f'test "$(cat {{}})" = "$(head -n 1 {{}})" || exit 1; rm -r src && ln -s {outside} src'
    )
    with Oracle(TestSpec(command, "src/v.c", timeout=10), jobs=1) as oracle:
        assert [oracle.run(t).verdict for t in (b"a", b"b", b"c")] == [Verdict.GOOD] * 3
    assert (outside / "v.c").read_text() == "precious"
    assert sorted(os.listdir(outside)) == ["v.c"]


def test_a_candidate_replaced_by_a_directory_is_a_file_again(tmp_path):
    command = f"{HOLDS_ITSELF} || exit 1; rm {{}} && mkdir {{}} && touch {{}}/inside"
    with Oracle(TestSpec(command, "v.c", timeout=10), jobs=1) as oracle:
        assert [oracle.run(t).verdict for t in (b"a", b"b", b"c")] == [Verdict.GOOD] * 3


def test_leftovers_beside_the_candidate_go_and_its_directories_stay_directories(tmp_path):
    command = (
        f"{HOLDS_ITSELF} || exit 1; "
        'test -z "$(ls -A . | grep -v "^v.c$")" || exit 1; '
        'test -z "$(ls -A .. | grep -v "^src$")" || exit 1; '
        "touch junk ../junk && mkdir -p ../more/deep"
    )
    spec = TestSpec(f"cd src && {{ {command}; }}".replace("{}", "v.c"), "src/v.c", timeout=10)
    with Oracle(spec, jobs=1) as oracle:
        assert [oracle.run(t).verdict for t in (b"a", b"b", b"c")] == [Verdict.GOOD] * 3


def test_the_slot_is_left_to_the_scratch_root_at_close(tmp_path):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    with Oracle(TestSpec(HOLDS_ITSELF, "a/b/v.c", timeout=10), jobs=2, scratch_root=scratch) as o:
        assert o.run(b"x").verdict is Verdict.GOOD
    assert list(Path(scratch).iterdir()) == []
