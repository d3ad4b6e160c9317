"""Reductions as child processes, a bounded number at a time: the triage's worker pool.

Job: run `git reduce ...` once per finding, at most `workers` at once, each
in a process group of its own with its output in files, and report each as
it ends. A child is an ordinary reduction: it calibrates, reduces, caches
every verdict in the repository and records its result branch as a user's
run would, so whatever ends the batch, a rerun finds the verdicts and
resumes.

Why processes and not threads: each reduction parses and aligns its own
programs (CPU work that the GIL would serialise), owns its signal handling
and its oracle, and dies alone. Stopping: `stop()` sends SIGINT to every
child's group (each keeps its best result and exits 130); if the triage
itself is killed outright, its reaper sends them SIGTERM, which they take
the same way.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gitreduce.oracle.reaper import reaper

_POLL_SECONDS = 0.05
# how long stopped children get to write their best result before they are killed
_STOP_GRACE_SECONDS = 60.0


def jobs_file(progress_file: Path) -> Path:
    """Where a running reduction finds a new `--jobs` (see `Batch.widen`): beside the
    progress file the triage gave it."""
    return progress_file.with_name(progress_file.name + ".jobs")


@dataclass
class Child:
    """One reduction to run: its arguments to `git reduce`, where, and what it is for."""

    key: str
    argv: Sequence[str]
    cwd: Path
    started: float = 0.0
    process: subprocess.Popen[bytes] | None = None
    directory: Path | None = None

    @property
    def progress_file(self) -> Path:
        assert self.directory is not None
        return self.directory / "progress.json"

    def tests_so_far(self) -> int:
        """Tests the running child reports (see `--progress-file`); 0 before its first report."""
        try:
            return int(json.loads(self.progress_file.read_text()).get("tests_run", 0))
        except (OSError, ValueError, AttributeError):
            return 0


@dataclass
class Ended:
    """How a child ended: its exit code, its `--json` summary if it printed one, and the
    last line of its error output (the one-line reason of a refused reduction)."""

    code: int
    summary: dict[str, object] | None
    error: str
    seconds: float


@dataclass
class Batch:
    """Runs `Child`ren, `workers` at a time; `stop()` from any thread ends them all."""

    workers: int
    executable: Sequence[str] = field(default_factory=lambda: (sys.executable, "-m", "gitreduce"))
    _stopping: threading.Event = field(default_factory=threading.Event)
    _running: list[Child] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def stop(self) -> None:
        """Ask every running child to stop (SIGINT to its group), and start no more."""
        self._stopping.set()
        with self._lock:
            running = list(self._running)
        for child in running:
            _signal_group(child, signal.SIGINT)

    def widen(self, child: Child, jobs: int) -> None:
        """Let a running child run `jobs` tests at once (it looks twice a second)."""
        target = jobs_file(child.progress_file)
        aside = target.with_name(target.name + ".tmp")
        with contextlib.suppress(OSError):
            aside.write_text(str(jobs))
            os.replace(aside, target)

    @property
    def stopped(self) -> bool:
        return self._stopping.is_set()

    def running(self) -> list[Child]:
        with self._lock:
            return list(self._running)

    def run(
        self,
        children: Iterator[Child],
        on_start: Callable[[Child], None],
        on_end: Callable[[Child, Ended], None],
        on_tick: Callable[[], None] = lambda: None,
    ) -> None:
        """Start children as slots free up, calling `on_end` as each ends (in this thread)
        and `on_tick` every poll, for progress.

        `children` is read lazily: the caller may decide what runs next from
        what has ended so far.
        """
        pending = iter(children)
        exhausted = False
        with tempfile.TemporaryDirectory(prefix="gitreduce-triage-") as scratch:
            while True:
                while not exhausted and not self.stopped and len(self._running) < self.workers:
                    child = next(pending, None)
                    if child is None:
                        exhausted = True
                        break
                    self._start(child, Path(scratch))
                    on_start(child)
                if not self._running:
                    return
                if self.stopped:
                    self._wait_stopped(on_end)
                    return
                for child in self._finished():
                    on_end(child, self._collect(child))
                on_tick()
                time.sleep(_POLL_SECONDS)

    def _start(self, child: Child, scratch: Path) -> None:
        child.directory = scratch / f"{len(os.listdir(scratch))}"
        child.directory.mkdir()
        argv = [*self.executable, *child.argv, "--progress-file", str(child.progress_file)]
        with (
            open(child.directory / "out", "wb") as out,
            open(child.directory / "err", "wb") as err,
        ):
            child.process = subprocess.Popen(
                argv,
                cwd=child.cwd,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,  # Ctrl-C reaches the triage, which forwards it
            )
        child.started = time.monotonic()
        reaper().watch_group(child.process.pid, graceful=True)
        with self._lock:
            self._running.append(child)

    def _finished(self) -> list[Child]:
        done = [c for c in self.running() if c.process is not None and c.process.poll() is not None]
        with self._lock:
            for child in done:
                self._running.remove(child)
        return done

    def _collect(self, child: Child) -> Ended:
        assert child.process is not None and child.directory is not None
        reaper().forget_group(child.process.pid, graceful=True)
        seconds = time.monotonic() - child.started
        summary: dict[str, object] | None = None
        with contextlib.suppress(OSError, ValueError):
            parsed = json.loads((child.directory / "out").read_bytes() or b"null")
            summary = parsed if isinstance(parsed, dict) else None
        error = ""
        with contextlib.suppress(OSError):
            lines = (child.directory / "err").read_text(errors="replace").splitlines()
            error = next((line for line in reversed(lines) if line.strip()), "")
        return Ended(child.process.returncode, summary, error, seconds)

    def _wait_stopped(self, on_end: Callable[[Child, Ended], None]) -> None:
        """After `stop()`: let every child write its best result, then report each."""
        deadline = time.monotonic() + _STOP_GRACE_SECONDS
        while self._running:
            for child in self._finished():
                on_end(child, self._collect(child))
            if time.monotonic() > deadline:
                for child in self.running():
                    _signal_group(child, signal.SIGKILL)
            time.sleep(_POLL_SECONDS)


def _signal_group(child: Child, signum: int) -> None:
    if child.process is None:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(child.process.pid, signum)
