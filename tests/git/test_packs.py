"""Blobs written straight into a pack: git itself reads, verifies and repacks what is written."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pygit2
import pytest
from support import fsck_clean, git, git_env, make_user_repo

from gitreduce.git import packs

# sizes around the header's boundaries: 4 bits in the first byte, 7 in each next one
CONTENTS = [b"", b"x" * 15, b"y" * 16, b"z" * 2047, b"w" * 2048, os.urandom(300_000)]


def git_bytes(cwd: Path, *args: str, given: bytes = b"") -> bytes:
    """A git command's output, fed `given`: blobs are bytes, not text."""
    return subprocess.run(
        ["git", *args], cwd=cwd, env=git_env(), input=given, capture_output=True, check=True
    ).stdout


@pytest.fixture
def repo_path(tmp_path: Path) -> Path:
    return make_user_repo(tmp_path / "work")


def test_git_reads_and_verifies_every_blob(repo_path):
    before = pygit2.Repository(str(repo_path))  # a handle opened before the pack existed
    written = packs.write_blobs(repo_path / ".git" / "objects", CONTENTS)
    assert written is not None and written.path.exists() and written.index.exists()
    verified = git(repo_path, "verify-pack", "-v", str(written.index)).stdout
    assert f"non delta: {len(CONTENTS)} objects" in verified
    for content, (key, size) in zip(CONTENTS, written.blobs, strict=True):
        assert size == len(content)
        assert key == git_bytes(repo_path, "hash-object", "--stdin", given=content).decode().strip()
        assert git_bytes(repo_path, "cat-file", "blob", key) == content
        assert before[key].data == content
    assert not list((repo_path / ".git" / "objects" / "pack").glob("tmp_pack_*"))
    fsck_clean(repo_path)


def test_a_repeated_blob_is_written_once(repo_path):
    written = packs.write_blobs(repo_path / ".git" / "objects", [b"same\n", b"other\n", b"same\n"])
    assert written is not None
    assert [size for _, size in written.blobs] == [5, 6]
    assert "non delta: 2 objects" in git(repo_path, "verify-pack", "-v", str(written.index)).stdout


def test_nothing_to_write_writes_nothing(repo_path):
    pack_directory = repo_path / ".git" / "objects" / "pack"
    before = sorted(pack_directory.iterdir())
    assert packs.write_blobs(repo_path / ".git" / "objects", []) is None
    assert sorted(pack_directory.iterdir()) == before


def test_deleting_a_pack_git_has_removed_is_no_error(repo_path):
    written = packs.write_blobs(repo_path / ".git" / "objects", CONTENTS)
    assert written is not None
    # git removes our pack too, its unreachable blobs loosened: deleting it again is no error
    git(repo_path, "repack", "-A", "-d", "-q")
    assert not written.path.exists()
    packs.delete(written.path)
    for key, _ in written.blobs:
        assert git(repo_path, "cat-file", "-e", key, check=False).returncode == 0


def test_the_header_is_gits(repo_path):
    """Each size's header as git writes it, read back from a pack git made itself."""
    for content in CONTENTS:
        key = git_bytes(repo_path, "hash-object", "-w", "--stdin", given=content).strip()
        made = git_bytes(repo_path, "pack-objects", "--stdout", given=key + b"\n")
        assert made[12:].startswith(packs.blob_header(len(content)))


def test_the_same_blobs_again_leave_the_pack_written_before(repo_path):
    """A pack is named by its checksum: written again, the one in place is kept as it is."""
    objects = repo_path / ".git" / "objects"
    first = packs.write_blobs(objects, CONTENTS)
    assert first is not None
    written_at = first.path.stat().st_mtime_ns
    again = packs.write_blobs(objects, CONTENTS)
    assert again == first and first.path.stat().st_mtime_ns == written_at
    assert len(list((objects / "pack").glob(f"{first.path.stem}.*"))) == 2
    assert not list((objects / "pack").glob("tmp_pack_*"))
