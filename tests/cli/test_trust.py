"""End to end: a verdict cache shared by push and fetch cannot change a result.

Real repositories, real clones and fetches of `refs/reduce/*`, the installed
`git-reduce`, real gcc. The fixture is fixtures/sequence-point (see
tests/cli/test_app.py); its test script is named by an absolute path, so every
clone computes the same test fingerprint and reads the fetched cache.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pygit2
import pytest
from pygit2.enums import FileMode
from support import git

from gitreduce.core.keys import blob_id
from gitreduce.core.outcome import Outcome, Verdict
from gitreduce.git.cache_format import (
    BATCHES,
    CACHE_REF_PREFIX,
    VERDICTS,
    cache_signature,
    new_batch_name,
    parse_records,
    record_blobs,
    write_batch,
)
from gitreduce.git.store import Store, verdict_cache
from gitreduce.oracle.runner import Oracle
from gitreduce.oracle.spec import TestSpec

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "sequence-point"
TEST = str(FIXTURE / "test.sh")
GIT_REDUCE = Path(sys.executable).parent / "git-reduce"

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")


def reduce(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    scratch = repo.parent / "tmp"
    scratch.mkdir(exist_ok=True)
    env = {key: value for key, value in os.environ.items() if not key.startswith("GIT_")}
    env.update(TMPDIR=str(scratch), XDG_CACHE_HOME=str(repo.parent / "xdg"), COLUMNS="1000")
    return subprocess.run(
        [str(GIT_REDUCE), "variant.c", "--test", TEST, "--json", "--force", *args],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def summary(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def result(repo: Path) -> bytes:
    return git(repo, "show", "reduce/variant:variant.c").stdout.encode()


def reproduces(text: bytes, where: Path) -> bool:
    path = where / "check.c"
    path.write_bytes(text)
    return subprocess.run([TEST, str(path)], capture_output=True).returncode == 1


def origin_repo(path: Path) -> Path:
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    shutil.copy(FIXTURE / "variant.c", path / "variant.c")
    git(path, "add", "variant.c")
    git(path, "commit", "-q", "-m", "the failing program")
    return path


def clone(origin: Path, path: Path, *, fetch_cache: bool) -> Path:
    git(origin.parent, "clone", "-q", str(origin), str(path))
    if fetch_cache:
        git(path, "fetch", "-q", "origin", "refs/reduce/*:refs/reduce/*")
    return path


@pytest.fixture(scope="module")
def cold(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """An honest origin that reduced the fixture once, with no cache to start from."""
    origin = origin_repo(tmp_path_factory.mktemp("cold") / "origin")
    return origin, summary(reduce(origin, "--jobs", "1"))


def test_a_rerun_on_its_own_cache_runs_no_test(cold):
    origin, first = cold
    assert first["verified"] is True and first["tests_by_pass"]["verify"] == 3
    again = summary(reduce(origin, "--jobs", "1"))
    assert again["tests_run"] == 0 and again["verified"] is True
    assert again["tokens_after"] == first["tokens_after"]
    assert (again["foreign_verdicts_used"], again["confirmations"]) == (0, 0)


def test_a_fetched_honest_cache_costs_only_the_confirmations(cold, tmp_path):
    """Every rejection is free; each accepted candidate and the result's re-verification
    are run here."""
    origin, first = cold
    copy = clone(origin, tmp_path / "clone", fetch_cache=True)
    fetched = summary(reduce(copy, "--jobs", "1"))
    assert result(copy) == result(origin)
    assert fetched["warnings"] == [] and fetched["contradicted"] == 0
    assert 0 < fetched["confirmations"] < first["tests_run"] / 4
    assert fetched["foreign_verdicts_used"] > fetched["confirmations"]
    assert fetched["tests_run"] == fetched["confirmations"] + 3  # + the re-verification
    again = summary(reduce(copy, "--jobs", "1"))  # the confirmations made those verdicts local
    assert again["tests_run"] == 0 and again["confirmations"] == 0


def poison(origin: Path, *, edit: bool) -> None:
    """Make every verdict of the origin's cache say "bad, the original way", including one
    for the empty file, as a stranger could: by editing the records (`edit`), or by
    writing them through the real cache of the origin's repository, signed there (a
    repository that never ran the test, so the lies are the first verdicts it holds)."""
    repo = pygit2.Repository(str(origin))
    original = (origin / "variant.c").read_bytes()
    spec = TestSpec(command=TEST, relative_path="variant.c")
    with Oracle(spec, 1) as oracle:
        signature = oracle.run(original).signature
    ref = CACHE_REF_PREFIX + spec.fingerprint()
    keys = {blob_id(b"").encode(), blob_id(original).encode()}
    if edit:
        tip = repo.revparse_single(ref).peel(pygit2.Commit)
        for oid in record_blobs(tip.tree):
            keys.update(parse_records(repo[oid].data))
        lie = json.dumps(["bad", 1, 0.01, signature]).encode()
        batch = write_batch(repo, lambda oid, size, unique: oid, dict.fromkeys(keys, lie), {}, b"")
        batches = repo.TreeBuilder()
        batches.insert(new_batch_name(), batch, FileMode.TREE)
        root = repo.TreeBuilder()
        root.insert(BATCHES, batches.write(), FileMode.TREE)
        stamp = cache_signature()
        commit = repo.create_commit(None, stamp, stamp, "edited\n", root.write(), [])
        repo.references.create(ref, commit, force=True)
        return
    warnings: list[str] = []
    with verdict_cache(Store(repo, users=True), spec, warnings) as cache:
        for key in keys:
            cache.put(key.decode(), Outcome(Verdict.BAD, 1, 0.01, signature))
    assert warnings == []


@pytest.mark.parametrize("edit", [True, False], ids=["edited-records", "signed-elsewhere"])
def test_a_poisoned_cache_cannot_change_the_result(cold, tmp_path, edit):
    """Before: `reduced: 263 → 0 tokens; 0 tests, 1 cached`, exit 0, from the lie alone."""
    honest, first = cold
    attacker = clone(honest, tmp_path / "attacker", fetch_cache=edit)
    poison(attacker, edit=edit)
    victim = clone(attacker, tmp_path / "victim", fetch_cache=True)
    done = reduce(victim, "--jobs", "2")
    poisoned = summary(done)
    assert result(victim) == result(honest)  # what a run without any cache gives
    assert poisoned["tokens_after"] == first["tokens_after"] > 0
    assert reproduces(result(victim), tmp_path)
    assert poisoned["verified"] is True and poisoned["contradicted"] >= 1
    assert poisoned["warnings"] == [
        f"{poisoned['contradicted']} cached verdict"
        + ("s" if poisoned["contradicted"] > 1 else "")
        + " from elsewhere "
        + ("were" if poisoned["contradicted"] > 1 else "was")
        + " contradicted by local runs; the result is based on local runs only"
    ]
    assert "contradicted by local runs" in done.stderr


def test_a_fetched_cache_built_to_break_the_reader_is_ignored(cold, tmp_path):
    """Records a stranger wrote to crash the reader: JSON nested too deep to parse, a number
    too large for a float, a key that is not hex, and a tree where records go. Before: every
    run of the test stopped with an internal error (RecursionError, OverflowError,
    AttributeError) until the user found and deleted the ref."""
    honest, first = cold
    attacker = clone(honest, tmp_path / "attacker", fetch_cache=False)
    repo = pygit2.Repository(str(attacker))
    spec = TestSpec(command=TEST, relative_path="variant.c")
    key = blob_id((attacker / "variant.c").read_bytes()).encode()
    records = b"".join(
        [
            key + b" " + b"[" * 200_000 + b"\n",
            key + b' [2,"bad",1,' + b"9" * 400 + b',null,0,"x","aaaaaaaaaaaa","00"]\n',
            b"\xff" * 40 + b' ["bad", 1, 0.01, null]\n',
        ]
    )
    stamp = cache_signature()
    shard = repo.TreeBuilder()
    shard.insert("ab", repo.create_blob(records), FileMode.BLOB)
    batch = repo.TreeBuilder()
    batch.insert(VERDICTS, shard.write(), FileMode.TREE)  # a tree where the records go
    batches = repo.TreeBuilder()
    batches.insert(new_batch_name(), batch.write(), FileMode.TREE)
    root = repo.TreeBuilder()
    root.insert(BATCHES, batches.write(), FileMode.TREE)
    root.insert(VERDICTS, shard.write(), FileMode.TREE)
    commit = repo.create_commit(None, stamp, stamp, "crafted\n", root.write(), [])
    repo.references.create(CACHE_REF_PREFIX + spec.fingerprint(), commit, force=True)
    second = repo.TreeBuilder()
    second.insert(VERDICTS, repo.create_blob(records), FileMode.BLOB)
    other = repo.TreeBuilder()
    other.insert(new_batch_name(), second.write(), FileMode.TREE)
    top = repo.TreeBuilder()
    top.insert(BATCHES, other.write(), FileMode.TREE)
    commit = repo.create_commit(None, stamp, stamp, "crafted\n", top.write(), [])
    repo.references.create("refs/reduce/remotes/x/cache/" + spec.fingerprint(), commit)
    victim = clone(attacker, tmp_path / "victim", fetch_cache=True)
    done = reduce(victim, "--jobs", "1")
    assert result(victim) == result(honest)
    assert summary(done)["tokens_after"] == first["tokens_after"]
