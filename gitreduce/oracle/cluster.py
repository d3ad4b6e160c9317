"""Test runs on a Dask `distributed` cluster: one task per run, judged by an `Oracle` there.

Job: the Dask executor (`DaskExecutor`: a `Client` to a running scheduler,
or to a `LocalCluster` it starts) and its runner (`ClusterRunner`), which
sends each run to a worker and waits for the verdict.

What travels with a task is all the worker needs: the candidate's bytes and
the test (`Task`: the spec with its test script made absolute here, the
timeout, and the files and program the command needs). The worker runs it
with an `Oracle` of its own, one per test per worker process, kept between
tasks, with a slot per worker thread: scratch directories, timeouts that kill
process groups, output capture and failure signatures are the local rules,
because they are the local code. The outcome and output come back; the
coordinator caches them as it caches its own runs, and workers never see the
repository. Runs are submitted with `pure=False`: the same candidate run twice
(a `--repeat` majority) must run twice.

What a worker cannot do is one `UserError`, never a hang: a runner checks
every connected worker for the test's program and the files its command
names before the first run, and a worker that joins later checks when it
first meets the test. A cluster without workers is waited for
`WORKER_WAIT_SECONDS`, a scheduler that cannot be reached is reported within
`CONNECT_SECONDS`, and a test that keeps killing its workers (Dask's
`KilledWorker`) is reported once Dask gives up on it.

Stopping (Ctrl-C) cancels the runs not finished: those still queued never
start, and a test already running on a worker ends at its timeout, since Dask
cannot interrupt a running task. Waiting runs look at the stop flag every
`_POLL_SECONDS`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shlex
import subprocess
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from concurrent.futures import CancelledError, ThreadPoolExecutor
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass, replace
from pathlib import Path

import distributed
import distributed.comm
from distributed.utils import silence_logging_cmgr

from gitreduce.core import tickets
from gitreduce.core.errors import UserError
from gitreduce.core.outcome import Outcome
from gitreduce.oracle.executor import ExecutorChoice, Notice
from gitreduce.oracle.runner import PROVISIONAL_TIMEOUT, Oracle, OracleClosed, track, untrack
from gitreduce.oracle.spec import TestSpec, anchored, first_word

# How long a run waits for a worker when the cluster has none.
WORKER_WAIT_SECONDS = 30.0
# How long connecting to a scheduler may take before it counts as unreachable.
CONNECT_SECONDS = 3.0
# How often a waiting run looks whether it was stopped, and whether workers are left.
_POLL_SECONDS = 0.05
_WORKER_LOOK_SECONDS = 1.0
# How long close() waits for runs in flight to give up their wait.
_SETTLE_SECONDS = 5.0
# Oracles a worker process keeps for tests it may meet again (a rerun, the re-verification).
_KEPT_ORACLES = 8
_PLAIN_WORD = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.+-@%,:")
_QUIET = logging.CRITICAL + 1  # Dask's log level while it serves a run: nothing
_NEEDS = "workers need the test's tools, and its scripts at the same absolute path"


@dataclass(frozen=True)
class Task:
    """The test as it travels to a worker: the spec with its script path absolute and its
    timeout set, the absolute files its command names (they exist here, so a worker must
    have them too) and the program it runs when that is a bare name to look up on PATH."""

    spec: TestSpec
    files: tuple[str, ...]
    program: str | None

    @classmethod
    def of(cls, spec: TestSpec) -> Task:
        command = anchored(spec.command, spec.relative_path, Path.cwd())
        timeout = spec.timeout if spec.timeout is not None else PROVISIONAL_TIMEOUT
        try:
            words = shlex.split(command)
        except ValueError:  # unbalanced quotes: sh will say so, on the worker as here
            words = command.split()
        files = tuple(dict.fromkeys(w for w in words if os.path.isabs(w) and os.path.isfile(w)))
        program = first_word(command)
        if program is None or "/" in program or not set(program) <= _PLAIN_WORD:
            program = None
        return cls(replace(spec, command=command, timeout=timeout), files, program)


def missing_here(task: Task) -> str | None:
    """What this machine lacks to run `task`'s test, in a few words; None if nothing.

    Runs on a worker. `command -v` under `/bin/sh` finds programs on PATH and
    shell builtins alike, as the test's own shell will.
    """
    for path in task.files:
        if not os.path.isfile(path):
            return f"{path} does not exist there"
    word = first_word(task.spec.command)
    if word in task.files and not os.access(word, os.X_OK):
        return f"{word} is not executable there"
    if task.program is not None:
        found = subprocess.run(
            ["/bin/sh", "-c", 'command -v "$1" >/dev/null', "sh", task.program],
            env={**os.environ, **(task.spec.env or {})},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=False,
        )
        if found.returncode != 0:
            return f"no program {task.program} there"
    return None


class CannotRun(UserError):
    """A worker lacks what the test needs; raised there, re-raised here by Dask."""


def cannot_run(worker: str, missing: str) -> CannotRun:
    return CannotRun(f"the Dask worker {worker} cannot run the test: {missing} ({_NEEDS})")


@dataclass
class _Held:
    oracle: Oracle
    users: int = 0


_oracles: OrderedDict[str, _Held] = OrderedDict()  # a worker process's, by repr(task)
_oracles_lock = threading.Lock()


def run_on_worker(task: Task, content: bytes) -> tuple[Outcome, str]:
    """The Dask task: run the test on `content` with this worker process's oracle for it."""
    held = _hold(task)
    try:
        return held.oracle.run_with_output(content)
    finally:
        with _oracles_lock:
            held.users -= 1


def _hold(task: Task) -> _Held:
    """The oracle for `task`, made on first use after checking that the test can run here;
    the oracles no run uses beyond the `_KEPT_ORACLES` most recent are closed."""
    key = repr(task)
    with _oracles_lock:
        held = _oracles.get(key)
        if held is None:
            worker = distributed.get_worker()
            missing = missing_here(task)
            if missing is not None:
                raise cannot_run(worker.address, missing)
            held = _oracles[key] = _Held(Oracle(task.spec, jobs=worker.state.nthreads))
            idle = [k for k, h in _oracles.items() if h.users == 0 and k != key]
            for old in idle[: max(0, len(_oracles) - _KEPT_ORACLES)]:
                _oracles.pop(old).oracle.close()
        _oracles.move_to_end(key)
        held.users += 1
        return held


class DaskExecutor:
    """Runs tests on the workers of one Dask cluster, through one `Client`."""

    def __init__(self, client: distributed.Client, address: str, notice: Notice | None) -> None:
        self._client = client
        self._address = address
        self._notice = notice
        self._lock = threading.Lock()
        self._looked = 0.0
        self._empty_since: float | None = None

    @classmethod
    @contextmanager
    def opened(
        cls, choice: ExecutorChoice, *, workers: int | None, notice: Notice | None
    ) -> Iterator[DaskExecutor]:
        """Connected to `choice`'s scheduler, or to a LocalCluster started for the block.

        Dask's own log lines are silenced meanwhile (its workers' too, in a
        LocalCluster): what they would say (a lost connection, a dead worker)
        ends the run as one `UserError` line of ours, and a traceback in the
        middle of the progress output would help no one.
        """
        with ExitStack() as stack:
            stack.enter_context(silence_logging_cmgr(_QUIET))
            if choice.kind == "dask-local":
                cluster = stack.enter_context(_local_cluster(workers or os.cpu_count() or 1))
                client = distributed.Client(cluster, set_as_default=False)
                scheduler = cluster.scheduler_address
            else:
                client = _connect(choice)
                scheduler = choice.scheduler
            stack.callback(client.close)
            yield cls(client, "dask://" + scheduler.removeprefix("tcp://"), notice)

    @property
    def address(self) -> str:
        return self._address

    def worker_threads(self) -> int:
        return sum(self._client.nthreads().values())

    def runner(self, spec: TestSpec, jobs: int) -> ClusterRunner:
        return ClusterRunner(self, Task.of(spec), jobs)

    def submit(self, task: Task, content: bytes) -> distributed.Future:
        return self._client.submit(run_on_worker, task, content, pure=False)

    def cancel(self, futures: list[distributed.Future]) -> None:
        with suppress(OSError):  # the scheduler is gone: nothing left to cancel there
            self._client.cancel(futures)

    def prepare(self, task: Task, stopped: Callable[[], bool]) -> None:
        """Once a worker is there (or `stopped()`), check that every worker can run `task`."""
        while not self._client.nthreads():
            if stopped():
                return
            self.look_at_workers()
            time.sleep(_POLL_SECONDS)
        found = self._client.run(missing_here, task, on_error="return")
        for worker, missing in sorted(found.items()):
            if isinstance(missing, Exception):
                raise UserError(
                    f"the Dask worker {worker} cannot run gitreduce's tasks ({missing!r}); "
                    "install gitreduce there, the same version as here"
                )
            if missing is not None:
                raise cannot_run(worker, missing)

    def look_at_workers(self) -> None:
        """Raise `UserError` once the cluster has had no worker for `WORKER_WAIT_SECONDS`;
        asks the scheduler at most every `_WORKER_LOOK_SECONDS`, whoever calls."""
        with self._lock:
            now = time.monotonic()
            if now - self._looked < _WORKER_LOOK_SECONDS:
                return
            self._looked = now
            try:
                workers = len(self._client.nthreads())
            except OSError as error:
                raise UserError(f"lost the Dask scheduler at {self._address}: {error}") from None
            if workers:
                self._empty_since = None
                return
            if self._empty_since is None:
                self._empty_since = now
                if self._notice is not None:
                    self._notice(
                        f"waiting for a Dask worker to join {self._address} "
                        f"(up to {WORKER_WAIT_SECONDS:g} s)"
                    )
            elif now - self._empty_since > WORKER_WAIT_SECONDS:
                raise UserError(
                    f"no Dask worker joined {self._address} within {WORKER_WAIT_SECONDS:g} s; "
                    f"start one with: dask worker tcp://{self._address.removeprefix('dask://')}"
                )


class ClusterRunner:
    """`Oracle`'s interface over a Dask cluster: each run is one task on some worker.

    Up to `jobs` runs are in flight at once, as many as the engine asks for.
    `stop()` cancels the tasks not yet finished and makes the runs waiting on
    them raise `OracleClosed`; `close()` stops and waits for those runs to
    return. The runner holds nothing on the cluster: the workers' oracles are
    theirs (see `run_on_worker`).
    """

    def __init__(self, executor: DaskExecutor, task: Task, jobs: int) -> None:
        if jobs < 1:
            raise ValueError(f"jobs must be at least 1, not {jobs}")
        assert task.spec.timeout is not None  # `Task.of` sets it
        self.timeout = task.spec.timeout
        self._executor = executor
        self._task = task
        self._jobs = jobs
        self._cond = threading.Condition()
        self._busy = 0
        self._futures: set[distributed.Future] = set()
        self._closed = False
        track(self)  # an interrupt stops it like an oracle, even while it waits for workers
        try:
            executor.prepare(task, lambda: self._closed)
        except BaseException:
            untrack(self)
            raise

    def set_timeout(self, seconds: float) -> None:
        """Send the runs that start from now on with `seconds` each (a worker keeps an
        oracle per spec: the next run makes one with this timeout)."""
        self.timeout = seconds
        self._task = replace(self._task, spec=replace(self._task.spec, timeout=seconds))

    def set_jobs(self, jobs: int) -> None:
        """Take up to `jobs` runs at once from now on."""
        with self._cond:
            self._jobs = max(1, jobs)
            self._cond.notify_all()

    def __enter__(self) -> ClusterRunner:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def run(self, content: bytes) -> Outcome:
        return self.run_with_output(content)[0]

    def run_with_output(self, content: bytes) -> tuple[Outcome, str]:
        """The outcome and output of one run on a worker; `OracleClosed` once stopped."""
        with self._cond:
            while not self._closed and self._busy >= self._jobs:
                self._cond.wait()
            if self._closed:
                raise OracleClosed
            self._busy += 1
            # Submitted under the lock: stop() cancels every future submitted before it.
            future = self._executor.submit(self._task, content)
            self._futures.add(future)
        tickets.test_under_way()
        try:
            return self._result(future)
        finally:
            with self._cond:
                self._futures.discard(future)
                self._busy -= 1
                self._cond.notify_all()

    def _result(self, future: distributed.Future) -> tuple[Outcome, str]:
        done = threading.Event()
        future.add_done_callback(lambda _: done.set())
        while not done.wait(_POLL_SECONDS):
            if self._closed:
                raise OracleClosed
            self._executor.look_at_workers()
        if self._closed:
            raise OracleClosed
        try:
            outcome, output = future.result()
        except CancelledError:
            raise UserError(
                f"the Dask scheduler at {self._executor.address} dropped a test run "
                "(it was restarted, or the connection was lost)"
            ) from None
        except distributed.KilledWorker as error:
            raise UserError(
                f"the test ended the Dask worker running it, {error.allowed_failures + 1} times "
                f"in a row (last on {error.last_worker.address}): it must not kill its parent "
                "process, nor use more memory than a worker may"
            ) from None
        return outcome, output

    def stop(self) -> None:
        """Cancel the unfinished runs and refuse new ones; idempotent, from any thread."""
        with self._cond:
            if self._closed:
                return
            self._closed = True
            futures = list(self._futures)
            self._cond.notify_all()
        if futures:
            self._executor.cancel(futures)

    def close(self) -> None:
        """Stop, and wait (boundedly) for the runs in flight to return."""
        self.stop()
        deadline = time.monotonic() + _SETTLE_SECONDS
        with self._cond:
            while self._busy:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
        untrack(self)


def _connect(choice: ExecutorChoice) -> distributed.Client:
    """A client of `choice`'s scheduler, or a `UserError` within about `CONNECT_SECONDS`.

    Dask bounds the TCP connection but not the handshake after it, so a port
    where something else listens would hold the client forever, and a Dask
    worker's port fails it with a traceback: a handshake of our own, with a
    deadline, asks who answers first.
    """
    try:
        with ThreadPoolExecutor(1) as pool:  # a loop of its own, whatever the caller runs
            server = pool.submit(asyncio.run, _identity(choice.scheduler)).result()
    except OSError:
        raise UserError(
            f"cannot reach the Dask scheduler at {choice} within {CONNECT_SECONDS:g} s "
            "(is `dask scheduler` running there?)"
        ) from None
    if server != "Scheduler":
        raise UserError(f"{choice} is not a Dask scheduler's address (a {server} answers there)")
    return distributed.Client(choice.scheduler, timeout=CONNECT_SECONDS, set_as_default=False)


async def _identity(address: str) -> str:
    """What kind of Dask server listens at `address` (`Scheduler`, `Worker`, `Nanny`)."""

    async def ask() -> str:
        comm = await distributed.comm.connect(address, timeout=CONNECT_SECONDS)
        try:
            await comm.write({"op": "identity", "reply": True})
            answer = await comm.read()
        finally:
            await comm.close()
        return str(answer.get("type")) if isinstance(answer, dict) else "server"

    return await asyncio.wait_for(ask(), CONNECT_SECONDS)


def _local_cluster(workers: int) -> distributed.LocalCluster:
    """A loopback cluster of `workers` single-threaded worker processes, and no dashboard.

    The scheduler's HTTP server (health checks) still starts: on 127.0.0.1 and
    a free port, not Dask's default 8787 on every interface. Each worker
    leaves the terminal's process group as it starts (`dask_setup`).
    """
    return distributed.LocalCluster(
        host="127.0.0.1",
        n_workers=workers,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
        silence_logs=_QUIET,
        preload=[__name__],
    )


def dask_setup(worker: distributed.Worker) -> None:
    """Dask's preload hook, run in each worker process of a LocalCluster as it starts.

    A Ctrl-C reaches the terminal's whole foreground process group, which the
    LocalCluster's worker processes would share with gitreduce: each would end
    with a traceback while the run is still stopping in order. In a session of
    their own they hear only gitreduce, which closes the cluster with the run
    (and Dask ends a worker whose parent died). The tests they run are in
    sessions of their own anyway (`Oracle`).
    """
    os.setsid()
