"""The groups a test's processes are in, read from /proc before they are killed."""

import os
import signal
import subprocess
import time

import pytest
from support import eventually

from gitreduce.oracle.process_tree import _read, groups_below, kill_tree

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="Linux /proc")


def started(script: str) -> subprocess.Popen[bytes]:
    """`script` run by sh in a session of its own, as the oracle runs a test."""
    return subprocess.Popen(["sh", "-c", script], start_new_session=True)


def group_of(pid: int) -> int:
    return os.getpgid(pid)


def children(pid: int) -> list[int]:
    found: list[int] = []
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children") as listing:
            found += [int(child) for child in listing.read().split()]
    return found


def test_the_groups_below_a_test_include_timeouts_own_and_not_another_sessions():
    """`timeout` makes a group of its own in the test's session: it is the test's to kill.
    A command that made a session of its own (`setsid`) is not, nor is anything that took
    the pid of a process of the test that ended meanwhile."""
    test = started("setsid sleep 30 & timeout 30 sleep 30; wait")
    escaped: list[int] = []
    try:
        assert eventually(lambda: len(children(test.pid)) == 2)
        below = children(test.pid)
        assert eventually(lambda: len({group_of(pid) for pid in below}) == 2)
        time.sleep(0.05)  # setsid's child: in a session of its own by now
        groups = groups_below(test.pid)
        timed = [pid for pid in below if group_of(pid) != test.pid and os.getsid(pid) == test.pid]
        escaped += [pid for pid in below if os.getsid(pid) != test.pid]
        assert len(timed) == 1 and len(escaped) == 1
        assert groups == {test.pid, group_of(timed[0])}
    finally:
        kill_tree(test.pid)
        for pid in escaped:
            os.killpg(group_of(pid), signal.SIGKILL)
        test.wait()


def test_a_list_of_children_longer_than_one_read_is_read_whole(tmp_path):
    """Hundreds of children make a /proc list longer than 4 KiB: cut after the first read,
    its last pid was a prefix of the real one, another process's."""
    listing = tmp_path / "children"
    listing.write_bytes(b" ".join(str(100000 + n).encode() for n in range(1500)))
    assert _read(str(listing)) == listing.read_bytes()
