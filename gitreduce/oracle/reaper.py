"""The reaper: kills the tests, and removes the scratch roots, of a run that died uncleanly.

Tests run in process groups of their own (a timeout must kill a test's
children too), so nothing else takes them down with gitreduce: a terminal's
Ctrl-C or a `kill -9` of gitreduce reaches none of them. One small process per
gitreduce process, started with the first oracle, holds the read end of a
pipe whose only write end gitreduce holds. gitreduce tells it each test's
process group as the test starts and before the test is reaped, and each
scratch root while it exists. When gitreduce ends, however it ends, the
kernel closes the write end; the reaper reads end-of-file, kills the groups
still registered with SIGKILL, and every process of their sessions (a command
that coreutils' `timeout` runs is in a group of its own there), and removes
the roots still registered. A test gitreduce started but had not yet told
(it died between the two, which a busy interpreter can stretch to
milliseconds, time enough for the test's shell to start its children) is
found too: every test leads a session of its own and works in a slot of a
registered root. After a clean end both lists are empty. Groups
registered as graceful (a triage's child reductions, which keep their best
result and verdicts on a signal) get SIGTERM instead.

Why not `prctl(PR_SET_PDEATHSIG)` in each test: it reaches only the test's
own process, not the children it starts (a script's `sleep 1000`), fires
when the *thread* that forked it exits, needs a `preexec_fn` (which rules out
the fast spawn path and is unsafe beside other threads), and is Linux-only.

The reaper runs `python -I -S` with the standard library only, ignores the
signals a terminal or `kill` sends by default, and lives in a session of its
own so that signals for gitreduce's process group do not reach it.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import subprocess
import sys
import threading

_PROGRAM = r"""
import os, shutil, signal, sys
for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT"):
    signal.signal(getattr(signal, name), signal.SIG_IGN)
groups, gentle, roots, pending = set(), set(), set(), b""
while True:
    data = os.read(int(sys.argv[1]), 65536)
    if not data:
        break
    *lines, pending = (pending + data).split(b"\n")
    for line in lines:
        kind, change, value = line[:1], line[1:2], line[2:]
        known = {b"g": groups, b"t": gentle}.get(kind, roots)
        item = os.fsdecode(bytes.fromhex(value.decode())) if kind == b"d" else int(value)
        (known.add if change == b"+" else known.discard)(item)


def session_of(pid):
    try:
        with open("/proc/%d/stat" % pid, "rb") as stat:
            return int(stat.read().rpartition(b")")[2].split()[3])
    except (OSError, ValueError, IndexError):
        return None


def works_in_a_root(pid):
    try:
        where = os.readlink("/proc/%d/cwd" % pid)
    except OSError:
        return False
    return any(where == root or where.startswith(root + "/") for root in real_roots)


real_roots = {os.path.realpath(root).rstrip("/") for root in roots}
processes = []
if (groups or roots) and os.path.isdir("/proc"):
    processes = [int(entry) for entry in os.listdir("/proc") if entry.isdigit()]
# a test whose start gitreduce had not told yet (it died between the two): a session's
# leader, as every test is, working in a slot of a scratch root
unregistered = {
    pid
    for pid in processes
    if pid not in gentle and session_of(pid) == pid and works_in_a_root(pid)
}
doomed = groups | unregistered
for group in doomed:
    try:
        os.killpg(group, signal.SIGKILL)
    except OSError:
        pass
# what a test ran in a group of its own (`timeout`'s) is still in the test's session, whose
# id is the test's pid, its group's id
for pid in processes:
    if session_of(pid) in doomed:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
for group in gentle:
    try:
        os.killpg(group, signal.SIGTERM)
    except OSError:
        pass
for root in roots:
    shutil.rmtree(root, ignore_errors=True)
"""


class Reaper:
    """The write end of one reaper's pipe; thread-safe."""

    def __init__(self) -> None:
        read, self._write = os.pipe()
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _PROGRAM, str(read)],
                pass_fds=(read,),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                cwd="/",  # holds no directory of the user's busy
                start_new_session=True,
            )
        except OSError:
            os.close(self._write)
            raise
        finally:
            os.close(read)
        self._lock = threading.Lock()
        self._alive = True

    @property
    def pid(self) -> int:
        return self._process.pid

    def watch_group(self, pgid: int, graceful: bool = False) -> None:
        """Kill the group if this process dies first: with SIGKILL, or `graceful`ly with
        SIGTERM, for children that save their work on it (a triage's reductions)."""
        self._send(b"%s+%d\n" % (b"t" if graceful else b"g", pgid))

    def forget_group(self, pgid: int, graceful: bool = False) -> None:
        """Before the group's leader is reaped: after that its id may be another's."""
        self._send(b"%s-%d\n" % (b"t" if graceful else b"g", pgid))

    def watch_root(self, path: str) -> None:
        self._send(b"d+" + os.fsencode(path).hex().encode() + b"\n")

    def forget_root(self, path: str) -> None:
        self._send(b"d-" + os.fsencode(path).hex().encode() + b"\n")

    def close(self) -> None:
        """At a clean exit: end-of-file now, and the reaper waited for (so it is no zombie
        and no "still running" warning); by then nothing is registered, so it just ends."""
        with self._lock:
            self._alive = False
            os.close(self._write)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._process.wait(timeout=2.0)

    def _send(self, message: bytes) -> None:
        with self._lock:
            if not self._alive:
                return
            try:
                os.write(self._write, message)  # whole: a pipe takes small writes at once
            except OSError:  # the reaper was killed: there is nobody left to tell
                self._alive = False


_reaper: Reaper | None = None
_reaper_lock = threading.Lock()


def reaper() -> Reaper:
    """This process's reaper, started on first use; it lives as long as the process."""
    global _reaper
    with _reaper_lock:
        if _reaper is None:
            _reaper = Reaper()
            atexit.register(_reaper.close)
        return _reaper
