"""Reading inputs from commits: file versions straight from the object store, no checkout.

Every problem with the user's revisions or path becomes a one-line
`UserError` here, before any test runs.
"""

from __future__ import annotations

import os
from pathlib import Path

import pygit2
from pygit2.enums import SortMode

from gitreduce.core import fileset
from gitreduce.core.errors import UserError

BINARY_PROBE = 8192  # git's own heuristic: a NUL in the first 8 KB means binary


def find_repository(start: Path) -> pygit2.Repository:
    """The repository containing `start` (searched upwards, like git does)."""
    found = pygit2.discover_repository(str(start))
    if found is None:
        raise UserError(f"not a git repository (or any parent up to /): {start}")
    try:
        return pygit2.Repository(found)
    except pygit2.GitError as error:
        raise UserError(f"cannot open the repository at {found}: {error}") from error


def to_repo_path(repo: pygit2.Repository, path: str, cwd: Path | None = None) -> str:
    """`path` as typed (relative to `cwd`, or absolute) as a repository-relative '/' path.

    The file need not exist in the working tree: it may only exist at a commit.
    Bare repositories take the path as given.
    """
    if repo.workdir is None:
        relative = os.path.normpath(path)
    else:
        base = os.path.realpath(cwd if cwd is not None else os.getcwd())
        absolute = os.path.normpath(os.path.join(base, path))
        relative = os.path.relpath(absolute, os.path.realpath(repo.workdir))
    relative = relative.replace(os.sep, "/")
    if relative in ("", ".") or relative == ".." or relative.startswith("../"):
        raise UserError(f"{path} is outside the repository {repo.workdir or repo.path}")
    return relative


def resolve_commit(repo: pygit2.Repository, rev: str) -> pygit2.Commit:
    """The commit `rev` names (any `git rev-parse` spelling), or a one-line error."""
    if not rev or rev.startswith("-"):
        raise UserError(f"unknown revision {rev!r}")
    try:
        target = repo.revparse_single(rev)
    except (KeyError, ValueError, pygit2.GitError):
        raise UserError(f"unknown revision {rev!r}") from None
    try:
        commit = target.peel(pygit2.Commit)
    except (ValueError, pygit2.GitError, pygit2.InvalidSpecError):
        raise UserError(f"{rev!r} is not a commit") from None
    return commit


def short(commit: pygit2.Commit) -> str:
    return str(commit.id)[:12]


def blob_at(commit: pygit2.Commit, path: str, rev: str | None = None) -> pygit2.Blob:
    """The blob at `path` in `commit`, or a one-line error naming `rev` (default: the sha)."""
    where = f"{rev} ({short(commit)})" if rev and rev != str(commit.id) else short(commit)
    try:
        entry = commit.tree[path]
    except KeyError:
        raise UserError(f"{path} does not exist at {where}") from None
    if isinstance(entry, pygit2.Tree):
        raise UserError(
            f"{path} is a directory at {where}; give a file, or {path}/ for every file under it"
        )
    if not isinstance(entry, pygit2.Blob):
        raise UserError(f"{path} is a submodule at {where}; give a file")
    if entry.filemode == pygit2.enums.FileMode.LINK:
        raise UserError(f"{path} is a symbolic link at {where}; give the file it points to")
    return entry


def read_blob_text(blob: pygit2.Blob, path: str, where: str) -> bytes:
    content = blob.data
    if b"\0" in content[:BINARY_PROBE]:
        raise UserError(f"{path} is a binary file at {where}; gitreduce reduces text")
    return content


def read_file_at(repo: pygit2.Repository, rev: str, path: str) -> bytes:
    """The content of `path` (repository-relative) at `rev`: no checkout, no index."""
    commit = resolve_commit(repo, rev)
    blob = blob_at(commit, path, rev)
    where = f"{rev} ({short(commit)})" if rev != str(commit.id) else short(commit)
    return read_blob_text(blob, path, where)


def parse_range(spec: str) -> tuple[str, str]:
    """`GOOD..BAD` -> (GOOD, BAD); an empty side means HEAD, as in git."""
    if "..." in spec:
        raise UserError(f"{spec!r}: use GOOD..BAD (two dots), not a symmetric difference")
    good, separator, bad = spec.partition("..")
    if not separator:
        raise UserError(f"{spec!r} is not a range; expected GOOD..BAD")
    if not good and not bad:
        raise UserError(f"{spec!r}: give at least one side of GOOD..BAD")
    return good or "HEAD", bad or "HEAD"


def blob_id_at(commit: pygit2.Commit, path: str) -> pygit2.Oid | None:
    """The id of what is at `path` in `commit`, or None when nothing is."""
    try:
        return commit.tree[path].id
    except KeyError:
        return None


def commits_changing(
    repo: pygit2.Repository, good: str, bad: str, path: str
) -> list[pygit2.Commit]:
    """The commits after GOOD up to BAD, in first-parent order, whose `path` differs from before.

    Oldest first. Walks BAD's first-parent chain back to where it meets
    GOOD's history; GOOD must be an ancestor of BAD. Each returned commit's
    version of `path` differs from the previous one (starting from GOOD's),
    so the list is the sequence of file versions to bisect: version 0 is
    GOOD's, version i that of the i-th commit. The last element holds BAD's
    version. Errors when GOOD and BAD hold the same version.
    """
    good_commit = resolve_commit(repo, good)
    bad_commit = resolve_commit(repo, bad)
    read_blob_text(blob_at(good_commit, path, good), path, good)
    read_blob_text(blob_at(bad_commit, path, bad), path, bad)
    if blob_id_at(good_commit, path) == blob_id_at(bad_commit, path):
        raise UserError(
            f"{path} is identical at {good} ({short(good_commit)}) and {bad} "
            f"({short(bad_commit)}); nothing to reduce"
        )
    if good_commit.id != bad_commit.id and not repo.descendant_of(bad_commit.id, good_commit.id):
        raise UserError(f"{good} is not an ancestor of {bad}; give GOOD..BAD along one history")
    walker = repo.walk(bad_commit.id, SortMode.TOPOLOGICAL)
    walker.simplify_first_parent()
    walker.hide(good_commit.id)
    chain = list(walker)
    chain.reverse()
    changing: list[pygit2.Commit] = []
    previous = blob_id_at(good_commit, path)
    for commit in chain:
        current = blob_id_at(commit, path)
        if current != previous:
            changing.append(commit)
            previous = current
    return changing


def commits_changing_any(
    repo: pygit2.Repository, good: pygit2.Commit, bad: pygit2.Commit, paths: list[str]
) -> list[pygit2.Commit]:
    """The commits after GOOD up to BAD, in first-parent order, that change what is at any of
    `paths` (oldest first); none when GOOD is not an ancestor of BAD."""
    if good.id == bad.id or not repo.descendant_of(bad.id, good.id):
        return []
    walker = repo.walk(bad.id, SortMode.TOPOLOGICAL)
    walker.simplify_first_parent()
    walker.hide(good.id)
    chain = list(walker)
    chain.reverse()
    changing: list[pygit2.Commit] = []
    previous = [blob_id_at(good, path) for path in paths]
    for commit in chain:
        current = [blob_id_at(commit, path) for path in paths]
        if current != previous:
            changing.append(commit)
            previous = current
    return changing


def kind_at(commit: pygit2.Commit, path: str) -> str | None:
    """What `path` is in `commit`: "directory", "file", "link", "submodule", or None."""
    try:
        entry = commit.tree[path]
    except KeyError:
        return None
    if isinstance(entry, pygit2.Tree):
        return "directory"
    if not isinstance(entry, pygit2.Blob):
        return "submodule"
    return "link" if entry.filemode == pygit2.enums.FileMode.LINK else "file"


def read_set_at(
    repo: pygit2.Repository, rev: str, paths: list[str]
) -> tuple[dict[str, bytes], list[str]]:
    """Every regular file at or under the repository-relative `paths` in `rev` (no checkout),
    by repository path, and the symbolic links, submodules and names that are not UTF-8
    met there, which a set leaves out. A path absent at `rev` contributes nothing."""
    members, skipped = set_members_at(repo, rev, paths)
    return {path: blob.data for path, blob in members}, skipped


def set_members_at(
    repo: pygit2.Repository, rev: str, paths: list[str]
) -> tuple[list[tuple[str, pygit2.Blob]], list[str]]:
    """`read_set_at`'s files as blobs not yet read (only trees are), and what it leaves out:
    a set too large to reduce is refused before its contents are read."""
    commit = resolve_commit(repo, rev)
    members: list[tuple[str, pygit2.Blob]] = []
    skipped: list[str] = []
    for path in paths:
        try:
            entry = commit.tree[path]
        except KeyError:
            continue
        _collect(entry, path, members, skipped)
    return members, skipped


def _collect(
    entry: pygit2.Object, path: str, members: list[tuple[str, pygit2.Blob]], skipped: list[str]
) -> None:
    if isinstance(entry, pygit2.Tree):
        for child in entry:
            _collect(child, f"{path}/{child.name}", members, skipped)
    elif (
        isinstance(entry, pygit2.Blob)
        and entry.filemode != pygit2.enums.FileMode.LINK
        and fileset.check_path(path) is None  # a name git stores but a set cannot hold
    ):
        members.append((path, entry))
    else:
        skipped.append(path)
