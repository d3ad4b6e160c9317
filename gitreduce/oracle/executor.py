"""Where tests run: this version knows only the local executor (threads and processes here).

`opened_executor` yields an `Executor` whose `runner(spec, jobs)` is the
oracle a session tests with; `address` names a cluster that child
reductions can join (None: they test locally too).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from gitreduce.core.errors import UserError
from gitreduce.oracle.runner import Oracle
from gitreduce.oracle.spec import TestSpec


@dataclass(frozen=True)
class ExecutorChoice:
    kind: str


def parse_executor(text: str) -> ExecutorChoice:
    if text != "local":
        raise UserError(f"unknown executor {text!r}; use local")
    return ExecutorChoice(text)


class Executor:
    address: str | None = None

    def runner(self, spec: TestSpec, jobs: int) -> Oracle:
        return Oracle(spec, jobs)

    def worker_threads(self) -> int | None:
        return None


@contextmanager
def opened_executor(choice: ExecutorChoice, *, workers: int | None = None) -> Iterator[Executor]:
    yield Executor()
