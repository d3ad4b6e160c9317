"""Executors: where the test runs, on this machine's threads or on a Dask cluster's workers.

Job: the one interface every session opens its test runners through
(`open_runner`), the process-wide executor it goes to (`using`), and the
choice a user names (`--executor local|dask-local|dask://HOST:PORT`).

Why an interface rather than a flag inside the oracle: the engine only ever
calls `run(content)` from its worker threads and always takes the
lowest-indexed success, so where the test runs changes how fast a reduction
goes, never what it finds. A runner is anything with the `Oracle`'s shape
(`TestRunner`); the local executor hands out `Oracle`s as before, with no
extra cost, and `gitreduce.oracle.cluster` sends each run to a Dask worker,
which runs it by the same rules with an `Oracle` of its own. `distributed` is
imported only when a Dask executor is opened, so a local run starts as fast
as ever.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Literal, Protocol

from gitreduce.core.errors import UserError
from gitreduce.core.outcome import Outcome
from gitreduce.oracle.runner import Oracle
from gitreduce.oracle.spec import TestSpec

Notice = Callable[[str], None]
_FORMS = "local, dask-local or dask://HOST:PORT"
_HOST_PORT = re.compile(r"(?P<host>\[[0-9A-Fa-f:.]+\]|[\w.-]+):(?P<port>\d{1,5})")


class TestRunner(Protocol):
    """What runs the test on candidates: `Oracle`'s interface.

    `run` and `run_with_output` are thread-safe and take up to `jobs` calls at
    once (`set_jobs` changes that while it runs); `stop()` (idempotent, from
    any thread) makes the runs in flight and every later one raise
    `OracleClosed`; `close()` stops and lets go of what the runner holds.
    `timeout` is the limit every run has; `set_timeout` changes it for the runs
    that start after (a runner made before calibration decided it).
    """

    timeout: float

    def run(self, content: bytes) -> Outcome: ...

    def run_with_output(self, content: bytes) -> tuple[Outcome, str]: ...

    def set_jobs(self, jobs: int) -> None: ...

    def set_timeout(self, seconds: float) -> None: ...

    def stop(self) -> None: ...

    def close(self) -> None: ...

    def __enter__(self) -> TestRunner: ...

    def __exit__(self, *exc_info: object) -> None: ...


# Not a pytest test class, despite the name; set outside the class body, where it would be
# one more member every runner must have to be a TestRunner.
TestRunner.__test__ = False  # type: ignore[attr-defined]


class Executor(Protocol):
    """Hands out test runners, all of them running their tests in one place.

    `address` is what another process passes as `--executor` to run its tests
    in the same place (None for the local executor: each process has its own
    threads); `worker_threads()` how many tests that place runs at once (0 for
    the local executor, whose runners run as many as they are asked to).
    """

    @property
    def address(self) -> str | None: ...

    def runner(self, spec: TestSpec, jobs: int) -> TestRunner: ...

    def worker_threads(self) -> int: ...


@dataclass(frozen=True)
class ExecutorChoice:
    """An executor as the user names it; `str()` gives that name back."""

    kind: Literal["local", "dask-local", "dask"]
    host: str = ""
    port: int = 0

    def __str__(self) -> str:
        return f"dask://{self.host}:{self.port}" if self.kind == "dask" else self.kind

    @property
    def scheduler(self) -> str:
        """The Dask scheduler's address, as Dask writes it (`tcp://HOST:PORT`)."""
        return f"tcp://{self.host}:{self.port}"


LOCAL = ExecutorChoice("local")


def parse_executor(text: str) -> ExecutorChoice:
    """`local`, `dask-local` or `dask://HOST:PORT`; anything else is a `UserError`."""
    value = text.strip()
    if value == "local":
        return ExecutorChoice("local")
    if value == "dask-local":
        return ExecutorChoice("dask-local")
    scheme, _, rest = value.partition("://")
    match = _HOST_PORT.fullmatch(rest)
    if scheme == "dask" and match is not None and 1 <= int(match["port"]) <= 65535:
        return ExecutorChoice("dask", match["host"], int(match["port"]))
    hint = ""
    if scheme == "tcp" and match is not None:
        hint = f" (a Dask scheduler at {value} is dask://{rest})"
    raise UserError(f"unknown executor {text!r}; use {_FORMS}{hint}")


class LocalExecutor:
    """Tests run by this process, in `Oracle`s: threads and subprocesses, as always."""

    address: str | None = None

    def runner(self, spec: TestSpec, jobs: int) -> TestRunner:
        return Oracle(spec, jobs)

    def worker_threads(self) -> int:
        return 0


@contextmanager
def opened_executor(
    choice: ExecutorChoice, *, workers: int | None = None, notice: Notice | None = None
) -> Iterator[Executor]:
    """The executor `choice` names, ready while the block runs.

    `dask-local` starts a `distributed.LocalCluster` on 127.0.0.1 with
    `workers` single-threaded worker processes (default: one per CPU) and
    stops it after the block; `dask://HOST:PORT` connects to a running
    scheduler (a `UserError` within seconds if it cannot be reached).
    `notice` hears what a run waits for (a cluster without workers).
    """
    if choice.kind == "local":
        yield LocalExecutor()
        return
    from gitreduce.oracle.cluster import DaskExecutor  # imports distributed: only for Dask

    with DaskExecutor.opened(choice, workers=workers, notice=notice) as executor:
        yield executor


_current: Executor = LocalExecutor()
_current_lock = threading.Lock()


def current_executor() -> Executor:
    """The executor `open_runner` uses: the local one unless `using` installed another."""
    return _current


@contextmanager
def using(executor: Executor) -> Iterator[Executor]:
    """Make `executor` the process's current one while the block runs."""
    global _current
    with _current_lock:
        previous, _current = _current, executor
    try:
        yield executor
    finally:
        with _current_lock:
            _current = previous


def open_runner(spec: TestSpec, jobs: int) -> TestRunner:
    """A runner for `spec`, taking up to `jobs` runs at once, from the current executor."""
    return _current.runner(spec, jobs)
