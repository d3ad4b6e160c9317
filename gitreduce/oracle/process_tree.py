"""Killing a test with every process it started, including those in process groups of their own.

Each test runs in a session and process group of its own, and killing that
group was thought to take its children along. It does not take a command
run by coreutils' `timeout`, the way test scripts bound a compiler's time
(`timeout 10 gcc ...`): `timeout` puts itself and its command into a new
group of the same session. A test stopped because an earlier candidate won
left its compiler running to the end, on a processor the next test needed;
one stopped at its timeout left a compiler that hangs running until
`timeout`'s own limit. So the groups are read from the processes below the
test (Linux's `/proc/PID/task/TID/children`) before any is killed, while
they are still its descendants: once the test's shell is dead they belong
to init, and nothing ties them to it any more.
"""

from __future__ import annotations

import contextlib
import os
import signal


def groups_below(pid: int) -> set[int]:
    """The process groups of `pid` and of every process below it in its session, as far
    as /proc shows them (none where it does not: another system, a process already gone).

    Only groups of `pid`'s session: a process below it that ended between the read of
    its parent's children and the read of its own entry may have left its pid to an
    unrelated process, whose group is never one to kill (and a group of the session
    holds only processes of the session).
    """
    groups: set[int] = set()
    session = None
    pending, seen = [pid], set()
    while pending:
        process = pending.pop()
        if process in seen:
            continue
        seen.add(process)
        try:
            # after the name: state, parent, process group, session
            fields = _read(f"/proc/{process}/stat").rpartition(b")")[2].split()
            if session is None:
                session = fields[3]
            elif fields[3] != session:
                continue
            groups.add(int(fields[2]))
            tasks = os.listdir(f"/proc/{process}/task")
        except OSError:
            continue
        for task in tasks:
            with contextlib.suppress(OSError):
                pending.extend(map(int, _read(f"/proc/{process}/task/{task}/children").split()))
    return groups


def kill_tree(pid: int) -> None:
    """SIGKILL the process group `pid` leads and every group a process below it is in,
    except this process's own (a test never is in it: it runs in a session of its own,
    and a process cannot join a group of another session). For a test still running: one
    that exited has no process below it any more (`kill_group` does)."""
    own = os.getpgrp()
    for group in groups_below(pid) | {pid}:
        if group != own:
            kill_group(group)


def kill_group(group: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, signal.SIGKILL)


def _read(path: str) -> bytes:
    """A /proc file, without the buffered file object's cost (a test's tree is read at
    every kill); whole, to its end: a list of hundreds of children is longer than one
    read gives, and cut there its last pid would be another's."""
    descriptor = os.open(path, os.O_RDONLY)
    try:
        chunks = [os.read(descriptor, 4096)]
        while chunks[-1]:
            chunks.append(os.read(descriptor, 4096))
        return b"".join(chunks)
    finally:
        os.close(descriptor)
