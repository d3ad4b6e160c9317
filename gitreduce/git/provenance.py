"""Which cached verdicts this repository wrote itself: its secret, its label, revoked runs.

Job: the files that make a verdict record's provenance decidable, all of them
under `<common git dir>/gitreduce/`:
- `secret`: 32 random bytes, created on first use (mode 0600). Every record
  this repository writes carries an HMAC under it (see
  `gitreduce.git.cache_format.RecordCodec`), so a record whose MAC verifies
  was written here. The file lives beside the refs, never in an object, so
  `git push` and `git fetch` never carry it: a stranger cannot sign a record
  this repository would take for its own, whatever the fetched ref says.
- `revoked`: ids of runs whose verdicts turned out inconsistent (a result
  that the run had accepted was not stably bad when re-run alone). Their
  records are ignored from then on; see `GitVerdictCache.revoke_run`.

Nothing here is shared: trust is a local decision. The origin label records
carry (`user@host`) is for people reading a cache; no decision depends on it.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import re
import secrets
import socket
from pathlib import Path

import pygit2

from gitreduce.core.errors import UserError
from gitreduce.git.layout import common_dir

SECRET_BYTES = 32
_DIRECTORY = "gitreduce"
_SECRET = "secret"
_REVOKED = "revoked"
_RUN_ID = re.compile(r"[0-9a-f]{12}")
_LABEL_UNSAFE = re.compile(r"[^A-Za-z0-9._@+-]")


def trust_directory(repo: pygit2.Repository) -> Path:
    """`<common dir>/gitreduce`: shared by the linked worktrees of one repository."""
    return common_dir(repo) / _DIRECTORY


def repository_secret(repo: pygit2.Repository) -> bytes:
    """This repository's secret, created on first use.

    Two first uses at once agree: each writes a private file and links it into
    place, which fails when the other's is there already, and both read the
    one that won. Raises OSError when the git directory is not writable, and
    `UserError` for a damaged file.
    """
    directory = trust_directory(repo)
    path = directory / _SECRET
    if not path.exists():
        directory.mkdir(mode=0o700, exist_ok=True)
        draft = directory / f"{_SECRET}.{os.getpid()}.{secrets.token_hex(4)}"
        descriptor = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(descriptor, secrets.token_bytes(SECRET_BYTES))
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
        try:
            with contextlib.suppress(FileExistsError):
                os.link(draft, path)
        finally:
            draft.unlink()
    secret = path.read_bytes()
    if len(secret) != SECRET_BYTES:
        raise UserError(
            f"{path} is damaged ({len(secret)} bytes, not {SECRET_BYTES}); delete it, and the "
            "verdicts cached here are confirmed by a run once more"
        )
    return secret


def new_run_id() -> str:
    """The id a run's records carry, so that the run can be revoked as a whole."""
    return secrets.token_hex(6)


def revoked_runs(repo: pygit2.Repository) -> frozenset[str]:
    """Ids of the runs whose verdicts are revoked; lines that are no run id are ignored."""
    try:
        text = (trust_directory(repo) / _REVOKED).read_text(errors="replace")
    except FileNotFoundError:
        return frozenset()
    return frozenset(line.strip() for line in text.splitlines() if _RUN_ID.fullmatch(line.strip()))


def revoke(repo: pygit2.Repository, run: str) -> None:
    """Add `run` to the revoked runs (one short append: concurrent writers do not mix)."""
    directory = trust_directory(repo)
    directory.mkdir(mode=0o700, exist_ok=True)
    descriptor = os.open(directory / _REVOKED, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.write(descriptor, f"{run}\n".encode())
    finally:
        os.close(descriptor)


def origin_label() -> str:
    """`user@host`, for people reading a cache: where a record says it came from."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    label = f"{user}@{socket.gethostname() or 'unknown'}"
    return _LABEL_UNSAFE.sub("-", label)[:64]
