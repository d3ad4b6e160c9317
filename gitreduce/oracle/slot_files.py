"""A slot's files between two runs: what the last test left goes, the next candidate goes in.

Every run starts from a directory holding only its candidate. The plain way
(remove every entry, write the candidate as a new file) allocates an inode
per run, and on ext4, while the tests themselves create and delete temporary
files by the hundred, allocating one searches past the inodes deleted
recently: measured on two cores at two jobs (gcc12's benchmark case, `perf`),
the candidate's `open(O_CREAT)` took a fifth of gitreduce's own CPU time,
time the two tests beside it needed. So a single-file candidate keeps its
inode: the file the last run was given is rewritten in place, as long as
nothing the test did to it could be seen by the next run. It is rewritten
only when it is still a plain file with the mode it was created with and no
other name (a test that hard-links its candidates away keeps each one as it
was), reached through directories that are still directories; anything else
is removed and created afresh, as before.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from gitreduce.oracle.scratch import make_writable


class SlotFiles:
    """Prepares one slot's directory for each run: see the module's docstring."""

    def __init__(self, workdir: Path, candidate: Path) -> None:
        """`candidate`: where a single-file candidate goes, inside `workdir`."""
        self.workdir = workdir
        self._target = candidate
        self._parts = candidate.relative_to(workdir).parts
        self._created_mode: int | None = None  # the mode the slot's candidate file got

    def place_file(self, content: bytes) -> None:
        """Leave only the candidate `content`, at the slot's candidate path."""
        try:
            if _clear(self.workdir, self._parts) and self._rewrite(self._target, content):
                return
        except PermissionError:  # the test made something read-only: start from nothing
            empty(self.workdir)
        _make_parents(self.workdir, self._parts)
        self._target.write_bytes(content)
        self._created_mode = os.lstat(self._target).st_mode

    def place_files(self, members: dict[str, bytes]) -> None:
        """Leave only the files of a file set, each at its relative path, created afresh."""
        empty(self.workdir)
        for path, content in members.items():
            parts = PurePosixPath(path).parts
            _make_parents(self.workdir, parts)
            self.workdir.joinpath(*parts).write_bytes(content)

    def _rewrite(self, target: Path, content: bytes) -> bool:
        """Write `content` over the kept candidate file; False (nothing written) when the
        file must be created afresh instead."""
        try:
            descriptor = os.open(target, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except PermissionError:  # made unwritable: `place_file` starts from nothing
            raise
        except OSError:  # gone, or something a write cannot open (a busy executable)
            _remove(target)
            return False
        try:
            status = os.fstat(descriptor)
            if (
                not stat.S_ISREG(status.st_mode)
                or status.st_nlink != 1
                or status.st_mode != self._created_mode
            ):
                os.close(descriptor)
                _remove(target)
                return False
            written = 0
            while written < len(content):
                written += os.pwrite(descriptor, content[written:], written)
            os.ftruncate(descriptor, len(content))
        except BaseException:
            os.close(descriptor)
            raise
        os.close(descriptor)
        return True


def empty(directory: Path) -> None:
    """Remove everything in `directory`, also what the test made read-only."""
    try:
        _clear(directory, ())
    except PermissionError:
        make_writable(directory)
        _clear(directory, ())


def empty_temporary(directory: Path) -> None:
    """Leave `directory`, a test's $TMPDIR, empty, whatever the last test did to it.

    A test killed at its timeout or past a winner never runs its own clean-up
    (`trap 'rm -rf "$tmp"' EXIT` does not fire on SIGKILL), nor does a compiler
    killed mid-run remove its temporary files: with $TMPDIR in the scratch
    root, what they leave goes with the slot instead of piling up in the
    user's /tmp (one directory per killed test, a few dozen per reduction at
    two jobs before). One `scandir` of an empty directory when there is nothing.
    """
    try:
        status = os.lstat(directory)
    except FileNotFoundError:  # the test removed its $TMPDIR
        directory.mkdir()
        return
    if not stat.S_ISDIR(status.st_mode):  # ... and put a file or a link there: never followed
        directory.unlink()
        directory.mkdir()
        return
    empty(directory)


def _clear(directory: Path, keep: Sequence[str]) -> bool:
    """Remove every entry below `directory` except the path `keep` (its directories and
    the plain file at its end); whether that file is there, reached through directories
    only (no symbolic link on the way)."""
    kept = False
    with os.scandir(directory) as entries:
        for entry in entries:
            if keep and entry.name == keep[0]:
                if len(keep) == 1 and entry.is_file(follow_symlinks=False):
                    kept = True
                    continue
                if len(keep) > 1 and entry.is_dir(follow_symlinks=False):
                    kept = _clear(Path(entry.path), keep[1:])
                    continue
            _remove(Path(entry.path))
    return kept


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def _make_parents(workdir: Path, parts: Sequence[str]) -> None:
    """The directories leading to a file at `parts`, one by one: never parents=True, which
    would resurrect a scratch root that close() has just removed."""
    for depth in range(1, len(parts)):
        workdir.joinpath(*parts[:depth]).mkdir(exist_ok=True)
