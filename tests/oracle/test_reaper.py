"""The reaper: when its process is killed outright, the tests it registered die with their
children, and the scratch roots it registered go.

The owner is a real Python process running an oracle whose test sleeps; it is
killed with SIGKILL, so nothing of its own cleanup runs.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from support import eventually, sleep_marker, sleeping

_OWNER = """
import sys
from pathlib import Path
from gitreduce.oracle.runner import Oracle
from gitreduce.oracle.spec import TestSpec
marker, parent, command = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
spec = TestSpec(command.format(marker=marker), "v.c", timeout=2000)
with Oracle(spec, jobs=2, scratch_root=parent) as oracle:
    oracle.run(b"")
"""
# A shell whose child sleeps: the child is in the test's process group, not its pid.
_BACKGROUND_SLEEP = "sleep 1000 {marker} & wait"
# coreutils' `timeout` run by the test's shell: the sleep is in a group of `timeout`'s own
_TIMED_SLEEP = "cd . && timeout 2000 sleep 1000 {marker}"


def test_kill_9_of_the_owner_kills_its_tests_and_removes_its_scratch_root(tmp_path):
    _kill_9_of_the_owner(tmp_path, _BACKGROUND_SLEEP)


def test_kill_9_of_the_owner_kills_what_its_tests_run_in_groups_of_their_own(tmp_path):
    """The test's group alone was killed: the command `timeout` ran slept on."""
    _kill_9_of_the_owner(tmp_path, _TIMED_SLEEP)


def _kill_9_of_the_owner(tmp_path, command):
    marker = sleep_marker()
    owner = subprocess.Popen([sys.executable, "-c", _OWNER, marker, str(tmp_path), command])
    try:
        assert eventually(lambda: sleeping(marker), 30), "the test never started"
        [root] = tmp_path.iterdir()
        assert root.name.startswith("gitreduce-")
        owner.kill()
        owner.wait()
        assert eventually(lambda: not sleeping(marker)), "the test outlived its owner"
        assert eventually(lambda: not list(tmp_path.iterdir())), list(tmp_path.iterdir())
    finally:
        owner.kill()
        owner.wait()
        for pid in sleeping(marker):
            os.kill(pid, signal.SIGKILL)
