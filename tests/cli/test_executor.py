"""End to end, `--executor`: the installed `git-reduce` reduces the same fixtures to the same
bytes whether its tests run on its own threads, on a running Dask cluster (`dask scheduler`
and two `dask worker`s on 127.0.0.1) or on a LocalCluster it starts; and every way a cluster
cannot serve is one `error:` line with exit 2.

Each run works on its own copy of the inputs, outside any repository, with a private verdict
cache: no run recalls another's verdicts, so every result comes from its own tests.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from support import increments_itself

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
SINGLE = FIXTURES / "sequence-point"
PAIR = FIXTURES / "pairs" / "sequence-point"
GIT_REDUCE = Path(sys.executable).parent / "git-reduce"

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")


def run_cli(*args: str | Path, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    scratch = cwd / "tmp"
    scratch.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, COLUMNS="1000", TMPDIR=str(scratch))
    env["XDG_CACHE_HOME"] = str(scratch / "xdg-cache")
    return subprocess.run(
        [str(GIT_REDUCE), *map(str, args)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def reduce_file(cwd: Path, executor: str) -> bytes:
    """The single-file fixture reduced with `executor`: the result's bytes."""
    cwd.mkdir(parents=True)
    shutil.copy(SINGLE / "variant.c", cwd / "variant.c")
    process = run_cli(
        "variant.c", "--test", f"{SINGLE / 'test.sh'} {{}}", "--output", "reduced.c",
        "--jobs", "2", "--executor", executor, "--json", cwd=cwd,
    )  # fmt: skip
    assert process.returncode == 0, process.stderr
    assert "Traceback" not in process.stderr
    summary = json.loads(process.stdout)
    assert summary["tests_run"] > 0
    assert summary["verified"]
    return (cwd / "reduced.c").read_bytes()


def reduce_pair(cwd: Path, executor: str) -> tuple[bytes, bytes]:
    """The pair fixture reduced with `executor`: the reduced seed's and variant's bytes."""
    cwd.mkdir(parents=True)
    for name in ("seed.c", "variant.c"):
        shutil.copy(PAIR / name, cwd / name)
    process = run_cli(
        "--seed", "seed.c", "--variant", "variant.c", "--test", PAIR / "test.sh",
        "--output", "out", "--jobs", "2", "--executor", executor, "--json", cwd=cwd,
    )  # fmt: skip
    assert process.returncode == 0, process.stderr
    assert "Traceback" not in process.stderr
    summary = json.loads(process.stdout)
    assert summary["tests_run"] > 0
    seed, variant = (cwd / summary[f"{side}_output"] for side in ("seed", "variant"))
    return seed.read_bytes(), variant.read_bytes()


@pytest.fixture(scope="module")
def local_single(tmp_path_factory) -> bytes:
    return reduce_file(tmp_path_factory.mktemp("local") / "single", "local")


def test_a_file_reduces_to_the_same_bytes_on_a_cluster(tmp_path, dask_address, local_single):
    assert increments_itself(local_single)
    assert reduce_file(tmp_path / "single", dask_address) == local_single


def test_a_pair_reduces_to_the_same_bytes_on_a_cluster(tmp_path, dask_address):
    local_pair = reduce_pair(tmp_path / "local", "local")
    seed, variant = local_pair
    assert increments_itself(variant) and not increments_itself(seed)
    assert reduce_pair(tmp_path / "pair", dask_address) == local_pair


def test_a_local_cluster_gives_the_same_result(tmp_path, local_single):
    """`dask-local` is the Dask runner on a cluster of its own: one reduction shows the
    cluster starts, serves and stops with the run."""
    assert reduce_file(tmp_path / "single", "dask-local") == local_single


def check_one_line_error(process: subprocess.CompletedProcess, *expected: str) -> None:
    assert process.returncode == 2, (process.returncode, process.stderr)
    lines = process.stderr.strip().splitlines()
    assert len(lines) == 1, process.stderr
    assert lines[0].startswith("error:"), lines
    for fragment in expected:
        assert fragment in lines[0], lines


def test_a_program_the_workers_lack_is_one_line(tmp_path, dask_address):
    shutil.copy(SINGLE / "variant.c", tmp_path / "variant.c")
    process = run_cli(
        "variant.c", "--test", "no-such-compiler-for-gitreduce {}", "--executor", dask_address,
        cwd=tmp_path,
    )  # fmt: skip
    check_one_line_error(
        process, "cannot run the test: no program no-such-compiler-for-gitreduce there"
    )


def test_an_unreachable_scheduler_is_one_line(tmp_path):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        address = f"dask://127.0.0.1:{probe.getsockname()[1]}"
    shutil.copy(SINGLE / "variant.c", tmp_path / "variant.c")
    process = run_cli(
        "variant.c", "--test", SINGLE / "test.sh", "--executor", address, cwd=tmp_path
    )
    check_one_line_error(process, f"cannot reach the Dask scheduler at {address}")


@pytest.mark.parametrize("value", ["threads", "tcp://127.0.0.1:8786"])
def test_an_unknown_executor_is_one_line_before_anything_runs(tmp_path, value):
    process = run_cli("nowhere.c", "--test", "true", "--executor", value, cwd=tmp_path)
    check_one_line_error(process, f"unknown executor {value!r}", "dask://HOST:PORT")
