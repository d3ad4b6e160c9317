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


# A test started but not yet told to the reaper (the owner died between the two: the runner
# tells it once the test's process exists), beside a process that only shares its habits.
_UNTOLD = """
import os, subprocess, sys, time
from gitreduce.oracle.reaper import reaper
inside, outside, root = sys.argv[1], sys.argv[2], sys.argv[3]
slot = os.path.join(root, "slot-0")
os.makedirs(slot)
reaper().watch_root(root)
subprocess.Popen(["sleep", "1000", inside], cwd=slot, start_new_session=True)
subprocess.Popen(["sleep", "1000", outside], cwd="/", start_new_session=True)
time.sleep(1000)
"""


def test_kill_9_of_the_owner_kills_a_test_it_had_not_told_the_reaper_of(tmp_path):
    """Every test leads a session of its own and works in a slot of a scratch root the
    reaper knows: that finds it too. A process working elsewhere is left alone."""
    inside, outside = sleep_marker(), sleep_marker()
    root = tmp_path / "gitreduce-root"
    owner = subprocess.Popen([sys.executable, "-c", _UNTOLD, inside, outside, str(root)])
    try:
        assert eventually(lambda: sleeping(inside) and sleeping(outside), 30), "never started"
        owner.kill()
        owner.wait()
        assert eventually(lambda: not sleeping(inside)), "the untold test outlived its owner"
        assert eventually(lambda: not root.exists())
        assert sleeping(outside), "a process working outside the scratch root was killed"
    finally:
        owner.kill()
        owner.wait()
        for pid in sleeping(inside) + sleeping(outside):
            os.kill(pid, signal.SIGKILL)
