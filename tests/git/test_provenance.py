"""A repository's secret, its revoked runs and the origin label, on real repositories."""

from __future__ import annotations

import stat
import subprocess
import sys

import pygit2
import pytest
from support import PACKAGE_ROOT, git, make_user_repo

from gitreduce.core.errors import UserError
from gitreduce.git.provenance import (
    SECRET_BYTES,
    new_run_id,
    origin_label,
    repository_secret,
    revoke,
    revoked_runs,
    trust_directory,
)


def test_the_secret_is_made_once_private_and_outside_the_object_store(tmp_path):
    work = make_user_repo(tmp_path / "work")
    repo = pygit2.Repository(str(work))
    secret = repository_secret(repo)
    path = work / ".git" / "gitreduce" / "secret"
    assert len(secret) == SECRET_BYTES and path.read_bytes() == secret
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert repository_secret(pygit2.Repository(str(work))) == secret
    assert list(path.parent.iterdir()) == [path]  # no draft left behind
    # a linked worktree shares it; a clone has its own
    git(work, "worktree", "add", "-q", str(tmp_path / "linked"), "topic")
    assert repository_secret(pygit2.Repository(str(tmp_path / "linked"))) == secret
    git(tmp_path, "clone", "-q", str(work), str(tmp_path / "clone"))
    assert repository_secret(pygit2.Repository(str(tmp_path / "clone"))) != secret


def test_processes_making_the_secret_at_once_agree(tmp_path):
    bare = pygit2.init_repository(str(tmp_path / "store.git"), bare=True)
    program = (
        "import sys, pygit2\n"
        "from gitreduce.git.provenance import repository_secret\n"
        "sys.stdout.write(repository_secret(pygit2.Repository(sys.argv[1])).hex())\n"
    )
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", program, bare.path],
            cwd=PACKAGE_ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(6)
    ]
    secrets = {process.communicate(timeout=60)[0] for process in processes}
    assert secrets == {repository_secret(bare).hex()}
    assert sorted(path.name for path in trust_directory(bare).iterdir()) == ["secret"]


def test_a_damaged_secret_is_a_user_error(tmp_path):
    bare = pygit2.init_repository(str(tmp_path / "store.git"), bare=True)
    repository_secret(bare)
    (trust_directory(bare) / "secret").write_bytes(b"short")
    with pytest.raises(UserError, match=r"secret is damaged \(5 bytes, not 32\); delete it"):
        repository_secret(bare)


def test_revoked_runs_are_listed_and_junk_lines_ignored(tmp_path):
    bare = pygit2.init_repository(str(tmp_path / "store.git"), bare=True)
    assert revoked_runs(bare) == frozenset()
    runs = [new_run_id() for _ in range(2)]
    for run in runs:
        revoke(bare, run)
    with open(trust_directory(bare) / "revoked", "a") as revoked:
        revoked.write("not a run id\n\n")
    assert revoked_runs(bare) == frozenset(runs)


def test_the_origin_label_is_user_at_host_and_plain():
    label = origin_label()
    assert "@" in label and len(label) <= 64
    assert all(char.isalnum() or char in "._@+-" for char in label)
