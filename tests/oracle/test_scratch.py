"""Scratch roots: owned by a live process through a lock, removed once their owner is dead.

Owners are real processes: a Python child that makes a root and waits, then is
killed with SIGKILL, which is what leaves a root behind.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from gitreduce.oracle.scratch import ScratchRoot, remove_stale

_OWNER = """
import sys
from pathlib import Path
from gitreduce.oracle.scratch import ScratchRoot
root = ScratchRoot(Path(sys.argv[1]))
(root.path / "0" / "locked").mkdir(parents=True)
(root.path / "0" / "locked" / "file").write_text("left by a test")
(root.path / "0" / "locked").chmod(0o500)  # what a careless test may do
print(root.path, flush=True)
sys.stdin.read()
"""


def owner(parent: Path) -> tuple[subprocess.Popen[str], Path]:
    """A live process owning a fresh scratch root under `parent` (with a read-only corner)."""
    process = subprocess.Popen(
        [sys.executable, "-c", _OWNER, str(parent)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    return process, Path(process.stdout.readline().strip())


def killed(process: subprocess.Popen[str]) -> None:
    process.kill()
    process.communicate()


def test_a_root_whose_owner_died_is_removed_and_live_ones_are_kept(tmp_path):
    dead, dead_root = owner(tmp_path)
    live, live_root = owner(tmp_path)
    mine = ScratchRoot(tmp_path)
    try:
        killed(dead)
        assert remove_stale(tmp_path) == [dead_root]
        assert not dead_root.exists()
        assert live_root.is_dir() and mine.path.is_dir()
        assert remove_stale(tmp_path) == []
    finally:
        killed(live)
        mine.remove()
    assert remove_stale(tmp_path) == [live_root]
    assert list(tmp_path.iterdir()) == []


def test_a_root_without_an_owner_record_is_left_alone(tmp_path):
    """An older gitreduce's, or another program's: nothing says it is abandoned."""
    (tmp_path / "gitreduce-older").mkdir()
    (tmp_path / "gitreduce-older" / "0").mkdir()
    (tmp_path / "unrelated").mkdir()
    assert remove_stale(tmp_path) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gitreduce-older", "unrelated"]


def test_the_owner_record_is_in_place_and_locked_from_the_start(tmp_path):
    root = ScratchRoot(tmp_path)
    try:
        assert [p.name for p in root.path.iterdir()] == [".owner"]
        assert remove_stale(tmp_path) == []  # our own lock holds
    finally:
        root.remove()
        root.remove()  # idempotent
    assert list(tmp_path.iterdir()) == []
