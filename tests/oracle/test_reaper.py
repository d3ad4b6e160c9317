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
import time
import uuid
from pathlib import Path

_OWNER = """
import sys
from pathlib import Path
from gitreduce.oracle.runner import Oracle
from gitreduce.oracle.spec import TestSpec
marker, parent = sys.argv[1], Path(sys.argv[2])
# A shell whose child sleeps: the child is in the test's process group, not its pid.
spec = TestSpec(f"sleep 1000 {marker} & wait", "v.c", timeout=2000)
with Oracle(spec, jobs=2, scratch_root=parent) as oracle:
    oracle.run(b"")
"""


def with_marker(marker: str) -> list[int]:
    """Live `sleep 1000 MARKER` processes."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "cmdline").read_bytes() == (
                b"sleep\0001000\0" + marker.encode() + b"\0"
            ):
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
                if state != "Z":
                    found.append(int(entry.name))
        except OSError:
            continue
    return found


def within(seconds: float, condition: object) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def test_kill_9_of_the_owner_kills_its_tests_and_removes_its_scratch_root(tmp_path):
    marker = f"0.{uuid.uuid4().int % 10**12:012d}1"  # GNU sleep adds it up: a marked sleep
    owner = subprocess.Popen([sys.executable, "-c", _OWNER, marker, str(tmp_path)])
    try:
        assert within(30, lambda: with_marker(marker)), "the test never started"
        [root] = tmp_path.iterdir()
        assert root.name.startswith("gitreduce-")
        owner.kill()
        owner.wait()
        assert within(5, lambda: not with_marker(marker)), "the test outlived its owner"
        assert within(5, lambda: not list(tmp_path.iterdir())), list(tmp_path.iterdir())
    finally:
        owner.kill()
        owner.wait()
        for pid in with_marker(marker):
            os.kill(pid, signal.SIGKILL)
