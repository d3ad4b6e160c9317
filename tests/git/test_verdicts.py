"""The git verdict cache, result branches and patches, on real repositories and real processes."""

from __future__ import annotations

import fcntl
import hashlib
import os
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pygit2
import pytest

from gitreduce.core.engine import Engine, blob_id
from gitreduce.core.errors import UserError
from gitreduce.core.outcome import Outcome, Verdict
from gitreduce.git import verdicts as gitstore
from gitreduce.git.verdicts import (
    CACHE_REF_PREFIX,
    CacheError,
    GitVerdictCache,
    format_patch,
    open_cache_repository,
    record_result,
    result_branch_name,
    result_message,
    write_patch,
)
from gitreduce.oracle.runner import Oracle
from gitreduce.oracle.spec import TestSpec

PACKAGE_ROOT = Path(__file__).resolve().parents[2]
FINGERPRINT = hashlib.sha1(b"test fingerprint").hexdigest()
AUTHOR = pygit2.Signature("Ada Tester", "ada@example.com", 1_700_000_000, 60)


def git_env() -> dict[str, str]:
    """git with no user or system config, and a fixed identity."""
    env = dict(os.environ)
    env.update(
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_CONFIG_NOSYSTEM="1",
        GIT_OPTIONAL_LOCKS="0",  # `git status` must not refresh the index we compare
        GIT_AUTHOR_NAME="Ada Tester",
        GIT_AUTHOR_EMAIL="ada@example.com",
        GIT_COMMITTER_NAME="Ada Tester",
        GIT_COMMITTER_EMAIL="ada@example.com",
        PYTHONPATH=str(PACKAGE_ROOT),
    )
    return env


def git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    process = subprocess.run(
        ["git", *args], cwd=cwd, env=git_env(), capture_output=True, text=True, check=False
    )
    if check and process.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed:\n{process.stderr}")
    return process


def fsck_clean(path: Path) -> None:
    process = git(path, "fsck", "--full", "--strict", check=False)
    assert process.returncode == 0, process.stdout + process.stderr
    assert "error" not in process.stderr.lower(), process.stderr
    assert "missing" not in process.stdout + process.stderr


def make_user_repo(path: Path) -> Path:
    """A working repository with history, a staged change, an edit and an untracked file."""
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    (path / "src").mkdir()
    (path / "src" / "prog.c").write_text("int main(void) { return 0; }\n")
    (path / "README").write_text("hello\n")
    git(path, "add", ".")
    git(path, "commit", "-q", "-m", "first")
    (path / "README").write_text("hello again\n")
    git(path, "commit", "-q", "-am", "second")
    git(path, "branch", "topic")
    (path / "README").write_text("staged\n")
    git(path, "add", "README")
    (path / "src" / "prog.c").write_text("int main(void) { return 1; }\n")
    (path / "untracked.txt").write_text("mine\n")
    return path


@pytest.fixture
def bare(tmp_path: Path) -> pygit2.Repository:
    return pygit2.init_repository(str(tmp_path / "store.git"), bare=True)


def outcome_for(index: int) -> Outcome:
    kinds = [
        Outcome(Verdict.GOOD, 0, 0.25),
        Outcome(Verdict.BAD, 1, 1.5, "internal compiler error: in f, at g.c"),
        Outcome(Verdict.SKIP, 125, 0.125),
        Outcome(Verdict.TIMEOUT, None, 10.0),
        Outcome(Verdict.BAD, 139, 0.5, "panic: ünïcode — message"),
    ]
    return kinds[index % len(kinds)]


def quiet_cache(repo: pygit2.Repository, **options: float) -> GitVerdictCache:
    """A cache whose background checkpoints never fire on their own: the test decides."""
    settings: dict[str, float] = {"checkpoint_seconds": 3600, "checkpoint_verdicts": 10**9}
    settings.update(options)
    return GitVerdictCache(repo, FINGERPRINT, **settings)  # type: ignore[arg-type]


# --- the cache ---------------------------------------------------------------------------


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


def test_compaction_folds_batches_into_prefix_shards(bare):
    cache = quiet_cache(bare, compact_after=4)
    contents = [f"compact {i}\n".encode() for i in range(100)]
    for index, content in enumerate(contents):
        cache.put(cache.remember(content), outcome_for(index))
        if index % 10 == 9:
            cache.flush()
    cache.close()
    tree = bare.revparse_single(CACHE_REF_PREFIX + FINGERPRINT).peel(pygit2.Tree)
    assert len(tree["batches"]) < 4  # 10 checkpoints, folded every 4th
    key = blob_id(contents[0])
    assert tree["candidates"][key[:2]][key[2:16]].id == pygit2.Oid(hex=key)
    assert key.encode() in tree["verdicts"][key[:2]].data
    again = quiet_cache(bare)
    assert again.loaded == 100
    for index, content in enumerate(contents):
        assert again.get(blob_id(content)) == outcome_for(index)
    fsck_clean(Path(bare.path))


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
                found = engine.first_success(candidates, smaller_than=10**6)
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


READER = textwrap.dedent(
    """
    import json, sys, pygit2
    from gitreduce.git.verdicts import GitVerdictCache
    cache = GitVerdictCache(pygit2.Repository(sys.argv[1]), sys.argv[2])
    keys = sys.argv[3:]
    found = {key: cache.get(key) for key in keys}
    print(json.dumps({"loaded": cache.loaded, "found": {
        key: [o.verdict.value, o.exit_code, o.seconds, o.signature] if o else None
        for key, o in found.items()}}))
    """
)


def read_in_subprocess(path: str, keys: list[str]) -> dict:
    import json

    process = subprocess.run(
        [sys.executable, "-c", READER, path, FINGERPRINT, *keys],
        capture_output=True,
        text=True,
        env=git_env(),
        check=True,
    )
    return json.loads(process.stdout)


def test_another_process_sees_verdicts_after_flush(bare):
    cache = quiet_cache(bare)
    keys = [cache.remember(f"v{i}".encode()) for i in range(5)]
    for index, key in enumerate(keys):
        cache.put(key, outcome_for(index))
    assert read_in_subprocess(bare.path, keys)["loaded"] == 0  # nothing saved before a flush
    assert cache.flush()
    seen = read_in_subprocess(bare.path, keys)
    assert seen["loaded"] == 5
    expected = outcome_for(1)
    assert seen["found"][keys[1]] == [
        expected.verdict.value,
        expected.exit_code,
        expected.seconds,
        expected.signature,
    ]
    cache.close()


def test_verdicts_and_candidates_survive_gc_prune_now(tmp_path):
    repo_path = make_user_repo(tmp_path / "work")
    repo = pygit2.Repository(str(repo_path))
    cache = quiet_cache(repo)
    contents = [f"int f{i}(void);\n".encode() * 50 for i in range(30)]
    for index, content in enumerate(contents):
        cache.put(cache.remember(content), outcome_for(index))
    cache.flush()
    cache.put(cache.remember(b"late one\n"), outcome_for(1))
    cache.close(pack=False)  # some loose, some not: gc must keep both
    git(repo_path, "gc", "--quiet", "--prune=now")
    fsck_clean(repo_path)
    again = quiet_cache(pygit2.Repository(str(repo_path)))
    assert again.loaded == 31
    for index, content in enumerate(contents):
        assert again.get(blob_id(content)) == outcome_for(index)
        assert git(repo_path, "cat-file", "-e", blob_id(content), check=False).returncode == 0
    again.close()


WRITER = textwrap.dedent(
    """
    import sys, time, pygit2
    from pathlib import Path
    from gitreduce.git.verdicts import GitVerdictCache
    from gitreduce.core.outcome import Outcome, Verdict
    path, fingerprint, tag, count, per_flush, go, compact_after = sys.argv[1:8]
    count, per_flush = int(count), int(per_flush)
    cache = GitVerdictCache(pygit2.Repository(path), fingerprint, compact_after=int(compact_after),
                            checkpoint_seconds=3600, checkpoint_verdicts=10**9)
    print("ready", flush=True)
    while not Path(go).exists():
        time.sleep(0.001)
    i = 0
    while count == 0 or i < count:
        key = cache.remember(f"{tag} candidate {i}\\n".encode() * 40)
        cache.put(key, Outcome(Verdict.BAD if i % 2 else Verdict.GOOD, i % 2, i / 1000))
        i += 1
        if i % per_flush == 0:
            cache.flush()
            print(i, flush=True)
    cache.close()
    print("conflicts", cache.conflicts, flush=True)
    """
)


def start_writer(
    path: str, tag: str, count: int, per_flush: int, go: Path, compact_after: int = 32
) -> subprocess.Popen:
    arguments = [path, FINGERPRINT, tag, str(count), str(per_flush), str(go), str(compact_after)]
    process = subprocess.Popen(
        [sys.executable, "-c", WRITER, *arguments],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=git_env(),
    )
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "ready"
    return process


def writer_key(tag: str, index: int) -> str:
    return blob_id(f"{tag} candidate {index}\n".encode() * 40)


def test_concurrent_writers_both_keep_every_verdict(tmp_path):
    repo_path = make_user_repo(tmp_path / "work")
    go = tmp_path / "go"
    # one writer compacts often: merges must survive the other rewriting the layout
    writers = [
        start_writer(str(repo_path), "left", 300, 5, go, compact_after=7),
        start_writer(str(repo_path), "right", 300, 5, go),
    ]
    go.touch()
    outputs = [writer.communicate(timeout=60) for writer in writers]
    for writer, (_, err) in zip(writers, outputs, strict=True):
        assert writer.returncode == 0, err
    conflicts = sum(int(out.split()[-1]) for out, _ in outputs)
    print(f"\nconcurrent writers: {conflicts} compare-and-swap conflicts resolved")
    fsck_clean(repo_path)
    cache = quiet_cache(pygit2.Repository(str(repo_path)))
    assert cache.loaded == 600
    for tag in ("left", "right"):
        for index in range(300):
            assert cache.get(writer_key(tag, index)) is not None, (tag, index)
    history = git(repo_path, "rev-list", "--count", CACHE_REF_PREFIX + FINGERPRINT).stdout
    assert int(history) == 2 * 60  # every flush one commit, on one line of history
    cache.close()


@pytest.mark.parametrize("ref_exists", [False, True])
def test_a_writer_whose_ref_moved_after_it_read_it_keeps_the_other_seal(
    bare, ref_exists, monkeypatch
):
    """Another writer seals between this one's reading the ref and moving it: whether that
    seal created the ref or moved it, this one rebuilds on top of it instead of replacing it."""
    if ref_exists:
        earlier = quiet_cache(bare)
        earlier.put(earlier.remember(b"earlier"), outcome_for(0))
        earlier.close()
    first, second = quiet_cache(bare), quiet_cache(pygit2.Repository(bare.path))
    first.put(first.remember(b"from first"), outcome_for(1))
    second.put(second.remember(b"from second"), outcome_for(2))
    install = first._install
    results: list[bool] = []

    def second_seals_first(*args: object) -> bool:
        if not results:
            assert second.flush()  # after first built its commit, before it moves the ref
        results.append(install(*args))  # type: ignore[arg-type]
        return results[-1]

    monkeypatch.setattr(first, "_install", second_seals_first)
    assert first.flush()
    assert results == [False, True] and first.conflicts == 1
    first.close()
    second.close()
    fsck_clean(Path(bare.path))
    again = quiet_cache(pygit2.Repository(bare.path))
    assert again.loaded == 2 + ref_exists
    assert again.get(blob_id(b"from first")) == outcome_for(1)
    assert again.get(blob_id(b"from second")) == outcome_for(2)
    log = git(Path(bare.path), "log", "--format=%s", CACHE_REF_PREFIX + FINGERPRINT).stdout
    assert len(log.splitlines()) == 2 + ref_exists  # one line of seals
    again.close()


CREATOR = textwrap.dedent(
    """
    import hashlib, sys, time, pygit2
    from gitreduce.git.verdicts import GitVerdictCache
    from gitreduce.core.outcome import Outcome, Verdict
    path, tag, rounds, start = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    repo = pygit2.Repository(path)
    for round_ in range(rounds):
        fingerprint = hashlib.sha1(f"round {round_}".encode()).hexdigest()
        cache = GitVerdictCache(repo, fingerprint, checkpoint_seconds=3600,
                                checkpoint_verdicts=10**9)
        key = cache.remember(f"{tag} {round_}".encode())
        time.sleep(max(0.0, start + 0.03 * round_ - time.time()))  # every writer at once
        cache.put(key, Outcome(Verdict.GOOD, 0, 0.0))
        cache.close(pack=False)
    """
)


def test_writers_creating_the_ref_at_once_keep_every_verdict(bare):
    """Eight writers whose first seal creates the ref, at the same instant, eighty times.

    Timed, not a forced interleaving: the race was inside libgit2's
    `References.create`, which checks that the ref is absent before it takes
    the ref's lock. With it, eleven runs of this test out of twelve lost a seal.
    """
    writers, rounds = 8, 80
    start = time.time() + 1.0
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", CREATOR, bare.path, f"w{i}", str(rounds), str(start)],
            stderr=subprocess.PIPE,
            text=True,
            env=git_env(),
        )
        for i in range(writers)
    ]
    for process in processes:
        _, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
    fsck_clean(Path(bare.path))
    for round_ in range(rounds):
        fingerprint = hashlib.sha1(f"round {round_}".encode()).hexdigest()
        cache = GitVerdictCache(bare, fingerprint, checkpoint_seconds=3600)
        assert cache.loaded == writers, round_
        cache.close()


def test_kill_9_mid_flush_leaves_a_readable_ref_and_a_clean_repository(tmp_path):
    repo_path = make_user_repo(tmp_path / "work")
    go = tmp_path / "go"
    go.touch()
    saved = 0
    rng = random.Random(7)
    for round_ in range(6):
        tag = f"killed{round_}"
        writer = start_writer(str(repo_path), tag, 0, 3, go, compact_after=5)
        assert writer.stdout is not None
        flushed = 0
        while flushed < 30:
            flushed = int(writer.stdout.readline())
        time.sleep(rng.random() * 0.02)
        writer.send_signal(signal.SIGKILL)
        writer.wait()
        rest = writer.stdout.read().split()
        flushed = int(rest[-1]) if rest else flushed
        saved += flushed
        lock = repo_path / ".git" / (CACHE_REF_PREFIX + FINGERPRINT + ".lock")
        if lock.exists():  # killed inside the ref transaction: as if seconds had passed
            os.utime(lock, (time.time() - 3600, time.time() - 3600))
        fsck_clean(repo_path)
        cache = quiet_cache(pygit2.Repository(str(repo_path)))
        assert cache.loaded >= saved
        for index in range(flushed):
            assert cache.get(writer_key(tag, index)) is not None
        cache.put(cache.remember(f"after {round_}".encode()), outcome_for(0))
        cache.close()  # a later run writes on top of the survivor
        assert not lock.exists()
        saved += 1
    fsck_clean(repo_path)


def ref_lock(repo_path: Path, age: float) -> Path:
    """The cache ref's lock file as a writer killed `age` seconds ago inside a ref
    transaction leaves it."""
    lock = repo_path / ".git" / (CACHE_REF_PREFIX + FINGERPRINT + ".lock")
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.touch()
    os.utime(lock, (time.time() - age, time.time() - age))
    return lock


def test_a_ref_lock_left_by_a_killed_writer_is_deleted_once_stale(tmp_path, monkeypatch):
    monkeypatch.setattr(gitstore, "_STALE_REF_LOCK_SECONDS", 0.3)
    repo_path = make_user_repo(tmp_path / "work")
    lock = ref_lock(repo_path, age=0)
    cache = quiet_cache(pygit2.Repository(str(repo_path)))
    cache.put(cache.remember(b"int main;\n"), outcome_for(1))
    started = time.monotonic()
    cache.close()
    assert time.monotonic() - started >= 0.3  # a fresh lock may be a live git's: waited
    assert not lock.exists()
    assert quiet_cache(pygit2.Repository(str(repo_path))).loaded == 1


def test_an_old_ref_lock_is_kept_while_another_writer_holds_the_writers_lock(tmp_path):
    repo_path = make_user_repo(tmp_path / "work")
    lock = ref_lock(repo_path, age=3600)
    with open(repo_path / ".git" / gitstore._WRITERS_LOCK, "w") as other_writer:
        fcntl.flock(other_writer, fcntl.LOCK_EX)
        cache = quiet_cache(pygit2.Repository(str(repo_path)), lock_wait_seconds=0.3)
        cache.put(cache.remember(b"int main;\n"), outcome_for(1))
        with pytest.raises(CacheError, match="locked by another git reduce"):
            cache.close()
    assert lock.exists()  # only the flock's holder may judge the ref lock stale


CHECKPOINTER = textwrap.dedent(
    """
    import sys, time, pygit2
    from pathlib import Path
    from gitreduce.git.verdicts import GitVerdictCache
    from gitreduce.core.outcome import Outcome, Verdict
    path, fingerprint, tag, count, go, seal_after, then = sys.argv[1:8]
    cache = GitVerdictCache(pygit2.Repository(path), fingerprint, checkpoint_seconds=0.002,
                            checkpoint_verdicts=4, seal_after=int(seal_after))
    print("ready", flush=True)
    while not Path(go).exists():
        time.sleep(0.001)
    for i in range(int(count)):
        key = cache.remember(f"{tag} candidate {i}\\n".encode() * 40)
        cache.put(key, Outcome(Verdict.BAD if i % 2 else Verdict.GOOD, i % 2, i / 1000))
    if then == "hang":  # until killed: only the background checkpoints save anything
        print("put", flush=True)
        time.sleep(3600)
    cache.close()
    print("closed", cache.flushes, flush=True)
    """
)


def start_checkpointer(
    path: Path, tag: str, count: int, go: Path, *, seal_after: int, then: str
) -> subprocess.Popen:
    """A writer that only checkpoints in the background, as a reduction does."""
    arguments = [str(path), FINGERPRINT, tag, str(count), str(go), str(seal_after), then]
    process = subprocess.Popen(
        [sys.executable, "-c", CHECKPOINTER, *arguments],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=git_env(),
    )
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "ready"
    return process


def cache_history(path: Path) -> list[str]:
    """Subjects of the cache ref's commits, newest first."""
    log = git(path, "log", "--format=%s", CACHE_REF_PREFIX + FINGERPRINT).stdout
    return log.splitlines()


def loose_objects(path: Path) -> int:
    return int(git(path, "count-objects").stdout.split()[0])


def test_a_killed_writers_checkpoints_are_sealed_by_the_next_run(tmp_path):
    """kill -9 leaves a chain of checkpoints; the next seal squashes it and packs its batches."""
    repo_path = make_user_repo(tmp_path / "work")
    go = tmp_path / "go"
    go.touch()
    writer = start_checkpointer(repo_path, "killed", 200, go, seal_after=10**6, then="hang")
    assert writer.stdout is not None
    assert writer.stdout.readline().strip() == "put"
    deadline = time.monotonic() + 30
    while quiet_cache(pygit2.Repository(str(repo_path))).loaded < 200:
        assert time.monotonic() < deadline, "the checkpoints never saved every verdict"
        time.sleep(0.01)
    writer.send_signal(signal.SIGKILL)
    writer.communicate()
    fsck_clean(repo_path)
    history = cache_history(repo_path)
    assert len(history) > 1 and all(s.startswith("gitreduce cache checkpoint:") for s in history)
    assert loose_objects(repo_path) > 200  # candidates and checkpoints, never packed

    resumed = quiet_cache(pygit2.Repository(str(repo_path)))
    assert resumed.loaded == 200
    resumed.put(resumed.remember(b"after the kill"), outcome_for(0))
    resumed.close()
    fsck_clean(repo_path)
    history = cache_history(repo_path)
    assert len(history) == 1 and history[0].startswith("gitreduce cache:")  # squashed
    objects = repo_path / ".git" / "objects"
    for index in range(200):  # the killed run's candidates are packed now
        key = writer_key("killed", index)
        assert not (objects / key[:2] / key[2:]).exists()
        assert git(repo_path, "cat-file", "-e", key, check=False).returncode == 0
    git(repo_path, "gc", "--quiet", "--prune=now")
    fsck_clean(repo_path)
    assert loose_objects(repo_path) == 0
    assert quiet_cache(pygit2.Repository(str(repo_path))).loaded == 201


def test_concurrent_checkpointing_writers_seal_into_one_clean_history(tmp_path):
    """Each seal deletes only its own checkpoints, while the other may be reading them."""
    repo_path = make_user_repo(tmp_path / "work")
    go = tmp_path / "go"
    writers = [
        start_checkpointer(repo_path, tag, 300, go, seal_after=8, then="close")
        for tag in ("left", "right")
    ]
    go.touch()
    for writer in writers:
        out, err = writer.communicate(timeout=120)
        assert writer.returncode == 0, err
        assert out.startswith("closed"), out
    fsck_clean(repo_path)
    history = cache_history(repo_path)
    assert not any(subject.startswith("gitreduce cache checkpoint") for subject in history)
    cache = quiet_cache(pygit2.Repository(str(repo_path)))
    assert cache.loaded == 600
    for tag in ("left", "right"):
        for index in range(300):
            assert cache.get(writer_key(tag, index)) is not None, (tag, index)
    cache.close()
    git(repo_path, "gc", "--quiet", "--prune=now")
    fsck_clean(repo_path)
    assert quiet_cache(pygit2.Repository(str(repo_path))).loaded == 600


def test_a_clone_that_fetches_refs_reduce_has_every_verdict(tmp_path):
    origin = make_user_repo(tmp_path / "origin")
    cache = quiet_cache(pygit2.Repository(str(origin)))
    contents = [f"shared {i}\n".encode() * 10 for i in range(40)]
    for index, content in enumerate(contents):
        cache.put(cache.remember(content), outcome_for(index))
    cache.close()
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(origin), str(clone))
    assert quiet_cache(pygit2.Repository(str(clone))).loaded == 0
    git(clone, "fetch", "-q", "origin", "refs/reduce/*:refs/reduce/*")
    fetched = quiet_cache(pygit2.Repository(str(clone)))
    assert fetched.loaded == 40
    for index, content in enumerate(contents):
        assert fetched.get(blob_id(content)) == outcome_for(index)
        assert git(clone, "cat-file", "-e", blob_id(content), check=False).returncode == 0
    fetched.close()
    fsck_clean(clone)


def test_verdicts_fetched_under_another_name_are_read_too(tmp_path):
    origin = make_user_repo(tmp_path / "origin")
    cache = quiet_cache(pygit2.Repository(str(origin)))
    cache.put(cache.remember(b"remote verdict"), outcome_for(1))
    cache.close()
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(origin), str(clone))
    git(clone, "fetch", "-q", "origin", "+refs/reduce/*:refs/reduce/remotes/origin/*")
    local = quiet_cache(pygit2.Repository(str(clone)))
    assert local.get(blob_id(b"remote verdict")) == outcome_for(1)
    local.close()


def near_identical_candidates(count: int, size: int, seed: int = 1) -> list[bytes]:
    """What a reduction tries: one program with a different chunk of lines deleted each time."""
    rng = random.Random(seed)
    words = ["int", "x", "y", "return", "for", "while", "(", ")", "{", "}", ";", "+", "42"]
    lines, total = [], 0
    while total < size:
        line = " ".join(rng.choice(words) for _ in range(rng.randint(4, 14))) + "\n"
        lines.append(line)
        total += len(line)
    candidates = []
    for _ in range(count):
        start = rng.randrange(len(lines))
        stop = min(len(lines), start + rng.randint(1, 8))
        candidates.append("".join(lines[:start] + lines[stop:]).encode())
    return candidates


def objects_size(path: Path) -> tuple[int, int]:
    """(bytes of loose objects, bytes of packs) under a repository's objects directory."""
    loose = packed = 0
    for file in (path / "objects").rglob("*"):
        if not file.is_file():
            continue
        if file.parent.name == "pack":
            packed += file.stat().st_size
        elif len(file.parent.name) == 2:
            loose += file.stat().st_size
    return loose, packed


def test_two_thousand_near_identical_candidates_pack_small(bare):
    store = Path(bare.path)
    before = sum(objects_size(store))
    candidates = near_identical_candidates(2000, 20_000)
    cache = quiet_cache(bare)
    started = time.monotonic()
    for index, content in enumerate(candidates):
        cache.put(cache.remember(content), outcome_for(index))
        if index % 250 == 249:
            cache.flush()
    written = time.monotonic() - started
    loose, _ = objects_size(store)
    cache.flush()
    started = time.monotonic()
    packed_objects = cache.pack()
    pack_seconds = time.monotonic() - started
    cache.close()
    loose_after, packed = objects_size(store)
    growth = loose_after + packed - before
    print(
        f"\n2000 x {len(candidates[0]) // 1000} KB candidates: {loose / 1e6:.1f} MB loose "
        f"({written:.2f} s to write and flush) -> {growth / 1e3:.0f} KB packed "
        f"({packed_objects} objects, {pack_seconds:.2f} s)"
    )
    assert loose_after == 0  # every loose object this run wrote is now in the pack
    assert growth < 2_000_000
    fsck_clean(store)
    again = quiet_cache(bare)
    assert again.loaded == len({blob_id(content) for content in candidates})


def test_checkpoints_cost_no_more_than_saving_at_once(tmp_path):
    """Bytes per verdict, without timing: 2,000 verdicts checkpointed at least every 10 (at
    most 2,000 checkpoints) leave one sealed commit and one pack, no bigger than the same
    verdicts saved by a single commit. Before: a commit, root tree and batch list per
    checkpoint, kept, and their index entries were 80 % of the growth."""
    candidates = [
        content + f"/* {index} */\n".encode()
        for index, content in enumerate(near_identical_candidates(2000, 4000, seed=3))
    ]
    growth: dict[bool, int] = {}
    for checkpointed in (False, True):
        repo = pygit2.init_repository(str(tmp_path / f"checkpointed-{checkpointed}"), bare=True)
        options = {"checkpoint_seconds": 0.0, "checkpoint_verdicts": 1} if checkpointed else {}
        cache = quiet_cache(repo, seal_after=10**6, **options)
        for index, content in enumerate(candidates):
            saved = cache.flushes
            cache.put(cache.remember(content), outcome_for(index))
            deadline = time.monotonic() + 30
            while checkpointed and index % 10 == 9 and cache.flushes == saved:
                assert time.monotonic() < deadline, "no background checkpoint"
                time.sleep(0.0005)
        cache.close()
        path = Path(repo.path)
        fsck_clean(path)
        assert quiet_cache(repo).loaded == 2000
        counts = git(path, "count-objects", "-v").stdout
        assert "count: 0\n" in counts and "packs: 1\n" in counts, counts  # nothing loose
        history = cache_history(path)
        assert len(history) == 1 and history[0] == "gitreduce cache: 2000 verdict(s)"
        growth[checkpointed] = sum(objects_size(path))
        if checkpointed:
            assert cache.flushes >= 200
    print(
        f"\n2000 verdicts of 4 KB candidates: {growth[False]} B at once, {growth[True]} B "
        f"checkpointed ({growth[True] / 2000:.0f} B per verdict)"
    )
    assert growth[True] <= growth[False] * 1.02 + 2048


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

    threads = [threading.Thread(target=work, args=(worker,)) for worker in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    cache.close()
    assert not errors
    assert not cache.warnings
    assert cache.flushes > 1 and cache.packs > 1  # the background thread did checkpoint
    fsck_clean(Path(bare.path))
    again = quiet_cache(bare)
    assert again.loaded == 8 * 150
    assert again.get(blob_id(b"worker 3 candidate 7\n" * 20)) == outcome_for(7)


def test_concurrent_flush_is_seen_by_the_other_cache(bare):
    first, second = quiet_cache(bare), quiet_cache(pygit2.Repository(bare.path))
    first.put(first.remember(b"from first"), outcome_for(0))
    first.flush()
    second.put(second.remember(b"from second"), outcome_for(1))
    second.flush()  # conflicts with first's commit, rebuilds on top, learns its verdicts
    assert second.conflicts == 0 or second.conflicts >= 1
    assert second.get(blob_id(b"from first")) == outcome_for(0)
    first.flush()  # nothing pending: just looks for news
    assert first.get(blob_id(b"from second")) == outcome_for(1)
    first.close()
    second.close()


def test_private_cache_repository(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    repo = open_cache_repository()
    assert Path(repo.path).resolve() == (tmp_path / "xdg" / "gitreduce" / "cache.git").resolve()
    assert repo.is_bare
    cache = quiet_cache(repo)
    cache.put(cache.remember(b"plain file candidate"), outcome_for(1))
    cache.close()
    again = open_cache_repository()
    assert quiet_cache(again).get(blob_id(b"plain file candidate")) == outcome_for(1)
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/ignored")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert (
        Path(open_cache_repository().path).resolve()
        == (tmp_path / "home" / ".cache" / "gitreduce" / "cache.git").resolve()
    )


def test_a_linked_worktree_shares_the_cache(tmp_path):
    main = make_user_repo(tmp_path / "work")
    git(main, "worktree", "add", "-q", str(tmp_path / "linked"), "topic")
    linked = pygit2.Repository(str(tmp_path / "linked"))
    cache = quiet_cache(linked)
    cache.put(cache.remember(b"from the worktree\n" * 100), outcome_for(1))
    cache.close()
    key = blob_id(b"from the worktree\n" * 100)
    assert not (
        main / ".git" / "objects" / key[:2] / key[2:]
    ).exists()  # packed, in the shared store
    assert git(main, "cat-file", "-e", key, check=False).returncode == 0
    assert quiet_cache(pygit2.Repository(str(main))).get(
        blob_id(b"from the worktree\n" * 100)
    ) == outcome_for(1)
    fsck_clean(main)


def test_the_fingerprint_must_be_hex(bare):
    with pytest.raises(ValueError):
        GitVerdictCache(bare, "../../heads/main")


# --- results -------------------------------------------------------------------------------

SEED = b"int f(int x) {\n  return x + 1;\n}\n/* caf\xc3\xa9 */\n"
VARIANT = b"int f(int x) {\n  return x + 1 / 0;\n}\n/* caf\xc3\xa9 */"  # no final newline


def user_state(path: Path) -> dict[str, object]:
    """Everything of the user's that reduction must not touch."""
    files = {
        str(file.relative_to(path)): file.read_bytes()
        for file in sorted(path.rglob("*"))
        if file.is_file() and ".git" not in file.relative_to(path).parts
    }
    return {
        "head": git(path, "symbolic-ref", "HEAD").stdout,
        "head_commit": git(path, "rev-parse", "HEAD").stdout,
        "index": (path / ".git" / "index").read_bytes(),
        "status": git(path, "status", "--porcelain=v2").stdout,
        "branches": git(path, "for-each-ref", "refs/heads", "refs/tags").stdout,
        "files": files,
    }


def pairwise_result(repo: pygit2.Repository, branch: str = "reduce/prog") -> list[pygit2.Oid]:
    seed_message = result_message(
        "git reduce: reduced seed of src/deep/prog.c",
        path="src/deep/prog.c",
        test="./check.sh {}",
        sources=["1111111"],
        bytes_before=900,
        bytes_after=len(SEED),
    )
    variant_message = result_message(
        "git reduce: the failure-inducing change in src/deep/prog.c — tiny",
        path="src/deep/prog.c",
        test="./check.sh {}",
        sources=["2222222"],
        bytes_before=950,
        bytes_after=len(VARIANT),
        tokens_before=300,
        tokens_after=12,
    )
    return record_result(
        repo,
        branch=branch,
        path="src/deep/prog.c",
        versions=[(seed_message, SEED), (variant_message, VARIANT)],
        author=AUTHOR,
    )


def test_result_branch_is_an_orphan_history_of_one_file(tmp_path):
    repo_path = make_user_repo(tmp_path / "work")
    repo = pygit2.Repository(str(repo_path))
    seed_id, variant_id = pairwise_result(repo)
    seed, variant = repo[seed_id], repo[variant_id]
    assert seed.parents == [] and variant.parent_ids == [seed_id]
    assert repo.references["refs/heads/reduce/prog"].target == variant_id
    for commit, content in ((seed, SEED), (variant, VARIANT)):
        assert [entry.name for entry in commit.tree] == ["src"]
        assert commit.tree["src/deep/prog.c"].data == content
    assert "Reduced-From: 2222222" in variant.message
    assert "Bytes: 950 -> " in variant.message and "Tokens: 300 -> 12" in variant.message
    shown = git(repo_path, "show", "--format=", "reduce/prog").stdout
    assert "-  return x + 1;" in shown and "+  return x + 1 / 0;" in shown
    fsck_clean(repo_path)


def test_result_branch_is_not_overwritten_without_force(tmp_path):
    repo_path = make_user_repo(tmp_path / "work")
    repo = pygit2.Repository(str(repo_path))
    first = pairwise_result(repo)
    with pytest.raises(UserError, match="already exists"):
        pairwise_result(repo)
    assert repo.references["refs/heads/reduce/prog"].target == first[-1]
    replaced = record_result(
        repo, branch="reduce/prog", path="prog.c", versions=[("one\n", b"x\n")], force=True
    )
    assert repo.references["refs/heads/reduce/prog"].target == replaced[-1]
    with pytest.raises(UserError, match="checked out"):
        record_result(repo, branch="main", path="p.c", versions=[("m\n", b"x\n")], force=True)
    with pytest.raises(UserError, match="not a valid branch name"):
        record_result(repo, branch="reduce/a..b", path="p.c", versions=[("m\n", b"x\n")])
    with pytest.raises(UserError, match="not a path inside"):
        record_result(repo, branch="reduce/c", path="../p.c", versions=[("m\n", b"x\n")])


def test_branch_names():
    assert result_branch_name("prog.c") == "reduce/prog.c"
    assert result_branch_name("my file (1).c") == "reduce/my-file-1-.c"
    assert result_branch_name("..") == "reduce/result"
    assert result_branch_name("x.lock") == "reduce/x-lock"
    for hint in ("prog.c", "a b", "..", "x.lock", "~^:?*[\\"):
        assert pygit2.reference_is_valid_name("refs/heads/" + result_branch_name(hint))


def test_git_am_of_the_patch_onto_the_seed_reproduces_the_variant(tmp_path):
    repo_path = make_user_repo(tmp_path / "work")
    repo = pygit2.Repository(str(repo_path))
    seed_id, variant_id = pairwise_result(repo)
    patch = write_patch(repo, variant_id, tmp_path / "reduced.patch")
    text = patch.read_bytes()
    assert text.startswith(f"From {variant_id} Mon Sep 17 00:00:00 2001\n".encode())
    assert b"Subject: " in text and b"\n---\n" in text and b"diff --git" in text
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(repo_path), str(clone))
    git(clone, "checkout", "-q", "--detach", str(seed_id))
    assert (clone / "src" / "deep" / "prog.c").read_bytes() == SEED
    git(clone, "am", "-q", str(patch))
    assert (clone / "src" / "deep" / "prog.c").read_bytes() == VARIANT
    applied = pygit2.Repository(str(clone)).head.peel(pygit2.Commit)
    assert applied.tree.id == repo[variant_id].tree.id
    assert applied.message == repo[variant_id].message
    assert applied.author.email == AUTHOR.email


def test_single_file_result_and_root_patch(tmp_path):
    repo_path = make_user_repo(tmp_path / "work")
    repo = pygit2.Repository(str(repo_path))
    (only,) = record_result(
        repo,
        branch=result_branch_name("prog.c"),
        path="prog.c",
        versions=[("git reduce: reduced prog.c\n", b"int x;\n")],
        author=AUTHOR,
    )
    assert repo[only].parents == []
    patch = format_patch(repo, str(only))
    assert b"new file mode 100644" in patch and b"+int x;" in patch
    empty = tmp_path / "empty"
    git(tmp_path, "init", "-q", str(empty))
    (empty / "base").write_text("base\n")
    git(empty, "add", "base")
    git(empty, "commit", "-q", "-m", "base")
    (tmp_path / "root.patch").write_bytes(patch)
    git(empty, "am", "-q", str(tmp_path / "root.patch"))
    assert (empty / "prog.c").read_bytes() == b"int x;\n"


def test_nothing_of_the_users_is_touched(tmp_path):
    repo_path = make_user_repo(tmp_path / "work")
    before = user_state(repo_path)
    repo = pygit2.Repository(str(repo_path))
    cache = quiet_cache(repo)
    for index in range(50):
        cache.put(cache.remember(f"candidate {index}\n".encode()), outcome_for(index))
    cache.flush()
    cache.close()
    _, variant_id = pairwise_result(repo)
    write_patch(repo, variant_id, tmp_path / "out.patch")
    after = user_state(repo_path)
    added = git(repo_path, "for-each-ref", "--format=%(refname)", "refs/heads").stdout.split()
    assert "refs/heads/reduce/prog" in added
    after_branches = "".join(
        line + "\n"
        for line in str(after.pop("branches")).splitlines()
        if "refs/heads/reduce/" not in line
    )
    assert after_branches == before.pop("branches")
    assert after == before


def test_the_unborn_current_branch_is_not_created(tmp_path):
    repo = pygit2.init_repository(str(tmp_path / "fresh"), initial_head="reduce/x")
    with pytest.raises(UserError, match="checked out"):
        record_result(repo, branch="reduce/x", path="p.c", versions=[("m\n", b"x\n")])
    assert repo.head_is_unborn
