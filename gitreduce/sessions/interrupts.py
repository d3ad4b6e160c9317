"""Ctrl-C and SIGTERM during a session: a request to stop, acted on where it is safe.

Job: while a session (or the whole command line) runs, turn SIGINT and
SIGTERM into a recorded request instead of an exception, stop what the
session registered (the oracles, which kill the running tests, and the
engine), and let the main thread end the reduction at a point of its own
choosing, so that the best result so far is always written and recorded.

Why not let Python raise KeyboardInterrupt: it is raised wherever the main
thread happens to be, and that is usually inside `concurrent.futures.wait` or
a `threading.Condition`, between a lock's acquire and its release. The lock
is then released twice ("release unlocked lock"), or never, and the run ends
in an internal error or hangs with no result; raised while the verdict cache
flushes or the result is recorded, it loses both.

Here the signal handler only sets a flag and writes a byte to a pipe. A
watcher thread, woken by that byte, calls the registered stops outside any
signal context: the oracles kill their tests, so every test in flight ends
at once, and the engine's main-thread loop, which waits on tests with a
timeout, raises `Interrupted` at its next step. A calibration in progress is
cut the same way (its oracle is one of those stopped) and the originals are
the result. The cache flush and the final recording are never cut: a request
that comes while they run changes nothing (see `run.calibrated_run`).
"""

from __future__ import annotations

import contextlib
import functools
import os
import select
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

SIGNALS = (signal.SIGINT, signal.SIGTERM)
_RESTOP_SECONDS = 0.05
P = ParamSpec("P")
R = TypeVar("R")


class Interrupts:
    """The request to stop, and what to stop when it comes.

    A request that comes outside any session (while the command line loads or
    parses, say) waits for the next session, which then stops at once with the
    originals as its result. Outside a session a second signal, the user
    insisting, raises KeyboardInterrupt as Python would: there is no orderly
    stop to wait for there, and nothing of a reduction to lose.
    """

    def __init__(self) -> None:
        self.requested = False
        self.sessions = 0  # sessions running (see `deferring`); main thread only
        self._stops: list[Callable[[], None]] = []
        self._lock = threading.Lock()  # the main and watcher threads; never the handler
        self._wake_read, self._wake_write = os.pipe()
        os.set_blocking(self._wake_write, False)  # a burst of signals must not block the handler
        self._watcher = threading.Thread(target=self._watch, name="interrupts", daemon=True)
        self._watcher.start()

    def handle(self, signum: int, frame: object) -> None:
        """The signal handler: a flag and a byte, no lock; raises only when asked twice
        outside a session."""
        if self.requested and not self.sessions:
            raise KeyboardInterrupt
        self.requested = True
        # A full pipe (a burst of signals) means the watcher has a wake-up pending anyway.
        with contextlib.suppress(OSError):
            os.write(self._wake_write, b"\0")

    @contextmanager
    def stopping(self, stop: Callable[[], None]) -> Iterator[None]:
        """Call `stop` (idempotent, from any thread) if a request comes while the block runs,
        or at once if one already came."""
        with self._lock:
            self._stops.append(stop)
        try:
            if self.requested:
                stop()
            yield
        finally:
            with self._lock:
                self._stops.remove(stop)

    def _watch(self) -> None:
        """Call the stops at each request, and again every `_RESTOP_SECONDS` while it stands:
        an oracle opened just after the request (calibration's, between the session's look
        at the flag and the oracle's start) is stopped too."""
        timeout: float | None = None
        while True:
            woken, _, _ = select.select([self._wake_read], [], [], timeout)
            if woken and not os.read(self._wake_read, 64):
                return  # end of file: the session is over
            if self.requested:
                timeout = _RESTOP_SECONDS
                with self._lock:
                    stops = list(self._stops)
                for stop in stops:
                    stop()

    def close(self) -> None:
        os.close(self._wake_write)
        self._watcher.join()
        os.close(self._wake_read)


_active: Interrupts | None = None


@contextmanager
def deferred() -> Iterator[Interrupts]:
    """SIGINT and SIGTERM as a request to stop while the block runs; from the main thread.

    Nested blocks share the outermost one's `Interrupts`, so that a session's
    parts (calibration, a bisect, the reduction, the recording) see one request.
    The previous handlers are back when the outermost block ends.
    """
    global _active
    if _active is not None:
        yield _active
        return
    interrupts = Interrupts()
    try:
        previous = [(signum, signal.signal(signum, interrupts.handle)) for signum in SIGNALS]
    except BaseException:  # not the main thread: signal handlers cannot be set here
        interrupts.close()
        raise
    _active = interrupts
    try:
        yield interrupts
    finally:
        _active = None
        for signum, handler in previous:
            signal.signal(signum, handler)
        interrupts.close()


def deferring(session: Callable[P, R]) -> Callable[P, R]:
    """A session function whose every step, recording its result included, runs `deferred()`:
    an interrupt ends the reduction, never the writing of what it found."""

    @functools.wraps(session)
    def deferred_session(*args: P.args, **kwargs: P.kwargs) -> R:
        with deferred() as interrupts:
            interrupts.sessions += 1
            try:
                return session(*args, **kwargs)
            finally:
                interrupts.sessions -= 1

    return deferred_session
