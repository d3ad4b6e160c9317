"""The triage fixture: a repository of fuzzer findings built on demand, judged by real gcc."""

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from gitreduce.oracle.signature import extract_signature

BUILDER = Path(__file__).resolve().parents[2] / "benchmarks" / "triage" / "build_findings_repo.py"

# What gcc 12 says, normalised: one line per bug, naming no identifier or value.
SIGNATURES = {
    "div-by-zero": "error: division by zero [-Werror=div-by-zero]",
    "shift-count-overflow": (
        "error: left shift count >= width of type [-Werror=shift-count-overflow]"
    ),
    "tautological-compare": (
        "error: self-comparison always evaluates to true [-Werror=tautological-compare]"
    ),
    "unused-value": "error: statement with no effect [-Werror=unused-value]",
}


def build(*args: str | Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, str(BUILDER), *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, check=False)


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
    ).stdout.strip()


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, str]]]:
    root = tmp_path_factory.mktemp("triage")
    done = build(root / "repo", "--findings", "6", "--manifest", root / "manifest.json")
    assert done.returncode == 0, done.stderr
    return root / "repo", json.loads((root / "manifest.json").read_text())


def judge(command: str, scratch: Path, path: str, text: str) -> tuple[int, str | None]:
    """The configured test on `text`, placed under its path in a scratch dir as gitreduce does."""
    (scratch / path).parent.mkdir(parents=True, exist_ok=True)
    (scratch / path).write_text(text)
    argv = [path if word == "{}" else word for word in shlex.split(command)]
    done = subprocess.run(argv, cwd=scratch, capture_output=True, text=True, check=False)
    return done.returncode, extract_signature(done.stdout + done.stderr, candidate=path)


def test_each_finding_is_a_seed_commit_then_a_one_file_mutation_with_the_trailer(built):
    repo, manifest = built
    history = git(repo, "log", "--reverse", "--format=%H %P").splitlines()
    setup, *pairs = [line.split() for line in history]
    assert len(setup) == 1 and git(repo, "ls-tree", "-r", "--name-only", setup[0]).split() == [
        "tests/gcc-werror.sh"
    ]
    assert len(pairs) == 2 * len(manifest) == 12
    for finding, (seed, seed_parent), (variant, variant_parent) in zip(
        manifest, pairs[::2], pairs[1::2], strict=True
    ):
        assert (finding["seed"], finding["variant"]) == (seed, variant) and variant_parent == seed
        assert git(repo, "diff", "--name-status", seed_parent, seed) == f"A\t{finding['path']}"
        assert git(repo, "diff", "--name-status", seed, variant) == f"M\t{finding['path']}"
        trailers = "--format=%(trailers:key=Reduce-Test,valueonly)"
        assert git(repo, "log", "-1", trailers, seed) == ""
        assert git(repo, "log", "-1", trailers, variant) == "gcc-werror"
        assert git(repo, "log", "-1", "--format=%B", variant).endswith(
            "\n\nReduce-Test: gcc-werror"
        )
    command = git(repo, "config", "--get", "gitreduce.test.gcc-werror.command")
    assert command == f"{shlex.quote(str((repo / 'tests/gcc-werror.sh').resolve()))} {{}}"


def test_seeds_pass_and_variants_fail_with_their_bugs_signature(built, tmp_path):
    repo, manifest = built
    command = git(repo, "config", "--get", "gitreduce.test.gcc-werror.command")
    assert set(SIGNATURES) == {finding["bug"] for finding in manifest}
    for finding in manifest:
        path = finding["path"]
        seed = git(repo, "show", f"{finding['seed']}:{path}") + "\n"
        variant = git(repo, "show", f"{finding['variant']}:{path}") + "\n"
        assert judge(command, tmp_path / "seed", path, seed) == (0, None)
        assert judge(command, tmp_path / "variant", path, variant) == (
            1,
            SIGNATURES[finding["bug"]],
        )


def test_the_same_arguments_give_the_same_commit_ids_and_another_seed_others(built, tmp_path):
    repo, manifest = built
    assert (
        build(tmp_path / "again", "--findings", "6", "--manifest", tmp_path / "m").returncode == 0
    )
    assert json.loads((tmp_path / "m").read_text()) == manifest
    assert git(tmp_path / "again", "rev-parse", "HEAD") == git(repo, "rev-parse", "HEAD")
    assert build(tmp_path / "other", "--findings", "6", "--seed", "1").returncode == 0
    assert git(tmp_path / "other", "rev-parse", "HEAD") != git(repo, "rev-parse", "HEAD")


def test_a_variants_directory_holds_one_seed_and_checked_variants(tmp_path):
    done = build(
        "--variants-dir", tmp_path / "dir", "--findings", "5", "--sleep", "0.01", "--check"
    )
    assert done.returncode == 0, done.stderr
    assert "every variant fails with its bug's signature" in done.stdout
    assert sorted(p.name for p in (tmp_path / "dir").iterdir()) == [
        "gcc-werror.sh",
        "seed.c",
        "variants",
    ]
    assert len(list((tmp_path / "dir" / "variants").glob("f*.c"))) == 5
    assert "sleep 0.01" in (tmp_path / "dir" / "gcc-werror.sh").read_text()


def test_a_non_empty_destination_and_too_few_findings_are_refused(tmp_path):
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "file").write_text("x\n")
    refused = build(tmp_path / "taken")
    assert refused.returncode == 2 and "exists and is not an empty directory" in refused.stderr
    refused = build(tmp_path / "new", "--findings", "3")
    assert refused.returncode == 2 and "--findings must be at least 4" in refused.stderr
    assert not (tmp_path / "new").exists()


def alive(pid: int) -> bool:
    """Whether `pid` is a live process (a zombie waiting for its reaper is not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.parametrize("lean", [True, False])
def test_the_scaling_benchmarks_cluster_has_its_workers_and_stops_them(tmp_path, lean):
    from distributed import Client
    from triage.scaling import cluster

    with cluster(2, tmp_path, lean=lean) as address, Client(address, timeout=30) as client:
        assert address.startswith("tcp://127.0.0.1:")
        assert [w["nthreads"] for w in client.scheduler_info()["workers"].values()] == [1, 1]
        pids = [*client.run(os.getpid).values(), client.run_on_scheduler(os.getpid)]
        assert all(alive(pid) for pid in pids)
    assert not any(alive(pid) for pid in pids)
    assert sorted(path.name for path in tmp_path.iterdir()) == [
        "dask-2-0.log",
        "dask-2-1.log",
        "dask-2-2.log",
    ]
