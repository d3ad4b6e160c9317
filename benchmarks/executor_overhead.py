"""What a test run costs on a Dask cluster beyond what it costs on local threads.

Runs a trivial test (`true`) and a waiting one (`sleep 0.2`) many times through
the runners the engine uses: the local `Oracle` with 1 and 2 threads, and the
Dask runner on a loopback LocalCluster (`--executor dask-local`) of 1 and 2
single-threaded workers, as many runs in flight as there are threads. Prints,
per configuration, the wall time per test (ms/test, over all runs), the time
a slot is busy per test (wall x slots / runs) and that minus the test's own
duration: the overhead of the path, per test.

    .venv/bin/python benchmarks/executor_overhead.py [--trivial-runs 200] [--sleep-runs 50]

Numbers depend on the machine and its load: on a loaded machine the
coordinator, scheduler and workers compete with the tests for the CPUs.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path

from gitreduce.oracle.executor import (
    Executor,
    LocalExecutor,
    opened_executor,
    parse_executor,
)
from gitreduce.oracle.spec import TestSpec

SLEEP = 0.2


@dataclass
class Figure:
    executor: str
    slots: int
    test: str
    runs: int
    wall: float
    test_seconds: float

    @property
    def ms_per_test(self) -> float:
        return 1000 * self.wall / self.runs

    @property
    def busy_ms(self) -> float:
        return 1000 * self.wall * self.slots / self.runs

    @property
    def overhead_ms(self) -> float:
        return self.busy_ms - 1000 * self.test_seconds


def measure(executor: Executor, slots: int, spec: TestSpec, runs: int) -> float:
    """Wall seconds for `runs` runs, `slots` at a time, after one warm-up run per slot."""
    with executor.runner(spec, slots) as runner, ThreadPoolExecutor(slots) as pool:
        list(pool.map(runner.run, [b"warm-up"] * slots))
        started = time.monotonic()
        outcomes = list(pool.map(runner.run, [b"x"] * runs))
        wall = time.monotonic() - started
    assert all(outcome.exit_code == 0 for outcome in outcomes), outcomes[:3]
    return wall


def configurations() -> list[tuple[str, int, AbstractContextManager[Executor]]]:
    return [
        ("local", 1, nullcontext(LocalExecutor())),
        ("local", 2, nullcontext(LocalExecutor())),
        ("dask-local", 1, opened_executor(parse_executor("dask-local"), workers=1)),
        ("dask-local", 2, opened_executor(parse_executor("dask-local"), workers=2)),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trivial-runs", type=int, default=200)
    parser.add_argument("--sleep-runs", type=int, default=50)
    options = parser.parse_args()
    sleep = f"sleep {SLEEP:g}"
    tests = [
        ("true", TestSpec("true", "case.c", timeout=30), 0.0, options.trivial_runs),
        (sleep, TestSpec(sleep, "case.c", timeout=30), SLEEP, options.sleep_runs),
    ]
    figures: list[Figure] = []
    with tempfile.TemporaryDirectory(prefix="executor-overhead-") as scratch:
        os.environ["TMPDIR"] = scratch  # the workers' scratch roots and Dask's own files
        tempfile.tempdir = None
        os.chdir(Path(scratch))
        for name, slots, opening in configurations():
            with opening as executor:
                for test, spec, seconds, runs in tests:
                    wall = measure(executor, slots, spec, runs)
                    figures.append(Figure(name, slots, test, runs, wall, seconds))
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")
    print(f"{'executor':<11} {'slots':>5} {'test':<10} {'runs':>5} {'ms/test':>8} "
          f"{'busy ms/test':>12} {'overhead ms':>11}")  # fmt: skip
    for figure in figures:
        print(
            f"{figure.executor:<11} {figure.slots:>5} {figure.test:<10} {figure.runs:>5} "
            f"{figure.ms_per_test:>8.1f} {figure.busy_ms:>12.1f} {figure.overhead_ms:>11.1f}"
        )


if __name__ == "__main__":
    main()
