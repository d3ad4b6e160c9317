"""A real Dask cluster for the tests: a `dask scheduler` and `dask worker` processes on
127.0.0.1, started with the stock command lines a user would type, on free ports."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import distributed

START_SECONDS = 60.0  # a loaded two-core machine starts a worker in seconds, not minutes


@contextmanager
def dask_cluster(directory: Path, workers: int = 2) -> Iterator[str]:
    """`dask scheduler` and `workers` single-threaded `dask worker`s, all in `directory`
    (their logs, scratch space and the tests' $TMPDIR); yields `dask://127.0.0.1:PORT`."""
    directory.mkdir(parents=True, exist_ok=True)
    scheduler_file = directory / "scheduler.json"
    scheduler_file.unlink(missing_ok=True)  # an earlier cluster's would name a dead scheduler
    env = {**os.environ, "TMPDIR": str(directory)}
    loopback = ["--host", "127.0.0.1", "--dashboard-address", "127.0.0.1:0", "--no-dashboard"]
    with ExitStack() as stack:
        scheduler = stack.enter_context(
            _process(
                ["scheduler", "--port", "0", "--scheduler-file", str(scheduler_file), *loopback],
                directory / "scheduler.log",
                env,
            )
        )
        deadline = time.monotonic() + START_SECONDS
        while not scheduler_file.is_file() or not scheduler_file.read_text().strip():
            assert scheduler.poll() is None, (directory / "scheduler.log").read_text()
            assert time.monotonic() < deadline, "the scheduler did not start"
            time.sleep(0.05)
        address = json.loads(scheduler_file.read_text())["address"]
        for index in range(workers):
            local = directory / f"worker-{index}"
            worker = ["worker", address, "--nthreads", "1", "--local-directory", str(local)]
            stack.enter_context(_process([*worker, *loopback], local.with_suffix(".log"), env))
        if workers:
            with distributed.Client(address, set_as_default=False, timeout=START_SECONDS) as c:
                c.wait_for_workers(workers, timeout=START_SECONDS)
        yield "dask://" + address.removeprefix("tcp://")


@contextmanager
def _process(args: list[str], log: Path, env: dict[str, str]) -> Iterator[subprocess.Popen]:
    """`python -m dask ARGS`, ended with SIGTERM (then SIGKILL) when the block ends."""
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "dask", *args],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=log.parent,
            env=env,
        )
    try:
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
