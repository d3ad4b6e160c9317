"""The executor interface: the names a user gives, the local executor every run uses unless
told otherwise, the process-wide current executor, and a LocalCluster for a run."""

from __future__ import annotations

import subprocess
import sys

import pytest

from gitreduce.core.errors import UserError
from gitreduce.core.outcome import Outcome, Verdict
from gitreduce.oracle.executor import (
    ExecutorChoice,
    LocalExecutor,
    current_executor,
    open_runner,
    opened_executor,
    parse_executor,
    using,
)
from gitreduce.oracle.runner import Oracle
from gitreduce.oracle.spec import TestSpec

SPEC = TestSpec("exit 1", "case.c", timeout=10)


@pytest.mark.parametrize(
    ("text", "choice"),
    [
        ("local", ExecutorChoice("local")),
        ("dask-local", ExecutorChoice("dask-local")),
        (" dask-local ", ExecutorChoice("dask-local")),
        ("dask://127.0.0.1:8786", ExecutorChoice("dask", "127.0.0.1", 8786)),
        ("dask://node-1.example:1", ExecutorChoice("dask", "node-1.example", 1)),
        ("dask://[::1]:8786", ExecutorChoice("dask", "[::1]", 8786)),
    ],
)  # fmt: skip
def test_the_accepted_names(text, choice):
    assert parse_executor(text) == choice
    assert str(choice) == text.strip()


def test_a_dask_choice_gives_the_schedulers_address():
    assert parse_executor("dask://10.0.0.5:8786").scheduler == "tcp://10.0.0.5:8786"


@pytest.mark.parametrize(
    "text",
    [
        "",
        "threads",
        "dask",
        "dask://",
        "dask://host",
        "dask://host:",
        "dask://:8786",
        "dask://host:0",
        "dask://host:65536",
        "dask://host:port",
        "dask://host:8786/path",
        "http://host:8786",
    ],
)
def test_anything_else_is_one_error_naming_the_accepted_forms(text):
    with pytest.raises(UserError) as raised:
        parse_executor(text)
    assert str(raised.value) == (
        f"unknown executor {text!r}; use local, dask-local or dask://HOST:PORT"
    )


def test_a_dask_address_as_dask_prints_it_is_pointed_at_its_spelling():
    with pytest.raises(UserError, match=r"a Dask scheduler at tcp://h:8786 is dask://h:8786"):
        parse_executor("tcp://h:8786")


def test_the_local_executor_hands_out_oracles():
    with opened_executor(parse_executor("local")) as executor:
        assert isinstance(executor, LocalExecutor)
        assert executor.address is None
        assert executor.worker_threads() == 0
        with executor.runner(SPEC, jobs=2) as runner:
            assert isinstance(runner, Oracle)
            assert runner.run(b"x").verdict is Verdict.BAD


class Recording:
    """An executor of the test's own: local oracles, each spec it was asked for recorded."""

    address = "recording"

    def __init__(self) -> None:
        self.asked: list[tuple[TestSpec, int]] = []

    def runner(self, spec: TestSpec, jobs: int) -> Oracle:
        self.asked.append((spec, jobs))
        return Oracle(spec, jobs)

    def worker_threads(self) -> int:
        return 0


def test_open_runner_goes_to_the_current_executor_while_it_is_in_use():
    assert isinstance(current_executor(), LocalExecutor)
    recording = Recording()
    with using(recording):
        assert current_executor() is recording
        with open_runner(SPEC, 3) as runner:
            assert isinstance(runner.run(b"x"), Outcome)
    assert recording.asked == [(SPEC, 3)]
    assert isinstance(current_executor(), LocalExecutor)
    with open_runner(SPEC, 1) as runner:
        assert isinstance(runner, Oracle)


def test_using_gives_the_previous_executor_back_after_an_error():
    with pytest.raises(RuntimeError), using(Recording()):
        raise RuntimeError
    assert isinstance(current_executor(), LocalExecutor)


def test_a_local_cluster_runs_tests_while_the_block_runs(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    with opened_executor(parse_executor("dask-local"), workers=2) as executor:
        assert executor.address is not None
        assert executor.address.startswith("dask://127.0.0.1:")
        assert executor.worker_threads() == 2
        with using(executor), open_runner(SPEC, jobs=2) as runner:
            assert runner.run(b"x").verdict is Verdict.BAD


def test_local_runs_do_not_import_distributed():
    """`git reduce` starts as fast as before: Dask is loaded only for a Dask executor."""
    program = (
        "import sys\n"
        "from gitreduce.oracle.executor import open_runner, opened_executor, parse_executor\n"
        "from gitreduce.oracle.spec import TestSpec\n"
        "with opened_executor(parse_executor('local')):\n"
        "    with open_runner(TestSpec('exit 0', 'case.c', timeout=10), 1) as runner:\n"
        "        runner.run(b'x')\n"
        "import gitreduce.cli.app\n"
        "print('distributed' in sys.modules)\n"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=True
    )
    assert loaded.stdout.strip() == "False"
