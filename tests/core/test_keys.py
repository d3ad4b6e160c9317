"""Cache keys: a file's blob id and a file set's tree id, computed without git, checked
against what git itself writes for the same content."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pygit2
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pygit2.enums import FileMode
from support import git, git_env

from gitreduce.core import fileset
from gitreduce.core.keys import blob_id, candidate_key, set_tree

# Names whose order differs between a path sort and git's (a directory sorts as "name/").
TRICKY = {
    "a.c": b"int a;\n",
    "a/b.c": b"int b;\n",
    "a-b.h": b"",
    "a0": b"zero\n",
    "a/deep/er/x.h": b"#define X 1\n",
    "b/a": b"\0binary",
    "z": b"last",
}


def _git_write_tree(repo: Path, files: dict[str, bytes]) -> str:
    """The tree git writes for `files` (mode 100644) through an index of its own."""
    env = {**git_env(), "GIT_INDEX_FILE": str(repo / ".git" / "scratch-index")}
    for path, content in files.items():
        blob = subprocess.run(
            ["git", "hash-object", "-w", "--stdin"],
            cwd=repo,
            env=env,
            input=content,
            capture_output=True,
            check=True,
        ).stdout.decode()
        cacheinfo = f"100644,{blob.strip()},{path}"
        subprocess.run(
            ["git", "update-index", "--add", "--cacheinfo", cacheinfo],
            cwd=repo,
            env=env,
            check=True,
        )
    return subprocess.run(
        ["git", "write-tree"], cwd=repo, env=env, capture_output=True, check=True, text=True
    ).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    git(tmp_path, "init", "-q")
    return tmp_path


@pytest.mark.parametrize(
    "files",
    [
        {"main.c": b"int main(void) { return 0; }\n"},
        {"x.h": b"", "y.c": b"\n"},
        TRICKY,
    ],
    ids=["one", "empty-files", "nested-and-git-order"],
)
def test_a_set_is_keyed_by_the_tree_git_writes_for_its_files(
    repo: Path, files: dict[str, bytes]
) -> None:
    key = candidate_key(fileset.pack(files))
    assert key == _git_write_tree(repo, files)
    assert git(repo, "cat-file", "-t", key).stdout.strip() == "tree"


def test_the_empty_set_is_the_empty_tree(repo: Path) -> None:
    assert candidate_key(fileset.pack({})) == _git_write_tree(repo, {})


def test_a_file_is_keyed_by_its_blob_id_as_before(repo: Path) -> None:
    text = b"int main(void) { return 0; }\n" * 300
    (repo / "f.c").write_bytes(text)
    assert candidate_key(text) == blob_id(text) == git(repo, "hash-object", "f.c").stdout.strip()


@pytest.mark.parametrize(
    "data",
    [
        fileset.HEADER + b"2 b.c\nhi2 a.c\nhi",  # out of order
        fileset.HEADER + b"02 a.c\nhi",  # a size pack never writes
        fileset.HEADER + b"2 a\nhi2 a/b\nhi",  # a file and a directory of one name
        fileset.HEADER + b"2 a//b\nhi",  # an empty path component
        fileset.HEADER + b"9 a.c\nshort",  # cut short
        fileset.HEADER + b"2 a.c\nhi2 a.c\nhi",  # twice
    ],
)
def test_a_text_that_only_looks_like_a_packed_set_keeps_its_blob_id(data: bytes) -> None:
    assert set_tree(data) is None
    assert candidate_key(data) == blob_id(data)


_names = st.text(alphabet="ab.-_0/", min_size=1, max_size=6).filter(
    lambda name: fileset.check_path(name) is None and "//" not in name and not name.endswith("/")
)


@pytest.fixture(scope="module")
def bare(tmp_path_factory: pytest.TempPathFactory) -> pygit2.Repository:
    return pygit2.init_repository(str(tmp_path_factory.mktemp("keys") / "bare.git"), bare=True)


@given(files=st.dictionaries(_names, st.binary(max_size=40), max_size=6))
def test_any_set_git_can_hold_is_keyed_by_the_tree_libgit2_writes(
    bare: pygit2.Repository, files: dict[str, bytes]
) -> None:
    paths = sorted(files)
    if any(other.startswith(path + "/") for path in paths for other in paths):
        return  # a file and a directory of one name: no tree holds that
    index = pygit2.Index()
    for path, content in files.items():
        index.add(pygit2.IndexEntry(path, bare.create_blob(content), FileMode.BLOB))
    assert candidate_key(fileset.pack(files)) == str(index.write_tree(bare))
