"""Generator workers: the pipe protocol, both of its ends, and the pool of worker processes.

The generator is the user's code and may raise, loop forever or print
nothing, so the session never runs it in its own process: a small pool of
worker processes records and replays it, each request under a timeout, and
a stuck worker is killed and replaced.

Requests and replies are pickled tuples, each framed by its length:
`("load", TargetSpec)` gets `("ok",)`, `("record", seed)` gets
`("trace", Trace)`, and `("replay", base id, base or None, edits, alignment,
seed)` gets `("replayed", Replayed)`, or `("missing",)` when the worker no
longer holds that base. Any request may get `("failed", reason)` when the
generator fails and `("error", message)` on a bug of ours. Workers start with
`python -c` and import this module (for `serve`), so it imports nothing of
the engine, the oracle or git: a worker starts fast.
"""

from __future__ import annotations

import contextlib
import math
import os
import pickle
import select
import signal
import struct
import subprocess
import sys
import threading
import time
from collections import OrderedDict
from typing import IO, Any

from gitreduce.core.errors import UserError
from gitreduce.generator.plan import Edits
from gitreduce.generator.recorder import GeneratorFailed, execute
from gitreduce.generator.replay import Alignment, Replayed, replay
from gitreduce.generator.target import Target, TargetSpec
from gitreduce.generator.trace import Trace

# -- messages ----------------------------------------------------------------------

_HEADER = struct.Struct(">Q")


def send(stream: IO[bytes], message: object) -> None:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(data)) + data)
    stream.flush()


def receive(stream: IO[bytes]) -> object | None:
    header = _read_exactly(stream, _HEADER.size)
    if header is None:
        return None
    (size,) = _HEADER.unpack(header)
    data = _read_exactly(stream, size)
    return None if data is None else pickle.loads(data)


def _read_exactly(stream: IO[bytes], size: int) -> bytes | None:
    chunks, remaining = [], size
    while remaining:
        chunk = stream.read(remaining)
        if not chunk:
            return None
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


# -- the worker's end ---------------------------------------------------------------


def serve(read_fd: int, write_fd: int) -> None:
    """The worker loop: load a generator, then record and replay on request until EOF.

    Base traces are cached by id, so a batch of candidates over one base sends
    the base once per worker.
    """
    reader = os.fdopen(read_fd, "rb")
    writer = os.fdopen(write_fd, "wb")
    target: Target | None = None
    bases: OrderedDict[int, Trace] = OrderedDict()
    while True:
        message = receive(reader)
        if message is None:
            return
        assert isinstance(message, tuple)
        kind = message[0]
        try:
            if kind == "load":
                target = Target(message[1])
                target.load()
                reply: tuple[Any, ...] = ("ok",)
            elif kind == "record":
                assert target is not None
                reply = ("trace", execute(target.load, message[1]))
            elif kind == "replay":
                assert target is not None
                _, base_id, base, removed, alignment, seed = message
                if base is not None:
                    bases[base_id] = base
                    while len(bases) > 4:
                        bases.popitem(last=False)
                if base_id not in bases:
                    reply = ("missing",)
                else:
                    bases.move_to_end(base_id)
                    reply = (
                        "replayed",
                        replay(target.load, bases[base_id], removed, Alignment(alignment), seed),
                    )
            else:
                reply = ("error", f"unknown request {kind!r}")
        except GeneratorFailed as error:
            reply = ("failed", str(error))
        except RecursionError:
            reply = ("failed", "the generator raised RecursionError")
        except Exception as error:  # a bug on our side: report, keep serving
            reply = ("error", f"{type(error).__name__}: {error}")
        send(writer, reply)


# -- the session's end --------------------------------------------------------------

_WORKER = (
    "import sys; from gitreduce.generator.pool import serve; "
    "serve(int(sys.argv[1]), int(sys.argv[2]))"
)


class GeneratorTimeout(Exception):
    pass


class WorkerDied(Exception):
    pass


class PoolClosed(Exception):
    pass


class _Worker:
    """One generator process: requests over a pipe pair, killed with its process group."""

    def __init__(self, cwd: str) -> None:
        to_worker, self._out = os.pipe()
        self._in, from_worker = os.pipe()
        # Hash randomisation would let set iteration order, and with it a generator's
        # choices, differ from one worker to the next.
        environment = {**os.environ, "PYTHONHASHSEED": "0"}
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-c", _WORKER, str(to_worker), str(from_worker)],
                pass_fds=(to_worker, from_worker),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
                env=environment,
                cwd=cwd,
            )
        except OSError:
            for fd in (self._out, self._in):
                os.close(fd)
            raise
        finally:
            os.close(to_worker)
            os.close(from_worker)
        self.bases: set[int] = set()
        self._closed = False

    def request(self, message: object, timeout: float) -> Any:
        data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
        try:
            view = memoryview(_HEADER.pack(len(data)) + data)
            while view:
                written = os.write(self._out, view)
                view = view[written:]
        except OSError:
            raise WorkerDied(self._status()) from None
        deadline = time.monotonic() + timeout
        (size,) = _HEADER.unpack(self._read(_HEADER.size, deadline))
        return pickle.loads(self._read(size, deadline))

    def _read(self, size: int, deadline: float) -> bytes:
        poller = select.poll()
        poller.register(self._in, select.POLLIN)
        chunks, remaining = [], size
        while remaining:
            left = deadline - time.monotonic()
            if left <= 0:
                self.kill()
                raise GeneratorTimeout
            try:
                if not poller.poll(max(1, math.ceil(left * 1000))):
                    continue
                chunk = os.read(self._in, min(remaining, 1 << 20))
            except OSError:  # closed under us: the pool is shutting down
                raise WorkerDied("closed") from None
            if not chunk:
                raise WorkerDied(self._status())
            chunks.append(chunk)
            remaining -= len(chunk)
        return b"".join(chunks)

    def _status(self) -> str:
        self.kill()
        code = self.process.returncode
        if code is not None and code < 0:
            try:
                return f"killed by {signal.Signals(-code).name}"
            except ValueError:
                return f"killed by signal {-code}"
        return f"exit status {code}"

    def kill(self) -> None:
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        for fd in (self._out, self._in):
            with contextlib.suppress(OSError):
                os.close(fd)


class GeneratorPool:
    """Up to `size` workers with the generator loaded, handed out one request at a time."""

    def __init__(self, target: TargetSpec, size: int, load_timeout: float) -> None:
        self._target = target
        self._size = max(1, size)
        self._load_timeout = load_timeout
        self._cond = threading.Condition()
        self._free: list[_Worker] = []
        self._all: set[_Worker] = set()
        self._started = 0
        self._closed = False

    def __enter__(self) -> GeneratorPool:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            workers = list(self._all)
            self._all.clear()
            self._free.clear()
            self._cond.notify_all()
        for worker in workers:
            worker.kill()

    def _acquire(self) -> _Worker:
        with self._cond:
            while True:
                if self._closed:
                    raise PoolClosed
                if self._free:
                    return self._free.pop()
                if self._started < self._size:
                    self._started += 1
                    break
                self._cond.wait()
        try:
            worker = _Worker(self._target.cwd)
        except BaseException:
            self._forget(None)
            raise
        with self._cond:
            self._all.add(worker)
        try:
            reply = worker.request(("load", self._target), self._load_timeout)
        except GeneratorTimeout:
            self._forget(worker)
            raise UserError(
                f"loading the generator did not finish within {self._load_timeout:g} s "
                "(does importing it run the generator, or wait for input?)"
            ) from None
        except WorkerDied as died:
            self._forget(worker)
            raise UserError(f"the generator's process died while loading it ({died})") from None
        except BaseException:
            self._forget(worker)
            raise
        if reply[0] != "ok":
            self._forget(worker)
            raise UserError(str(reply[1]))
        return worker

    def _forget(self, worker: _Worker | None) -> None:
        if worker is not None:
            worker.kill()
        with self._cond:
            if worker is not None:
                self._all.discard(worker)
            self._started -= 1
            self._cond.notify()

    def _release(self, worker: _Worker, healthy: bool) -> None:
        with self._cond:
            if healthy and not self._closed:
                self._free.append(worker)
                self._cond.notify()
                return
        self._forget(worker)

    def record(self, seed: int, timeout: float) -> Trace:
        """The original execution at `seed`; any way the generator fails is a UserError."""
        worker = self._acquire()
        healthy = False
        try:
            reply = worker.request(("record", seed), timeout)
            healthy = True
        except GeneratorTimeout:
            raise UserError(
                f"the generator did not finish within {timeout:g} s at seed {seed} (an endless "
                "loop?); if it is only slow, give it longer with --generator-timeout"
            ) from None
        except WorkerDied as died:
            raise UserError(f"the generator's process died at seed {seed} ({died})") from None
        finally:
            self._release(worker, healthy)
        if reply[0] == "trace":
            return reply[1]
        if reply[0] == "failed":
            raise UserError(f"{reply[1]} (seed {seed})")
        raise UserError(f"the generator worker failed: {reply[1]}")

    def replay(
        self,
        base_id: int,
        base: Trace,
        removed: Edits,
        alignment: Alignment,
        seed: int,
        timeout: float,
    ) -> Replayed:
        """One trace-aligned re-execution; a timeout or a crash is just a failed candidate."""
        worker = self._acquire()
        healthy = False
        try:
            known = base_id in worker.bases
            message = ("replay", base_id, None if known else base, removed, alignment.value, seed)
            reply = worker.request(message, timeout)
            if reply[0] == "missing":  # the worker let it go to keep its memory small
                reply = worker.request(
                    ("replay", base_id, base, removed, alignment.value, seed), timeout
                )
            worker.bases.add(base_id)
            healthy = True
        except GeneratorTimeout:
            return Replayed(None, removed, failure="timed out")
        except WorkerDied as died:
            return Replayed(None, removed, failure=f"worker died ({died})")
        finally:
            self._release(worker, healthy)
        if reply[0] == "replayed":
            return reply[1]
        return Replayed(None, removed, failure=str(reply[1]))
