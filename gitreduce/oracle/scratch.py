"""Scratch roots: the private directories tests run in, each owned by a live run or removed.

Job: make a scratch root that says who owns it, and remove the roots no live
run owns (their run was killed with -9, crashed, or the machine went down)
the next time a run starts, in the same parent directory (`$TMPDIR`).

Ownership is an exclusive `flock` on the root's `.owner` file, taken before
the file gets that name and held until the root is gone. The kernel drops it
when its process dies, however it dies, so "no live run owns this root" is
one non-blocking lock attempt: no pid that could have been reused by another
process, no clock, and no window in which a root being created looks
abandoned. A root without an `.owner` file (an older gitreduce's, or another
program's) is never touched.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import stat
import tempfile
import threading
from pathlib import Path

PREFIX = "gitreduce-"
_OWNER = ".owner"

_swept: set[str] = set()  # parent directories already swept by this process
_swept_lock = threading.Lock()


class ScratchRoot:
    """A fresh directory under `parent` (default: `$TMPDIR`), owned by this process until
    `remove()`."""

    def __init__(self, parent: Path | None = None) -> None:
        self.path = Path(tempfile.mkdtemp(prefix=PREFIX, dir=parent)).resolve()
        unnamed = self.path / f"{_OWNER}.new"
        self._lock: int | None = None
        try:
            self._lock = os.open(unnamed, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            os.write(self._lock, f"{os.getpid()}\n".encode())  # for a curious human
            os.rename(unnamed, self.path / _OWNER)
        except BaseException:
            self.remove()
            raise

    def remove(self) -> None:
        """Delete the root, then let go of it; idempotent."""
        remove_tree(self.path)
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None


def sweep_once(parent: Path | None = None) -> list[Path]:
    """`remove_stale(parent)` the first time this process asks for that directory."""
    directory = str(parent) if parent is not None else tempfile.gettempdir()
    with _swept_lock:
        if directory in _swept:
            return []
        _swept.add(directory)
    return remove_stale(Path(directory))


def remove_stale(parent: Path) -> list[Path]:
    """Remove every scratch root under `parent` that no live run owns; the roots removed."""
    removed: list[Path] = []
    try:
        entries = list(os.scandir(parent))
    except OSError:
        return removed
    for entry in entries:
        if not entry.name.startswith(PREFIX) or not entry.is_dir(follow_symlinks=False):
            continue
        try:
            owner = os.open(os.path.join(entry.path, _OWNER), os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            continue  # no owner record: not ours to judge
        try:
            fcntl.flock(owner, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(owner)  # held: its run is alive
            continue
        try:
            remove_tree(Path(entry.path))
        finally:
            os.close(owner)
        removed.append(Path(entry.path))
    return removed


def remove_tree(path: Path) -> None:
    """Best-effort removal: called while shutting down, where raising helps nobody."""
    try:
        shutil.rmtree(path)
    except FileNotFoundError:
        pass
    except PermissionError:  # the test made something read-only
        with contextlib.suppress(OSError):
            make_writable(path)
        shutil.rmtree(path, ignore_errors=True)
    except OSError:
        shutil.rmtree(path, ignore_errors=True)


def make_writable(path: Path) -> None:
    pending = [str(path)]
    while pending:
        directory = pending.pop()
        os.chmod(directory, stat.S_IRWXU)
        with os.scandir(directory) as entries:
            pending.extend(e.path for e in entries if e.is_dir(follow_symlinks=False))
