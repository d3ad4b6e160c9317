"""A file set as it meets the file system and the object store: read from directories
and named files, or from a commit's tree, and the reduced set written back.

Kept apart from the reduction (`fileset.py`) and shared with the pair-of-sets modes,
which read and write their two sets the same way.
"""

from __future__ import annotations

import itertools
import os
import posixpath
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pygit2

from gitreduce.core import fileset
from gitreduce.core.errors import UserError
from gitreduce.git.revisions import (
    find_repository,
    kind_at,
    parse_range,
    read_set_at,
    resolve_commit,
    set_members_at,
    to_repo_path,
)

_BINARY_PROBE = 8192

# A set is copied into every test's scratch directory and tokenized whole before the first
# test: past these sizes the directory was given by mistake (a home, /tmp, a build tree),
# and reading it would take minutes of silence before the error a reduction would end in.
MAX_SET_FILES = 10_000
MAX_SET_BYTES = 64 * 1024 * 1024


@dataclass
class FileSet:
    """The set as read: its directory, members by relative path, members never reduced
    inside (binary), and what was left out."""

    root: Path
    files: dict[str, bytes]
    opaque: frozenset[str]
    warnings: list[str]


def read_set(paths: Sequence[Path]) -> FileSet:
    """The files under `paths` (directories walked, `.git` and nested repositories left
    out), relative to their common directory, or a one-line reason there is none."""
    if not paths:
        raise UserError("give a directory or files to reduce")
    skipped: list[str] = []
    found: list[Path] = []
    for path in paths:
        if path.is_symlink():
            raise UserError(f"{path} is a symbolic link; give the file or directory it names")
        if not path.exists():
            raise UserError(f"{path}: no such file or directory")
        if path.is_dir():
            # no further than one file past the limit: a home directory's walk takes minutes
            room = max(0, MAX_SET_FILES + 1 - len(found))
            found.extend(itertools.islice(_walk(path, skipped), room))
        elif path.is_file():
            found.append(path)
        else:
            raise UserError(f"{path} is not a regular file or a directory")
    if not found:
        raise UserError(f"no files to reduce under {', '.join(map(str, paths))}")
    resolved = [path.resolve() for path in found]
    tops = [path.resolve() if path.is_dir() else path.resolve().parent for path in paths]
    root = Path(os.path.commonpath(tops))
    _require_reducible_size(root, len(resolved), sum(path.stat().st_size for path in resolved))
    files: dict[str, bytes] = {}
    for path in resolved:
        relative = path.relative_to(root).as_posix()
        problem = fileset.check_path(relative)
        if problem is not None:
            raise UserError(f"{path} cannot be in the set: {problem}")
        files[relative] = path.read_bytes()
    return as_set(root, files, skipped)


def _require_reducible_size(root: Path, count: int, size: int) -> None:
    """A one-line error for a set past `MAX_SET_FILES` or `MAX_SET_BYTES`, before it is read."""
    if count > MAX_SET_FILES:
        held = f"more than {MAX_SET_FILES:,} files"
    elif size > MAX_SET_BYTES:
        held = f"{size / 2**20:,.1f} MiB, more than {MAX_SET_BYTES // 2**20} MiB"
    else:
        return
    raise UserError(
        f"the set under {root} holds {held}: too large to reduce as one set (every test "
        "gets a copy of it); give the directories or files the failure needs"
    )


def as_set(root: Path, files: dict[str, bytes], skipped: list[str]) -> FileSet:
    """The set of `files` under `root`, its binary members found and what was left out said."""
    if not files:
        raise UserError(f"no files to reduce under {root}")
    _require_reducible_size(root, len(files), sum(map(len, files.values())))
    if not any(content.strip() for content in files.values()):
        raise UserError("every file of the set is empty; there is nothing to reduce")
    opaque = frozenset(name for name, text in files.items() if b"\0" in text[:_BINARY_PROBE])
    warnings = []
    if skipped:
        warnings.append(
            "left out (symbolic links, nested repositories, names that are not UTF-8): "
            + ", ".join(skipped)
        )
    if opaque:
        warnings.append(
            f"binary files are kept or removed whole, never reduced inside: "
            f"{', '.join(sorted(opaque))}"
        )
    return FileSet(root, files, opaque, warnings)


def _walk(directory: Path, skipped: list[str]) -> Iterable[Path]:
    """Regular files under `directory`, in path order; symbolic links and nested
    repositories (a submodule's `.git` file, another work tree) are named in `skipped`."""
    for entry in sorted(directory.iterdir()):
        if entry.name == ".git":
            continue
        if entry.is_symlink() or fileset.check_path(entry.name) is not None:
            skipped.append(str(entry))
        elif entry.is_dir():
            if (entry / ".git").exists():
                skipped.append(f"{entry}/")
            else:
                yield from _walk(entry, skipped)
        elif entry.is_file():
            yield entry
        else:
            skipped.append(str(entry))


@dataclass(frozen=True)
class RevisionSets:
    """The files under some paths at GOOD and at BAD, relative to their common directory."""

    repo: pygit2.Repository
    good: str
    bad: str
    good_commit: pygit2.Commit
    bad_commit: pygit2.Commit
    paths: list[str]  # repository-relative, as given
    root: str  # the common directory of the paths ("" for the repository's top)
    seed: dict[str, bytes]  # at GOOD, relative to `root`; may be empty (all new at BAD)
    variant: dict[str, bytes]  # at BAD
    skipped: list[str]  # symbolic links and submodules met under the paths, at either commit

    @property
    def directory(self) -> Path:
        """Where `root` is in the work tree (or the repository, when it has none)."""
        return Path(self.repo.workdir or self.repo.path) / self.root


def read_revision_sets(
    revisions: str,
    paths: Sequence[str],
    directory: Path | None = None,
    deleted: bool = False,
) -> RevisionSets:
    """The sets under `paths` at GOOD and BAD, read from the object store (nothing is checked
    out), or a one-line reason there is no such pair: a path missing at BAD, a path that is
    a file at one commit and a directory at the other, a symbolic link or a submodule named
    itself, or the same files at both.

    With `deleted` (a pair of sets), a path that is only at GOOD is a file BAD deleted:
    part of the change, as the files only one set holds are."""
    repo = find_repository(directory or Path.cwd())
    good, bad = parse_range(revisions)
    good_commit, bad_commit = resolve_commit(repo, good), resolve_commit(repo, bad)
    where = [to_repo_path(repo, path, directory) for path in paths]
    tops = []
    for path in where:
        before, after = kind_at(good_commit, path), kind_at(bad_commit, path)
        if after is None and deleted:
            after = before
        if after is None:
            raise UserError(f"{path} does not exist at {bad}")
        if before is not None and before != after:
            raise UserError(f"{path} is a {before} at {good} and a {after} at {bad}")
        if after not in ("directory", "file"):
            raise UserError(f"{path} is a {after} at {bad}; give files or directories")
        tops.append(path if after == "directory" else posixpath.dirname(path))
    root = posixpath.commonpath(tops)
    members, skipped = set_members_at(repo, bad, where)
    # counted before any file is read (`as_set` weighs them once they are)
    _require_reducible_size(Path(repo.workdir or repo.path) / root, len(members), 0)
    variant = {path: blob.data for path, blob in members}
    seed, skipped_before = read_set_at(repo, good, where)
    if variant == seed:
        raise UserError(f"{', '.join(where)}: the same at {good} and {bad}; nothing to reduce")

    def relative(files: dict[str, bytes]) -> dict[str, bytes]:
        return {posixpath.relpath(path, root or "."): content for path, content in files.items()}

    return RevisionSets(
        repo=repo,
        good=good,
        bad=bad,
        good_commit=good_commit,
        bad_commit=bad_commit,
        paths=where,
        root=root,
        seed=relative(seed),
        variant=relative(variant),
        skipped=sorted(set(skipped) | set(skipped_before)),
    )


def write_set(output: Path, files: dict[str, bytes], original: Iterable[str]) -> None:
    """The reduced set under `output` (created if need be, also for no files) at its
    relative paths.

    A member of the `original` set the result dropped is removed from `output`
    if it is there, as an earlier run's result leaves it: a second run into
    the same directory must not show files its result does not hold. Other
    files there are the user's and stay.
    """
    try:
        output.mkdir(parents=True, exist_ok=True)
        for relative in set(original) - files.keys():
            stale = output.joinpath(*relative.split("/"))
            if stale.is_file() and not stale.is_symlink():
                stale.unlink()
                _remove_empty_parents(stale.parent, output)
        for relative, content in files.items():
            target = output.joinpath(*relative.split("/"))
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
    except OSError as error:
        raise UserError(f"cannot write the reduced set to {output}: {error.strerror}") from None


def _remove_empty_parents(directory: Path, output: Path) -> None:
    """Remove `directory` and its parents up to (not including) `output` while empty."""
    while directory != output and output in directory.parents:
        try:
            directory.rmdir()
        except OSError:
            return
        directory = directory.parent
