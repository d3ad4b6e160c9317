"""Test runs on a real Dask cluster (`dask scheduler` and two `dask worker`s on 127.0.0.1):
the same verdicts, outputs and kills as the local oracle, stopping, and one clear error for
every way a cluster cannot run the test."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import dask
import distributed
import pytest
from dask_support import dask_cluster
from support import eventually, script, sleep_marker, sleeping

from gitreduce.core.errors import UserError
from gitreduce.core.outcome import Verdict
from gitreduce.oracle import cluster
from gitreduce.oracle.cluster import ClusterRunner, DaskExecutor
from gitreduce.oracle.executor import Executor, opened_executor, parse_executor
from gitreduce.oracle.runner import Oracle, OracleClosed
from gitreduce.oracle.spec import TestSpec

# Prints what the candidate says, then exits with the status on its last line.
ECHO_AND_EXIT = 'cat "$1"; exit "$(tail -n 1 "$1")"'


@pytest.fixture(scope="module")
def executor(dask_address: str) -> Iterator[Executor]:
    with opened_executor(parse_executor(dask_address)) as opened:
        yield opened


def test_the_executor_names_its_cluster(executor, dask_address):
    assert executor.address == dask_address
    assert executor.worker_threads() == 2


@pytest.mark.parametrize("relative", [False, True])
def test_verdicts_and_output_are_the_local_oracles(executor, tmp_path, monkeypatch, relative):
    """Every verdict kind, a failure signature and the output, with the test script named
    absolutely or relative to the current directory (made absolute before it travels)."""
    test = script(tmp_path / "test.sh", ECHO_AND_EXIT)
    monkeypatch.chdir(tmp_path)
    spec = TestSpec(f"{'./test.sh' if relative else test} {{}}", "dir/case.c", timeout=10)
    candidates = [
        b"0\n",
        b"case.c:3:1: error: expected ';'\n1\n",
        b"internal compiler error: in fold, at tree.c:42\n4\n",
        b"125\n",
        b"200\n",
    ]
    verdicts = []
    with Oracle(spec, jobs=2) as local, executor.runner(spec, jobs=2) as remote:
        for candidate in candidates:
            here, here_output = local.run_with_output(candidate)
            there, there_output = remote.run_with_output(candidate)
            assert (there.verdict, there.exit_code, there.signature) == (
                here.verdict,
                here.exit_code,
                here.signature,
            )
            assert there_output == here_output
            verdicts.append(there.verdict)
    assert verdicts == [Verdict.GOOD, Verdict.BAD, Verdict.BAD, Verdict.SKIP, Verdict.BROKEN]


def test_a_timeout_kills_the_test_on_its_worker(executor):
    marker = sleep_marker()
    spec = TestSpec(f"sleep 1000 {marker}", "case.c", timeout=1)
    with executor.runner(spec, jobs=1) as runner:
        assert runner.timeout == 1
        assert runner.run(b"x").verdict is Verdict.TIMEOUT
    assert eventually(lambda: not sleeping(marker))


def test_the_same_candidate_runs_every_time_it_is_asked(executor, tmp_path):
    """Tasks are not pure: a `--repeat` majority needs every run to be a run."""
    log = tmp_path / "runs"
    spec = TestSpec(f"echo run >> {log}", "case.c", timeout=10)
    with executor.runner(spec, jobs=2) as runner:
        for _ in range(3):
            runner.run(b"same")
    assert log.read_text().count("run") == 3


def test_stop_ends_the_runs_waiting_and_refuses_new_ones(executor, tmp_path):
    started = tmp_path / "started"
    spec = TestSpec(f"echo >> {started}; sleep 1", "case.c", timeout=10)
    errors: list[BaseException] = []
    with executor.runner(spec, jobs=2) as runner:

        def run() -> None:
            try:
                runner.run(b"x")
            except BaseException as error:
                errors.append(error)

        threads = [threading.Thread(target=run) for _ in range(2)]
        for thread in threads:
            thread.start()
        assert eventually(lambda: started.exists() and started.read_text().count("\n") == 2)
        runner.stop()
        for thread in threads:
            thread.join()
        with pytest.raises(OracleClosed):
            runner.run(b"y")
    assert len(errors) == 2
    assert all(isinstance(error, OracleClosed) for error in errors)


def test_a_program_no_worker_has_is_one_error_before_any_run(executor):
    spec = TestSpec("no-such-compiler-for-gitreduce -c {}", "case.c", timeout=10)
    with pytest.raises(UserError, match="cannot run the test: no program no-such-compiler"):
        executor.runner(spec, jobs=1)


def test_a_script_a_worker_lacks_is_reported_by_its_first_run(executor, tmp_path):
    """A worker that joins after the check meets the test first in a run: the same error."""
    test = script(tmp_path / "test.sh", "exit 0")
    with executor.runner(TestSpec(f"{test} {{}}", "case.c", timeout=10), jobs=1) as runner:
        test.unlink()
        with pytest.raises(UserError, match=f"cannot run the test: {test} does not exist there"):
            runner.run(b"x")


def test_a_script_a_worker_cannot_execute_is_one_error(executor, tmp_path):
    test = script(tmp_path / "test.sh", "exit 0")
    with executor.runner(TestSpec(f"{test} {{}}", "case.c", timeout=10), jobs=1) as runner:
        test.chmod(0o644)
        with pytest.raises(UserError, match="is not executable there"):
            runner.run(b"x")


def test_shell_builtins_need_no_program(executor):
    with executor.runner(TestSpec("exit 1", "case.c", timeout=10), jobs=1) as runner:
        assert runner.run(b"x").verdict is Verdict.BAD


def test_a_port_that_never_answers_is_one_error_naming_it():
    """Something listens there but says nothing: Dask alone would wait forever."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        address = f"dask://127.0.0.1:{silent.getsockname()[1]}"
        with (
            pytest.raises(UserError, match=f"cannot reach the Dask scheduler at {address}"),
            opened_executor(parse_executor(address)),
        ):
            pass


def test_a_workers_address_is_not_taken_for_the_schedulers(dask_address):
    scheduler = parse_executor(dask_address).scheduler
    with distributed.Client(scheduler, set_as_default=False) as client:
        worker = sorted(client.nthreads())[0].removeprefix("tcp://")
    with (
        pytest.raises(UserError, match=f"dask://{worker} is not a Dask scheduler's address"),
        opened_executor(parse_executor(f"dask://{worker}")),
    ):
        pass


def test_a_cluster_without_workers_is_waited_for_then_refused(monkeypatch, tmp_path):
    monkeypatch.setattr(cluster, "WORKER_WAIT_SECONDS", 1.0)
    notices: list[str] = []
    with (
        dask_cluster(tmp_path, workers=0) as address,
        opened_executor(parse_executor(address), notice=notices.append) as executor,
    ):
        assert executor.worker_threads() == 0
        with pytest.raises(UserError, match="no Dask worker joined"):
            executor.runner(TestSpec("exit 0", "case.c", timeout=10), jobs=1)
    assert notices == [f"waiting for a Dask worker to join {address} (up to 1 s)"]


def test_a_test_that_kills_its_worker_is_one_error():
    """Dask retries a task whose worker died; once it gives up, so does the run."""
    with (
        dask.config.set({"distributed.scheduler.allowed-failures": 0}),
        opened_executor(parse_executor("dask-local"), workers=1) as executor,
    ):
        assert isinstance(executor, DaskExecutor)
        runner = executor.runner(TestSpec("kill -9 $PPID", "case.c", timeout=10), jobs=1)
        assert isinstance(runner, ClusterRunner)
        with runner, pytest.raises(UserError, match="ended the Dask worker running it"):
            runner.run(b"x")


def test_a_relative_script_travels_as_an_absolute_path(tmp_path, monkeypatch):
    script(tmp_path / "test.sh", "exit 0")
    monkeypatch.chdir(tmp_path)
    task = cluster.Task.of(TestSpec("./test.sh {}", "case.c"))
    assert task.spec.command == f"{tmp_path / 'test.sh'} {{}}"
    assert task.files == (str(tmp_path / "test.sh"),)
    assert task.program is None
    assert task.spec.timeout == cluster.PROVISIONAL_TIMEOUT


def test_a_bare_program_is_looked_up_on_each_worker():
    task = cluster.Task.of(TestSpec("LC_ALL=C gcc -fsyntax-only {}", "case.c", timeout=5))
    assert (task.program, task.files, task.spec.timeout) == ("gcc", (), 5)
    assert cluster.Task.of(TestSpec('"$CC" {}', "case.c")).program is None


def test_missing_here_names_what_is_missing(tmp_path: Path):
    test = script(tmp_path / "test.sh", "exit 0")
    task = cluster.Task.of(TestSpec(f"{test} {{}}", "case.c"))
    assert cluster.missing_here(task) is None
    test.chmod(0o644)
    assert cluster.missing_here(task) == f"{test} is not executable there"
    test.unlink()
    assert cluster.missing_here(task) == f"{test} does not exist there"
