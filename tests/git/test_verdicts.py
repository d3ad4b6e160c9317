"""The git verdict cache as the engine uses it: remember, put, get, recording, threads,
background checkpoints, on real repositories."""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pygit2
import pytest
from support import FINGERPRINT, fsck_clean, git, make_user_repo, outcome_for, quiet_cache

from gitreduce.core import fileset
from gitreduce.core.engine import Engine
from gitreduce.core.keys import blob_id, candidate_key
from gitreduce.core.outcome import Outcome, Verdict
from gitreduce.git.cache_format import (
    BATCHES,
    CACHE_REF_PREFIX,
    VERDICTS,
    parse_records,
    records_of,
)
from gitreduce.git.verdicts import GitVerdictCache
from gitreduce.oracle.runner import Oracle
from gitreduce.oracle.spec import TestSpec


@pytest.fixture
def bare(tmp_path: Path) -> pygit2.Repository:
    return pygit2.init_repository(str(tmp_path / "store.git"), bare=True)


def test_verdicts_round_trip_through_the_ref(bare):
    cache = quiet_cache(bare)
    contents = [f"candidate {i}\n".encode() for i in range(20)]
    for index, content in enumerate(contents):
        key = cache.remember(content)
        assert key == blob_id(content)
        cache.put(key, outcome_for(index))
    assert cache.get(blob_id(contents[3])) == outcome_for(3)
    assert cache.get(blob_id(b"never tested")) is None
    cache.close()
    assert bare.references.get(CACHE_REF_PREFIX + FINGERPRINT) is not None

    again = quiet_cache(pygit2.Repository(bare.path))
    assert again.loaded == 20
    for index, content in enumerate(contents):
        assert again.get(blob_id(content)) == outcome_for(index)
        assert blob_id(content) in bare  # the candidate itself is kept
    tree = bare.revparse_single(CACHE_REF_PREFIX + FINGERPRINT).peel(pygit2.Tree)
    assert "README" in tree
    (batch,) = tree["batches"]
    assert batch[blob_id(contents[0])[:16]].id == pygit2.Oid(hex=blob_id(contents[0]))
    assert len(batch["verdicts"].data.splitlines()) == 20
    again.close()


def test_put_with_content_and_recording_runner(bare):
    cache = quiet_cache(bare)
    cache.put(blob_id(b"one"), outcome_for(0), content=b"one")
    runner = cache.recording(lambda content: outcome_for(1))
    engine = Engine(runner, lambda outcome: outcome.verdict is Verdict.BAD, jobs=2, cache=cache)
    try:
        assert engine.test(b"two") == outcome_for(1)
        assert engine.test(b"two") == outcome_for(1)
        assert engine.stats.tests_run == 1 and engine.stats.cache_hits == 1
    finally:
        engine.close()
    cache.close()
    assert blob_id(b"one") in bare and blob_id(b"two") in bare
    again = quiet_cache(bare)
    assert again.get(blob_id(b"two")) == outcome_for(1)
    assert again.get(blob_id(b"one")) == outcome_for(0)
    again.close()


def test_a_tested_candidate_is_written_by_the_background_thread_not_the_tests(bare):
    cache = quiet_cache(bare)
    runner = cache.recording(lambda content: outcome_for(1))
    runner(b"tested")
    assert blob_id(b"tested") not in bare  # the next test does not wait for the write
    cache.put(blob_id(b"tested"), outcome_for(1))
    cache.close()
    assert blob_id(b"tested") in bare
    assert quiet_cache(bare).get(blob_id(b"tested")) == outcome_for(1)


def test_tested_candidates_are_written_in_packs_never_as_loose_files(bare):
    """A checkpoint writes the candidates it names as one small pack (two files, not one per
    candidate); packing folds the small packs into one and deletes them."""
    objects = Path(bare.path) / "objects"
    cache = GitVerdictCache(bare, FINGERPRINT, checkpoint_seconds=0.0, checkpoint_verdicts=10)
    runner = cache.recording(lambda content: outcome_for(len(content)))
    tested = [f"int candidate_{index};\n".encode() * (1 + index % 7) for index in range(100)]
    for start in range(0, len(tested), 10):
        for content in tested[start : start + 10]:
            cache.put(blob_id(content), runner(content))
        _eventually(lambda: not cache._memory.pending)
    small = sorted((objects / "pack").glob("pack-*.pack"))
    assert len(small) >= 2, small  # one a checkpoint
    for content in tested:
        key = blob_id(content)
        assert key in bare and not (objects / key[:2] / key[2:]).exists()
    cache.close()
    packed = sorted((objects / "pack").glob("pack-*.pack"))
    assert len(packed) == 1 and not set(packed) & set(small)
    assert not list((objects / "pack").glob("tmp_*"))
    fsck_clean(Path(bare.path))
    again = quiet_cache(pygit2.Repository(bare.path))
    for content in tested:
        assert again.get(blob_id(content)) == outcome_for(len(content))
        assert pygit2.Repository(bare.path)[blob_id(content)].data == content


def _on_eight_threads(work: Callable[[int], None]) -> None:
    """`work(0)` ... `work(7)` at once, each on a thread of its own; back when all are done."""
    threads = [threading.Thread(target=work, args=(worker,)) for worker in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def _eventually(condition: Callable[[], bool], seconds: float = 30) -> None:
    """Wait until `condition()` holds, or `seconds` have passed: what the background thread
    does, it does when a loaded machine lets it."""
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)


def _blobs_below(tree: pygit2.Tree) -> set[str]:
    found: set[str] = set()
    for entry in tree:
        if entry.type_str == "tree":
            found |= _blobs_below(tree[entry.name])
        else:
            found.add(str(entry.id))
    return found


def test_every_checkpoint_holds_the_candidates_its_verdicts_name(bare):
    # Checkpoints as often as they can go, never sealed: the tip is always a checkpoint,
    # made while tests end and verdicts arrive on eight threads.
    cache = GitVerdictCache(
        bare, FINGERPRINT, checkpoint_seconds=0.0, checkpoint_verdicts=3, seal_after=10**6
    )

    def test(content: bytes) -> Outcome:
        time.sleep(0.002)  # a test's run: the checkpoints go on meanwhile
        return outcome_for(len(content))

    runner = cache.recording(test)
    tips: list[pygit2.Oid] = []
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            reference = bare.references.get(CACHE_REF_PREFIX + FINGERPRINT)
            if reference is not None and (not tips or tips[-1] != reference.target):
                tips.append(reference.target)
            time.sleep(0.001)

    def work(worker: int) -> None:
        for index in range(30):
            content = f"worker {worker} candidate {index}\n".encode()
            cache.put(blob_id(content), runner(content))

    watcher = threading.Thread(target=watch)
    watcher.start()
    _on_eight_threads(work)
    _eventually(lambda: not cache._memory.pending)
    done.set()
    watcher.join()
    assert len(tips) > 3
    for tip in tips:
        commit = bare.get(tip)
        if commit is None:  # a checkpoint the next one replaced and deleted
            continue
        tree = commit.peel(pygit2.Tree)
        blobs = _blobs_below(tree)
        for batch in tree[BATCHES]:
            if VERDICTS not in batch:
                continue
            for key in parse_records(records_of(batch[VERDICTS])):
                assert key.decode() in blobs, f"{key!r} has a verdict in {tip}, no candidate"
    cache.close()


def test_a_second_engine_run_executes_no_test_even_after_gc(tmp_path):
    """The engine, the real oracle (a process per candidate) and the git cache together."""
    repo_path = make_user_repo(tmp_path / "work")
    script = tmp_path / "has-bug.sh"
    script.write_text('#!/bin/sh\ngrep -q BUG "$GITREDUCE_FILE" && exit 1\nexit 0\n')
    script.chmod(0o755)
    spec = TestSpec(command=str(script), relative_path="prog.c", timeout=10.0)
    candidates = [f"line {i}\n".encode() * 5 + (b"BUG\n" if i >= 5 else b"") for i in range(8)]

    def run_once() -> tuple[int, tuple[int, bytes] | None]:
        cache = GitVerdictCache(pygit2.Repository(str(repo_path)), spec.fingerprint())
        with Oracle(spec, jobs=2) as oracle:
            engine = Engine(
                cache.recording(oracle.run),
                lambda outcome: outcome.verdict is Verdict.BAD,
                jobs=2,
                cache=cache,
            )
            try:
                found = engine.first_success(candidates, smaller_than=10**6, label="test")
            finally:
                engine.close()
        cache.close()
        return engine.stats.tests_run, found

    tests, found = run_once()
    assert tests >= 6 and found == (5, candidates[5])
    assert run_once() == (0, found)
    git(repo_path, "gc", "--quiet", "--prune=now")
    assert run_once() == (0, found)
    fsck_clean(repo_path)


def test_a_verdict_without_its_blob_is_still_kept(bare):
    cache = quiet_cache(bare)
    key = blob_id(b"content never written")
    cache.put(key, outcome_for(2))
    cache.close()
    assert key not in bare
    assert quiet_cache(bare).get(key) == outcome_for(2)


def test_the_first_verdict_wins(bare):
    cache = quiet_cache(bare)
    cache.put("a" * 40, outcome_for(0))
    cache.put("a" * 40, outcome_for(1))
    assert cache.get("a" * 40) == outcome_for(0)
    cache.close()


def test_threads_and_background_checkpoints(bare):
    cache = GitVerdictCache(
        bare,
        FINGERPRINT,
        checkpoint_seconds=0.02,
        checkpoint_verdicts=40,
        pack_bytes=50_000,
    )
    errors: list[BaseException] = []

    def work(worker: int) -> None:
        try:
            for index in range(150):
                content = f"worker {worker} candidate {index}\n".encode() * 20
                key = cache.remember(content)
                cache.put(key, outcome_for(index))
                assert cache.get(key) == outcome_for(index)
        except BaseException as error:
            errors.append(error)

    _on_eight_threads(work)
    # 600 KB written against a 50 KB threshold: the background thread packs by itself,
    # however slowly a loaded machine lets it run
    _eventually(lambda: cache.packs > 0)
    packed_in_background = cache.packs
    cache.close()
    assert not errors
    assert not cache.warnings
    assert cache.flushes > 1 and packed_in_background >= 1
    fsck_clean(Path(bare.path))
    again = quiet_cache(bare)
    assert again.loaded == 8 * 150
    assert again.get(blob_id(b"worker 3 candidate 7\n" * 20)) == outcome_for(7)


def test_pack_soon_seals_and_packs_before_close_is_called(bare):
    """At the end of a reduction the sealing and packing run in the background, while
    the result is re-verified; close only saves what came after."""
    cache = GitVerdictCache(bare, FINGERPRINT, checkpoint_seconds=60)  # no timer fires
    keys = []
    for index in range(50):
        keys.append(cache.remember(f"candidate {index}\n".encode() * 50))
        cache.put(keys[-1], outcome_for(index))
    objects = Path(bare.path) / "objects"
    assert all((objects / key[:2] / key[2:]).exists() for key in keys)
    cache.pack_soon()
    deadline = time.monotonic() + 30
    while cache.packs == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert cache.packs == 1 and cache.flushes >= 1
    assert not any((objects / key[:2] / key[2:]).exists() for key in keys)  # packed
    assert all(pygit2.Oid(hex=key) in bare for key in keys)
    late = cache.remember(b"verified alone\n")
    cache.put(late, outcome_for(50))
    cache.close()
    assert not cache.warnings
    again = quiet_cache(bare)
    assert again.loaded == 51 and again.get(late) == outcome_for(50)
    fsck_clean(Path(bare.path))


def test_the_fingerprint_must_be_hex(bare):
    with pytest.raises(ValueError):
        GitVerdictCache(bare, "../../heads/main")


# -- provenance ---------------------------------------------------------------------------


def test_verdicts_fetched_by_a_clone_are_foreign_there_and_local_here(tmp_path):
    origin = make_user_repo(tmp_path / "origin")
    cache = quiet_cache(pygit2.Repository(str(origin)))
    cache.put(cache.remember(b"shared"), outcome_for(1))
    cache.close()
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(origin), str(clone))
    git(clone, "fetch", "-q", "origin", "refs/reduce/*:refs/reduce/*")
    fetched = quiet_cache(pygit2.Repository(str(clone)))
    there = fetched.get(blob_id(b"shared"))
    assert there == outcome_for(1) and there is not None and not there.local
    fetched.close()
    here = quiet_cache(pygit2.Repository(str(origin))).get(blob_id(b"shared"))
    assert here is not None and here.local


def test_a_local_verdict_supersedes_a_foreign_one_and_stays_so(tmp_path):
    origin = make_user_repo(tmp_path / "origin")
    cache = quiet_cache(pygit2.Repository(str(origin)))
    for index in range(3):
        cache.put(cache.remember(f"candidate {index}".encode()), outcome_for(0))
    cache.close()
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(origin), str(clone))
    git(clone, "fetch", "-q", "origin", "refs/reduce/*:refs/reduce/*")
    key = blob_id(b"candidate 1")
    confirming = quiet_cache(pygit2.Repository(str(clone)), compact_after=1)
    confirming.put(key, outcome_for(1))  # the confirmation's run said otherwise
    confirmed = confirming.get(key)
    assert confirmed == outcome_for(1) and confirmed is not None and confirmed.local
    confirming.put(key, outcome_for(2))  # a later re-run: the first local verdict stays
    assert confirming.get(key) == outcome_for(1)
    confirming.close()  # compacts: the shard keeps the local record, not the foreign one
    again = quiet_cache(pygit2.Repository(str(clone)))
    kept = again.get(key)
    assert kept == outcome_for(1) and kept is not None and kept.local
    other = again.get(blob_id(b"candidate 0"))
    assert other is not None and not other.local
    again.close()


def test_a_verdict_confirmed_alone_supersedes_one_made_among_others(bare):
    cache = quiet_cache(bare)
    cache.put("a" * 40, outcome_for(1))
    cache.flush()
    cache.put("a" * 40, replace(outcome_for(1), solo_runs=3))
    cache.close()
    stored = quiet_cache(bare).get("a" * 40)
    assert stored is not None and stored.solo_runs == 3


def test_a_revoked_runs_verdicts_are_ignored_by_later_runs(bare):
    cache = quiet_cache(bare, checkpoint_seconds=0.0, checkpoint_verdicts=1)
    cache.put("a" * 40, outcome_for(1))
    cache.flush()  # sealed into history: stays on the ref, ignored
    cache.put("b" * 40, outcome_for(1))
    deadline = time.monotonic() + 10
    while cache.flushes < 2 and time.monotonic() < deadline:  # checkpointed, not sealed
        time.sleep(0.01)
    assert cache.flushes == 2
    cache.put("c" * 40, outcome_for(1))  # pending: dropped
    cache.revoke_run()
    cache.put("d" * 40, outcome_for(0))  # saved as a new run's
    cache.close()
    later = quiet_cache(bare)
    assert [later.get(key * 40) for key in "abc"] == [None, None, None]
    survivor = later.get("d" * 40)
    assert survivor == outcome_for(0) and survivor is not None and survivor.local
    later.close()

    def on_the_ref(key: str) -> bool:
        found = git(
            Path(bare.path), "grep", "-q", key * 40, CACHE_REF_PREFIX + FINGERPRINT, check=False
        )
        return found.returncode == 0

    # the sealed verdict stays, ignored; the checkpointed one was left out of the seal
    assert [on_the_ref(key) for key in "abcd"] == [True, False, False, True]


def test_a_file_sets_candidate_is_kept_as_the_tree_of_its_files(tmp_path):
    """Keyed by its tree id, written as that tree (blobs and subtrees): through
    checkpoints, compaction, packing and `git gc --prune=now`, `git ls-tree -r KEY` lists
    the set's files and they pack back to the candidate."""
    repo_path = make_user_repo(tmp_path / "work")
    sets = [
        {
            "main.c": b'#include "lib/x.h"\nint main(void) { return X; }\n' * (i + 1),
            "lib/x.h": f"#define X {i}\n".encode(),
            "lib/deep/y.h": b"",
        }
        for i in range(6)
    ]
    packed = [fileset.pack(files) for files in sets]
    cache = quiet_cache(pygit2.Repository(str(repo_path)), compact_after=2)
    for index, content in enumerate(packed):
        key = cache.remember(content)
        assert key == candidate_key(content)
        cache.put(key, outcome_for(index))
        cache.flush()  # one batch each: the later seals compact
    cache.put(blob_id(b"a single file"), outcome_for(0), content=b"a single file")
    cache.close()
    objects = repo_path / ".git" / "objects"
    assert not any(objects.glob(f"{candidate_key(packed[0])[:2]}/*"))  # packed, none loose
    git(repo_path, "gc", "--quiet", "--prune=now")
    fsck_clean(repo_path)
    again = quiet_cache(pygit2.Repository(str(repo_path)))
    assert again.loaded == 7
    for index, (files, content) in enumerate(zip(sets, packed, strict=True)):
        key = candidate_key(content)
        assert again.get(key) == outcome_for(index)
        assert git(repo_path, "cat-file", "-t", key).stdout.strip() == "tree"
        listed = git(repo_path, "ls-tree", "-r", key).stdout.splitlines()
        read_back = {}
        for line in listed:
            mode_type_id, path = line.split("\t")
            mode, kind, blob = mode_type_id.split()
            assert (mode, kind) == ("100644", "blob")
            read_back[path] = subprocess.run(
                ["git", "cat-file", "blob", blob], cwd=repo_path, capture_output=True, check=True
            ).stdout
        assert read_back == files and fileset.pack(read_back) == content
    ref = pygit2.Repository(str(repo_path)).revparse_single(CACHE_REF_PREFIX + FINGERPRINT)
    shard = ref.peel(pygit2.Tree)["candidates"][candidate_key(packed[0])[:2]]
    assert shard[candidate_key(packed[0])[2:16]].filemode == pygit2.enums.FileMode.TREE
    assert git(repo_path, "cat-file", "-t", blob_id(b"a single file")).stdout.strip() == "blob"
    again.close()
