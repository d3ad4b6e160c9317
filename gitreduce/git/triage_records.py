"""What a triage keeps between runs: per-finding records, notes, and the hook's queue.

Job: the files under `<git common dir>/gitreduce/` that make a triage
resumable and bounded, and the notes under `refs/notes/reduce` that show its
results in `git log --notes=reduce`.

- `triage/<key>.json`: one finding's outcome (reduced, not reproduced, ...)
  and its summary. Local files, never fetched: they decide which findings a
  rerun skips, which a note cannot (notes travel with fetches, so a
  stranger's note saying "reduced" would hide a finding).
- `queue/<sha>`: a commit the post-commit hook handed over; `queue.lock`:
  held (flock) by the one process draining the queue, so fifty commits start
  one drain, not fifty reductions.

Records are written whole to a temporary file and renamed into place, so a
kill -9 leaves the old record or the new one, never half of one.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pygit2

from gitreduce.git.layout import common_dir, exclusive
from gitreduce.git.results import user_signature

NOTES_REF = "refs/notes/reduce"
_HEX = frozenset("0123456789abcdef")
_NOTE_TRIES = 20


def _state_dir(repo: pygit2.Repository, name: str) -> Path:
    directory = common_dir(repo) / "gitreduce" / name
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def load_record(repo: pygit2.Repository, key: str) -> dict[str, object] | None:
    """The record of finding `key`, or None (none yet, or unreadable: then it is redone)."""
    path = _state_dir(repo, "triage") / f"{key}.json"
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def save_record(repo: pygit2.Repository, key: str, record: dict[str, object]) -> None:
    directory = _state_dir(repo, "triage")
    descriptor, temporary = tempfile.mkstemp(dir=directory, prefix=f".{key}.", suffix=".tmp")
    try:
        with os.fdopen(descriptor, "w") as out:
            json.dump(record, out, indent=1, sort_keys=True)
        os.replace(temporary, directory / f"{key}.json")
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def attach_note(repo: pygit2.Repository, sha: str, text: str) -> bool:
    """`text` as commit `sha`'s note under `refs/notes/reduce`, replacing any; whether it
    was written (another process writing a note at the same moment is waited for)."""
    signature = user_signature(repo)
    for _ in range(_NOTE_TRIES):
        try:
            repo.create_note(text, signature, signature, sha, NOTES_REF, True)
            return True
        except (pygit2.GitError, pygit2.AlreadyExistsError, ValueError):
            time.sleep(0.1)  # the notes ref is locked by another writer
    return False


def result_note(repo: pygit2.Repository, branch: str, interrupted: bool) -> str | None:
    """The note the hook attaches for a result branch: its message and its change."""
    reference = repo.references.get(f"refs/heads/{branch}")
    if reference is None:
        return None
    tip = reference.peel(pygit2.Commit)
    parts = []
    if interrupted:
        parts.append("git reduce was interrupted; this is its best result.\n\n")
    parts.append(tip.message.rstrip("\n") + "\n\n")
    if tip.parents:
        parts.append(repo.diff(tip.parents[0], tip).patch or "")
    parts.append(f"\nBranch: {branch}\n")
    return "".join(parts)


def queue_path(repo: pygit2.Repository) -> Path:
    """The queue directory the post-commit hook writes commit ids into."""
    return _state_dir(repo, "queue")


def queued(repo: pygit2.Repository) -> list[str]:
    """The queued commits, oldest entry first; names that are not commit ids are ignored."""
    entries = []
    for entry in queue_path(repo).iterdir():
        name = entry.name
        if len(name) in (40, 64) and set(name) <= _HEX:
            with contextlib.suppress(OSError):
                entries.append((entry.stat().st_mtime_ns, name))
    return [name for _, name in sorted(entries)]


def enqueue(repo: pygit2.Repository, sha: str) -> None:
    (queue_path(repo) / sha).touch()


def dequeue(repo: pygit2.Repository, sha: str) -> None:
    (queue_path(repo) / sha).unlink(missing_ok=True)


@contextlib.contextmanager
def draining(repo: pygit2.Repository) -> Iterator[bool]:
    """Whether this process now drains the queue (the lock dies with it, even by kill -9)."""
    lock = _state_dir(repo, "queue").parent / "queue.lock"
    with exclusive(lock) as held:
        yield held
