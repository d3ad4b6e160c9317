"""The git directory's layout and locks, as the verdict cache uses them: the common
directory of a linked worktree, stale ref lock files, the writers' flock, the private
cache repository."""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

import pygit2
import pytest
from support import FINGERPRINT, fsck_clean, git, make_user_repo, outcome_for, quiet_cache

from gitreduce.core.keys import blob_id
from gitreduce.git import cache_log, layout
from gitreduce.git.cache_format import CACHE_REF_PREFIX
from gitreduce.git.cache_log import CacheError
from gitreduce.git.layout import open_cache_repository


def ref_lock(repo_path: Path, age: float) -> Path:
    """The cache ref's lock file as a writer killed `age` seconds ago inside a ref
    transaction leaves it."""
    lock = repo_path / ".git" / (CACHE_REF_PREFIX + FINGERPRINT + ".lock")
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.touch()
    os.utime(lock, (time.time() - age, time.time() - age))
    return lock


def test_a_ref_lock_left_by_a_killed_writer_is_deleted_once_stale(tmp_path, monkeypatch):
    monkeypatch.setattr(layout, "_STALE_REF_LOCK_SECONDS", 0.3)
    repo_path = make_user_repo(tmp_path / "work")
    made = time.time()  # the lock's age is counted from here, by the same clock as its mtime
    lock = ref_lock(repo_path, age=0)
    cache = quiet_cache(pygit2.Repository(str(repo_path)))
    cache.put(cache.remember(b"int main;\n"), outcome_for(1))
    cache.close()
    assert time.time() - made >= 0.3  # a fresh lock may be a live git's: waited
    assert not lock.exists()
    assert quiet_cache(pygit2.Repository(str(repo_path))).loaded == 1


def test_an_old_ref_lock_is_kept_while_another_writer_holds_the_writers_lock(tmp_path):
    repo_path = make_user_repo(tmp_path / "work")
    lock = ref_lock(repo_path, age=3600)
    with open(repo_path / ".git" / cache_log._WRITERS_LOCK, "w") as other_writer:
        fcntl.flock(other_writer, fcntl.LOCK_EX)
        cache = quiet_cache(pygit2.Repository(str(repo_path)), lock_wait_seconds=0.3)
        cache.put(cache.remember(b"int main;\n"), outcome_for(1))
        with pytest.raises(CacheError, match="locked by another git reduce"):
            cache.close()
    assert lock.exists()  # only the flock's holder may judge the ref lock stale


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
