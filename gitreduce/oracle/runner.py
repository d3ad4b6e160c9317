"""The oracle: runs the user's test command on one candidate and classifies the run.

This is the only place that spawns the user's test. Everything a reduction
learns about a candidate comes from here, so the edge cases live here too:
scratch directories per parallel worker, timeouts that kill whole process
groups, and prompt shutdown on interruption. What decides a verdict lives in
`spec`; checking the test on the originals before a reduction, in `calibration`.
"""

import contextlib
import math
import os
import re
import select
import shlex
import shutil
import signal
import stat
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO

from gitreduce.core.errors import UserError
from gitreduce.core.outcome import Outcome, Verdict
from gitreduce.oracle.signature import extract_signature
from gitreduce.oracle.spec import TestSpec, anchored

# Long enough for any sane test on the original input; calibration replaces it.
PROVISIONAL_TIMEOUT = 300.0

# Output kept per run: the head holds a compiler's first diagnostics, the tail a
# traceback's last line or a sanitizer report after a long program output.
_HEAD_BYTES = 64 * 1024
_TAIL_BYTES = 16 * 1024
_PLACEHOLDER = re.compile(r"""(['"]?)\{\}\1""")


class OracleClosed(Exception):
    """Raised by `Oracle.run` once `close()` has begun.

    A run cut short by close() says nothing about its candidate, so it must not
    come back as a verdict that a cache could store.
    """


@dataclass(frozen=True)
class _Slot:
    """One worker's private scratch dir and everything precomputed for running in it."""

    workdir: Path
    candidate: Path
    output: Path
    argv: tuple[str, ...]
    env: Mapping[str, str]


class Oracle:
    """Runs the test on candidates, up to `jobs` at a time, each in a private scratch dir.

    `run()` is thread-safe. `close()` (idempotent, and safe to call from a
    signal handler in the main thread) kills every running test's process
    group and removes all scratch dirs; runs in flight then raise
    `OracleClosed` promptly, and so do later calls. A spec without a timeout
    runs with `PROVISIONAL_TIMEOUT`.
    """

    def __init__(self, spec: TestSpec, jobs: int, scratch_root: Path | None = None) -> None:
        if jobs < 1:
            raise ValueError(f"jobs must be at least 1, not {jobs}")
        relative = PurePosixPath(spec.relative_path)
        if relative.is_absolute() or not relative.parts or ".." in relative.parts:
            raise ValueError(f"not a relative path inside the scratch dir: {spec.relative_path!r}")
        self.spec = spec
        self.timeout = spec.timeout if spec.timeout is not None else PROVISIONAL_TIMEOUT
        self._regex = _compile_signature(spec.signature_regex)
        command = anchored(spec.command, spec.relative_path, Path.cwd())
        environment = {**os.environ, **(spec.env or {})}
        self._root = Path(tempfile.mkdtemp(prefix="gitreduce-", dir=scratch_root)).resolve()
        self._slots = [
            self._make_slot(index, relative, command, environment) for index in range(jobs)
        ]
        self._free = list(self._slots)
        # Re-entrant so that close() from a signal handler cannot deadlock
        # against the main thread holding the lock inside run().
        self._cond = threading.Condition(threading.RLock())
        self._running: set[subprocess.Popen[bytes]] = set()
        self._closed = False

    def _make_slot(
        self, index: int, relative: PurePosixPath, command: str, environment: Mapping[str, str]
    ) -> _Slot:
        workdir = self._root / str(index)
        workdir.mkdir()
        candidate = workdir.joinpath(*relative.parts)
        quoted = shlex.quote(str(candidate))
        return _Slot(
            workdir=workdir,
            candidate=candidate,
            output=self._root / f"{index}.out",
            argv=("/bin/sh", "-c", _PLACEHOLDER.sub(lambda _: quoted, command)),
            env={**environment, "GITREDUCE_FILE": str(candidate)},
        )

    def __enter__(self) -> "Oracle":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def run(self, content: bytes) -> Outcome:
        """Classify one candidate; raises `OracleClosed` if the oracle is or gets closed."""
        return self.run_with_output(content)[0]

    def close(self) -> None:
        """Kill all running tests with their process groups, then delete the scratch root."""
        with self._cond:
            if self._closed:
                return
            self._closed = True
            running = list(self._running)
            # Killed under the lock: run() unregisters a process before reaping
            # it, so no pid here can have been reused by an unrelated process.
            for process in running:
                _kill_group(process.pid)
            self._cond.notify_all()
        for process in running:
            # With a timeout Popen.wait never blocks on its internal lock, which
            # the interrupted main thread may hold.
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=2.0)
        _remove_tree(self._root)

    def run_with_output(self, content: bytes) -> tuple[Outcome, str]:
        """Like run(), also returning the captured output (for calibration messages)."""
        slot = self._acquire()
        try:
            return self._run_in(slot, content)
        except OSError:
            # close() removed the scratch dir under our feet.
            if self._closed:
                raise OracleClosed from None
            raise
        finally:
            self._release(slot)

    def _acquire(self) -> _Slot:
        with self._cond:
            while not self._closed and not self._free:
                self._cond.wait()
            if self._closed:
                raise OracleClosed
            return self._free.pop()

    def _release(self, slot: _Slot) -> None:
        with self._cond:
            if not self._closed:
                self._free.append(slot)
                self._cond.notify()
                return
        # close() may have raced with this run writing into the slot; whoever
        # is last removes what is left.
        _remove_tree(slot.workdir)
        with contextlib.suppress(OSError):
            slot.output.unlink()
        with contextlib.suppress(OSError):
            self._root.rmdir()

    def _run_in(self, slot: _Slot, content: bytes) -> tuple[Outcome, str]:
        _empty(slot.workdir)
        # Parents one by one, never parents=True: that would resurrect a
        # scratch root that close() has just removed.
        for parent in reversed(slot.candidate.relative_to(slot.workdir).parents[:-1]):
            (slot.workdir / parent).mkdir()
        slot.candidate.write_bytes(content)
        # A file rather than pipes: a stray background child holding a pipe
        # open would make us wait for it; a file is read once sh has exited.
        with open(slot.output, "w+b") as out:
            start = time.monotonic()
            process = subprocess.Popen(
                slot.argv,
                cwd=slot.workdir,
                env=slot.env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            finished = self._wait(process)
            seconds = time.monotonic() - start
            output = _read_capped(out)
        if self._closed:
            raise OracleClosed
        output = output.replace(f"{slot.workdir}{os.sep}", "").replace(str(slot.workdir), ".")
        if not finished:
            return Outcome(Verdict.TIMEOUT, None, seconds), output
        code = process.returncode
        verdict = _classify(self.spec.polarity, code)
        signature = self._signature(code, output) if verdict is Verdict.BAD else None
        return Outcome(verdict, code, seconds, signature), output

    def _wait(self, process: subprocess.Popen[bytes]) -> bool:
        """Wait for the test within the timeout; True if it exited by itself.

        Either way its whole process group is killed afterwards, so that
        background children cannot outlive the run and write into the slot.
        """
        pidfd = _pidfd(process.pid)  # before anyone else could reap the pid
        try:
            with self._cond:
                if self._closed:
                    _kill_group(process.pid)
                    process.wait()
                    raise OracleClosed
                self._running.add(process)
            try:
                if pidfd is None:
                    process.wait(self.timeout)
                    return True
                poller = select.poll()
                poller.register(pidfd, select.POLLIN)
                return bool(poller.poll(math.ceil(self.timeout * 1000)))
            except subprocess.TimeoutExpired:
                return False
            finally:  # also on KeyboardInterrupt: never leave a test running
                _kill_group(process.pid)
                with self._cond:
                    self._running.discard(process)
                process.wait()
        finally:
            if pidfd is not None:
                os.close(pidfd)

    def _signature(self, code: int, output: str) -> str | None:
        if self._regex is not None:
            match = self._regex.search(output)
            if match is None:
                return None
            return match.group(1) if self._regex.groups else match.group(0)
        if self.spec.polarity == "interesting":
            return "interesting"
        line = extract_signature(output, candidate=self.spec.relative_path)
        return f"exit {code}" if line is None else f"exit {code}: {line}"


def _compile_signature(pattern: str | None) -> re.Pattern[str] | None:
    """Multiline, so that `^` and `$` anchor at the output's lines as users expect."""
    if pattern is None:
        return None
    try:
        return re.compile(pattern, re.MULTILINE)
    except re.error as error:
        raise UserError(f"invalid signature pattern {pattern!r}: {error}") from None


def _classify(polarity: str, code: int) -> Verdict:
    """The `git bisect run` convention, or C-Reduce's where exit 0 means "still buggy"."""
    if polarity == "interesting":
        return Verdict.BAD if code == 0 else Verdict.SKIP
    if code == 0:
        return Verdict.GOOD
    if code == 125:
        return Verdict.SKIP
    if 1 <= code <= 127:
        return Verdict.BAD
    return Verdict.BROKEN  # >= 128, or negative: killed by a signal


def _pidfd(pid: int) -> int | None:
    """A pollable handle on the child (Linux): waking exactly at its exit, unlike Popen.wait's
    sleep-polling, keeps per-run overhead low for fast tests."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _read_capped(out: IO[bytes]) -> str:
    size = os.fstat(out.fileno()).st_size
    out.seek(0)
    if size <= _HEAD_BYTES + _TAIL_BYTES:
        data = out.read()
    else:
        head = out.read(_HEAD_BYTES)
        head = head[: head.rfind(b"\n") + 1] or head
        out.seek(size - _TAIL_BYTES)
        tail = out.read(_TAIL_BYTES)
        tail = tail[tail.find(b"\n") + 1 :]
        omitted = size - len(head) - len(tail)
        data = head + f"[... {omitted} bytes omitted ...]\n".encode() + tail
    return data.decode("utf-8", "replace")


def _empty(directory: Path) -> None:
    """Remove what the previous run left in a slot; cheaper than recreating the dir."""
    try:
        _remove_entries(directory)
    except PermissionError:  # the test made something read-only
        _make_writable(directory)
        _remove_entries(directory)


def _remove_entries(directory: Path) -> None:
    with os.scandir(directory) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path)
            else:
                os.unlink(entry.path)


def _remove_tree(path: Path) -> None:
    """Best-effort removal: called while shutting down, where raising helps nobody."""
    try:
        shutil.rmtree(path)
    except PermissionError:
        with contextlib.suppress(OSError):
            _make_writable(path)
        shutil.rmtree(path, ignore_errors=True)
    except OSError:
        shutil.rmtree(path, ignore_errors=True)


def _make_writable(path: Path) -> None:
    pending = [str(path)]
    while pending:
        directory = pending.pop()
        os.chmod(directory, stat.S_IRWXU)
        with os.scandir(directory) as entries:
            pending.extend(e.path for e in entries if e.is_dir(follow_symlinks=False))
