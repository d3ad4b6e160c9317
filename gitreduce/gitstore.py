"""The repository's object store as gitreduce's memory: verdict cache, result branches, patches.

Everything here writes objects and refs only; nothing reads or writes the
user's working tree, index, HEAD or any branch but the `reduce/<name>` result
branch it was asked to create.

The verdict cache
-----------------
One ref per test fingerprint, `refs/reduce/cache/<fingerprint>`, points at a
commit whose tree is::

    README                          what this is, how to share it
    batches/<batch>/verdicts        the records of one checkpoint: lines "<blob id> <record>"
    batches/<batch>/<16 hex>        that checkpoint's candidate blobs (entry id == key)
    verdicts/<ab>                   compacted records, one blob per key prefix
    candidates/<ab>/<14 hex>        compacted candidate blobs

Why this shape:
- Verdicts and candidates are reachable from a ref, so `git gc --prune=now`
  keeps them and `git push/fetch 'refs/reduce/*'` carries them.
- A checkpoint writes only what is new (one batch) plus a few small trees, so
  its cost does not grow with the cache. Every `compact_after` batches they
  are folded into the 256 prefix shards, keeping the batch list, which each
  checkpoint rewrites, short. Reads load everything into a dict once.
- Each checkpoint is a commit whose parent is the previous tip: history only
  moves forward, so fetches fast-forward, and a compare-and-swap on the ref
  (libgit2's `Reference.set_target` checks the old value under the ref lock)
  lets concurrent writers detect each other. On conflict the writer re-reads
  the tip, rebuilds its batch on top of it (records are append-only, so the
  merge is a union) and retries: nobody's verdicts are lost.
- Objects are written before the ref moves, and loose objects, packs and refs
  all appear by rename, so a kill -9 at any instant leaves the ref on a
  complete commit; only the verdicts since the last checkpoint are lost.
- Records are compact JSON arrays and candidate entries have short names:
  once candidates are delta-packed, this bookkeeping is what takes the space.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import secrets
import threading
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta, timezone
from email.header import Header
from email.utils import format_datetime, formataddr
from pathlib import Path

import pygit2
from pygit2.enums import FileMode

from gitreduce.errors import UserError
from gitreduce.outcome import Outcome, Verdict

CACHE_REF_PREFIX = "refs/reduce/cache/"
RESULT_BRANCH_PREFIX = "reduce/"

_VERDICTS = "verdicts"
_CANDIDATES = "candidates"
_BATCHES = "batches"
_README = "README"
# Entry names are the key's first hex digits: the entry's id is the full key,
# the name only needs to be unique where it stands (64 bits) and short.
_NAME_END = 16
_FINGERPRINT = re.compile(r"[0-9a-f]{4,64}")

_README_TEXT = """\
gitreduce verdict cache for one test fingerprint.

batches/<batch>/verdicts   lines "<candidate blob id> [verdict, exit, seconds, signature]"
batches/<batch>/<hex>      the candidates of that batch (entry id = candidate blob id)
verdicts/<ab>              older batches' records, by the id's first two hex digits
candidates/<ab>/<hex>      older batches' candidates

Candidates are kept reachable so that gc does not drop them. Share it with:
    git push origin 'refs/reduce/*'
    git fetch origin 'refs/reduce/*:refs/reduce/*'
"""


class CacheError(UserError):
    """The cache could not be saved (e.g. its ref stayed locked); the reduction itself is fine."""


def cache_signature() -> pygit2.Signature:
    """Cache commits are machine bookkeeping: a fixed identity, no user config needed."""
    return pygit2.Signature("git reduce", "gitreduce@localhost", int(time.time()), 0)


def _encode(outcome: Outcome) -> bytes:
    """A compact JSON array `[verdict, exit_code, seconds(, signature)]`.

    Seconds are kept to the millisecond: they only feed statistics.
    """
    record: list[object] = [outcome.verdict.value, outcome.exit_code, round(outcome.seconds, 3)]
    if outcome.signature is not None:
        record.append(outcome.signature)
    return json.dumps(record, separators=(",", ":"), ensure_ascii=False).encode()


def _decode(raw: bytes) -> Outcome | None:
    """A stored record, or None for one this version cannot read (newer writer, damage)."""
    try:
        record = json.loads(raw)
        verdict, exit_code, seconds = record[:3]
        signature = record[3] if len(record) > 3 else None
        return Outcome(Verdict(verdict), exit_code, float(seconds), signature)
    except (ValueError, KeyError, TypeError, IndexError):
        return None


def _parse_records(data: bytes) -> dict[bytes, bytes]:
    """Raw `key -> record` lines of a records blob.

    Records stay bytes, so other writers' records are copied as they are.
    """
    lines: dict[bytes, bytes] = {}
    for line in data.splitlines():
        key, _, record = line.partition(b" ")
        if len(key) == 40 and record:
            lines.setdefault(key, record)
    return lines


def _records_blob(lines: dict[bytes, bytes]) -> bytes:
    return b"".join(key + b" " + record + b"\n" for key, record in sorted(lines.items()))


def _subtree(tree: pygit2.Tree | None, name: str) -> pygit2.Tree | None:
    if tree is None or name not in tree:
        return None
    entry = tree[name]
    return entry if isinstance(entry, pygit2.Tree) else None


def objects_dir(repo: pygit2.Repository) -> Path:
    """The object directory, also from a linked worktree (whose objects are the main repo's)."""
    git_dir = Path(repo.path)
    common = git_dir / "commondir"
    if common.is_file():
        git_dir = (git_dir / common.read_text().strip()).resolve()
    return git_dir / "objects"


def _loose_path(repo: pygit2.Repository, hex_id: str) -> Path:
    return objects_dir(repo) / hex_id[:2] / hex_id[2:]


class GitVerdictCache:
    """Verdicts of one test (by fingerprint), keyed by candidate blob id, kept in a git repository.

    Implements the engine's `VerdictCache` protocol (`get`, `put`). Content
    reaches the store in one of two ways, because the protocol's `put` only
    sees the key:
    - wrap the test runner: `Engine(cache.recording(oracle.run), ..., cache=cache)`
      writes each tested candidate as a blob right after its run, or
    - call `remember(content)` yourself, or `put(key, outcome, content=content)`.
    A verdict whose blob was never written is still stored (the record is
    enough for a cache hit); only its candidate is then not kept.

    Thread-safe: `get`/`put`/`remember` may be called from any thread. A
    background thread checkpoints (flushes) every `checkpoint_seconds` or after
    `checkpoint_verdicts` new verdicts, and packs once `pack_bytes` of loose
    objects have been written. Always `close()` (or use `with`): it flushes
    and packs what is left.
    """

    def __init__(
        self,
        repo: pygit2.Repository,
        fingerprint: str,
        *,
        description: str = "",
        checkpoint_seconds: float = 1.0,
        checkpoint_verdicts: int = 1,
        compact_after: int = 128,
        pack_bytes: int = 32 << 20,
        lock_wait_seconds: float = 10.0,
    ) -> None:
        if not _FINGERPRINT.fullmatch(fingerprint):
            raise ValueError(f"test fingerprint must be lowercase hex, got {fingerprint!r}")
        self.fingerprint = fingerprint
        self.ref_name = CACHE_REF_PREFIX + fingerprint
        self.path = repo.path
        self._description = description
        self._checkpoint_seconds = checkpoint_seconds
        self._checkpoint_verdicts = checkpoint_verdicts
        self._compact_after = max(1, compact_after)
        self._pack_bytes = pack_bytes
        self._lock_wait = lock_wait_seconds
        # Separate libgit2 handles per role: a git_repository must not be used
        # from two threads at once, and a slow pack must not block the workers.
        self._blob_repo = pygit2.Repository(repo.path)
        self._flush_repo = pygit2.Repository(repo.path)
        self._lock = threading.Lock()  # _known, _pending, _written, counters
        self._blob_lock = threading.Lock()  # _blob_repo
        self._flush_lock = threading.Lock()  # _flush_repo, _tip
        self._pack_lock = threading.Lock()
        self._known: dict[str, Outcome] = {}
        self._pending: dict[str, Outcome] = {}
        self._written: list[str] = []  # objects this instance wrote and has not packed yet
        self._written_bytes = 0
        self._tip: pygit2.Commit | None = None
        self._closed = False
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self.flushes = 0
        self.conflicts = 0
        self.packs = 0
        self.warnings: list[str] = []
        with self._flush_lock:
            self._tip = self._read_tip()
            if self._tip is not None:
                self._absorb(None, self._tip)
            self._read_other_refs()
        self.loaded = len(self._known)

    # -- the VerdictCache protocol ------------------------------------------------

    def get(self, key: str) -> Outcome | None:
        with self._lock:
            return self._known.get(key)

    def put(self, key: str, outcome: Outcome, content: bytes | None = None) -> None:
        """Record a verdict; the first verdict for a key wins (later ones are re-runs).

        After `close()` verdicts are still remembered in memory but no longer
        saved: runs left over from a finished reduction may report late.
        """
        if content is not None and not self._closed:
            self.remember(content)
        with self._lock:
            if key in self._known:
                return
            self._known[key] = outcome
            if self._closed:
                return
            self._pending[key] = outcome
            due = len(self._pending) >= self._checkpoint_verdicts
        self._start_checkpoints()
        if due:
            self._wake.set()

    def remember(self, content: bytes) -> str:
        """Write `content` as a loose blob (well under 1 ms for a source file); return its key."""
        with self._blob_lock:
            oid = self._blob_repo.create_blob(content)
        key = str(oid)
        with self._lock:
            self._written.append(key)
            self._written_bytes += len(content)
        return key

    def recording(self, run_test: Callable[[bytes], Outcome]) -> Callable[[bytes], Outcome]:
        """`run_test`, plus writing each tested candidate as a blob once its run is over.

        After the run, so a run cut short (which raises) leaves no blob behind;
        not after `close()`, when nothing more would make the blob reachable.
        """

        def run(content: bytes) -> Outcome:
            outcome = run_test(content)
            if not self._closed:
                self.remember(content)
            return outcome

        return run

    def __len__(self) -> int:
        with self._lock:
            return len(self._known)

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._known

    def __enter__(self) -> GitVerdictCache:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- checkpoints ----------------------------------------------------------------

    def _start_checkpoints(self) -> None:
        if self._thread is not None:
            return
        with self._lock:
            if self._thread is not None or self._closed:
                return
            self._thread = threading.Thread(
                target=self._checkpoints, name="gitreduce-cache", daemon=True
            )
            self._thread.start()

    def _checkpoints(self) -> None:
        while True:
            self._wake.wait(self._checkpoint_seconds)
            self._wake.clear()
            if self._closed:
                return
            try:
                self.flush()
                if self._written_bytes >= self._pack_bytes:
                    self.pack()
            except Exception as error:  # the final flush in close() retries and reports
                self.warnings.append(f"cache checkpoint failed: {error}")

    def close(self, *, pack: bool = True) -> None:
        """Stop checkpointing, save every verdict, pack this run's objects.

        Raises `CacheError` when the verdicts could not be saved; the caller
        should report it as a warning, the reduction's result is unaffected.
        """
        if self._closed:
            return
        self._closed = True
        self._wake.set()
        if self._thread is not None:
            self._thread.join()
        self.flush()
        if pack:
            self.pack()

    # -- writing ----------------------------------------------------------------------

    def flush(self) -> bool:
        """Commit the pending verdicts and move the ref (compare-and-swap, retried on conflict).

        Also takes in verdicts other processes committed since the last look.
        Returns whether a commit was made.
        """
        with self._flush_lock:
            with self._lock:
                pending = dict(self._pending)
            if not pending:
                self._refresh()
                return False
            self._commit(pending)
            with self._lock:
                for key in pending:
                    self._pending.pop(key, None)
                self.flushes += 1
            return True

    def _refresh(self) -> None:
        tip = self._read_tip()
        if tip is not None and (self._tip is None or tip.id != self._tip.id):
            self._absorb(self._tip, tip)
            self._tip = tip

    def _commit(self, pending: dict[str, Outcome]) -> None:
        repo = self._flush_repo
        batch = self._write_batch(pending)
        deadline = time.monotonic() + self._lock_wait
        delay = 0.001
        while True:
            ref = repo.references.get(self.ref_name)
            tip = self._peel(ref)
            if tip is not None and (self._tip is None or tip.id != self._tip.id):
                self._absorb(self._tip, tip)
                self._tip = tip
            commit_id = self._build(tip, batch, len(pending))
            try:
                if ref is None:
                    repo.references.create(self.ref_name, commit_id)
                else:
                    ref.set_target(commit_id, "gitreduce: cache checkpoint")
            except pygit2.AlreadyExistsError:
                self.conflicts += 1  # created concurrently: rebuild on top of it
            except pygit2.GitError as error:
                if "does not match" not in str(error):
                    raise
                self.conflicts += 1  # moved concurrently: rebuild on top of it
            except OSError as error:  # the ref's .lock file exists: another writer holds it
                if time.monotonic() > deadline:
                    lock = Path(repo.path) / (self.ref_name + ".lock")
                    raise CacheError(
                        f"cache ref {self.ref_name} stayed locked; if no git reduce is "
                        f"running, delete {lock}"
                    ) from error
            else:
                self._tip = repo[commit_id]
                return
            time.sleep(delay * (1 + random.random()))
            delay = min(delay * 2, 0.1)

    def _note(self, oid: pygit2.Oid, size: int) -> pygit2.Oid:
        """Remember an object this instance wrote, to be packed later."""
        with self._lock:
            self._written.append(str(oid))
            self._written_bytes += size
        return oid

    def _write_batch(self, pending: dict[str, Outcome]) -> tuple[str, pygit2.Oid]:
        """The tree of one checkpoint's verdicts and candidates, and a unique name for it.

        Names start with the time, so batches sort oldest first (the first
        verdict for a key wins), then a random part, unique across writers.
        """
        repo = self._flush_repo
        data = _records_blob({key.encode(): _encode(outcome) for key, outcome in pending.items()})
        builder = repo.TreeBuilder()
        records = self._note(repo.create_blob(data), len(data))
        builder.insert(_VERDICTS, records, FileMode.BLOB)
        for key in pending:
            if key in repo:  # its blob was written (by us, or is already known to git)
                builder.insert(key[:_NAME_END], pygit2.Oid(hex=key), FileMode.BLOB)
        tree = self._note(builder.write(), 44 * len(builder))
        name = f"{time.time_ns() // 1_000_000:012x}-{secrets.token_hex(4)}"
        return name, tree

    def _build(
        self, tip: pygit2.Commit | None, batch: tuple[str, pygit2.Oid], count: int
    ) -> pygit2.Oid:
        """A commit on top of `tip` adding `batch`, compacting the batches when there are many."""
        repo = self._flush_repo
        root = tip.tree if tip is not None else None
        batches = _subtree(root, _BATCHES)
        root_builder = repo.TreeBuilder(root) if root else repo.TreeBuilder()
        batches_builder = repo.TreeBuilder(batches) if batches else repo.TreeBuilder()
        batches_builder.insert(batch[0], batch[1], FileMode.TREE)
        if len(batches_builder) >= self._compact_after:
            listed = [(entry.name or "", entry) for entry in batches or []]
            self._compact(root, root_builder, [*listed, (batch[0], repo[batch[1]])])
            with contextlib.suppress(KeyError):
                root_builder.remove(_BATCHES)
        else:
            tree = self._note(batches_builder.write(), 60 * len(batches_builder))
            root_builder.insert(_BATCHES, tree, FileMode.TREE)
        if root is None or _README not in root:
            text = _README_TEXT + (f"\n{self._description.rstrip()}\n" if self._description else "")
            readme = self._note(repo.create_blob(text.encode()), len(text))
            root_builder.insert(_README, readme, FileMode.BLOB)
        tree_id = self._note(root_builder.write(), 200)
        signature = cache_signature()
        commit_id = repo.create_commit(
            None,
            signature,
            signature,
            f"gitreduce cache: {count} verdict(s)\n",
            tree_id,
            [tip.id] if tip is not None else [],
        )
        return self._note(commit_id, 300)

    def _compact(
        self,
        root: pygit2.Tree | None,
        root_builder: pygit2.TreeBuilder,
        batches: list[tuple[str, pygit2.Object]],
    ) -> None:
        """Fold `(name, tree)` batches into the prefix shards of `root`, via `root_builder`."""
        repo = self._flush_repo
        records: dict[str, dict[bytes, bytes]] = {}
        candidates: dict[str, dict[str, pygit2.Oid]] = {}
        for _, batch in sorted(batches, key=lambda named: named[0]):
            if not isinstance(batch, pygit2.Tree):
                continue
            for entry in batch:
                if entry.name == _VERDICTS:
                    for key, record in _parse_records(entry.data).items():
                        records.setdefault(key[:2].decode(), {}).setdefault(key, record)
                else:
                    shard = candidates.setdefault(entry.name[:2], {})
                    shard.setdefault(entry.name[2:], entry.id)
        verdicts = _subtree(root, _VERDICTS)
        old_candidates = _subtree(root, _CANDIDATES)
        verdict_builder = repo.TreeBuilder(verdicts) if verdicts else repo.TreeBuilder()
        candidate_builder = (
            repo.TreeBuilder(old_candidates) if old_candidates else repo.TreeBuilder()
        )
        for shard, new in records.items():
            lines = _parse_records(verdicts[shard].data) if verdicts and shard in verdicts else {}
            for key, record in new.items():
                lines.setdefault(key, record)
            data = _records_blob(lines)
            blob = self._note(repo.create_blob(data), len(data))
            verdict_builder.insert(shard, blob, FileMode.BLOB)
        for shard, entries in candidates.items():
            old = _subtree(old_candidates, shard)
            builder = repo.TreeBuilder(old) if old else repo.TreeBuilder()
            for name, oid in entries.items():
                if old is None or name not in old:
                    builder.insert(name, oid, FileMode.BLOB)
            subtree = self._note(builder.write(), 42 * len(builder))
            candidate_builder.insert(shard, subtree, FileMode.TREE)
        for name, builder in ((_VERDICTS, verdict_builder), (_CANDIDATES, candidate_builder)):
            if len(builder):
                tree = self._note(builder.write(), 30 * len(builder))
                root_builder.insert(name, tree, FileMode.TREE)

    # -- reading ----------------------------------------------------------------------

    def _peel(self, ref: pygit2.Reference | None) -> pygit2.Commit | None:
        if ref is None:
            return None
        try:
            target = self._flush_repo[ref.target]
        except (KeyError, ValueError, pygit2.GitError):
            return None
        return target if isinstance(target, pygit2.Commit) else None

    def _read_tip(self) -> pygit2.Commit | None:
        return self._peel(self._flush_repo.references.get(self.ref_name))

    @staticmethod
    def _record_blobs(tree: pygit2.Tree) -> dict[str, pygit2.Oid]:
        """Every records blob of a cache tree, by a name saying where it stands."""
        blobs: dict[str, pygit2.Oid] = {}
        verdicts = _subtree(tree, _VERDICTS)
        for entry in verdicts or []:
            blobs[f"{_VERDICTS}/{entry.name}"] = entry.id
        batches = _subtree(tree, _BATCHES)
        for batch in sorted(batches or [], key=lambda entry: entry.name or ""):
            if isinstance(batch, pygit2.Tree) and _VERDICTS in batch:
                blobs[f"{_BATCHES}/{batch.name}"] = batch[_VERDICTS].id
        return blobs

    def _absorb(self, old: pygit2.Commit | None, new: pygit2.Commit) -> None:
        """Take in the verdicts of `new` that `old` did not have (by records blob)."""
        before = set(self._record_blobs(old.tree).values()) if old is not None else set()
        found: dict[str, Outcome] = {}
        for oid in self._record_blobs(new.tree).values():
            if oid in before:
                continue
            for key, record in _parse_records(self._flush_repo[oid].data).items():
                outcome = _decode(record)
                if outcome is not None:
                    found.setdefault(key.decode(), outcome)
        with self._lock:
            for key, outcome in found.items():
                self._known.setdefault(key, outcome)

    def _read_other_refs(self) -> None:
        """Verdicts fetched under another name, e.g. `refs/reduce/remotes/origin/cache/<fp>`."""
        suffix = "/cache/" + self.fingerprint
        for name in self._flush_repo.references:
            if name == self.ref_name or not name.startswith("refs/reduce/"):
                continue
            if not name.endswith(suffix):
                continue
            commit = self._peel(self._flush_repo.references.get(name))
            if commit is not None:
                self._absorb(None, commit)

    # -- packing ----------------------------------------------------------------------

    def pack(self) -> int:
        """Pack the loose objects this instance wrote, delta-compressed; drop their loose copies.

        Only our own objects: the user's loose objects are `git gc`'s business.
        libgit2's `PackBuilder`, in process: measured on 2,000 near-identical
        20 KB candidates it is as fast as `git pack-objects` fed the same
        objects with path names, and the packs are within 2 % of each other
        (the names only help pair the rewritten shards of a compaction).
        Returns the number of objects packed.
        """
        with self._pack_lock:
            with self._lock:
                written, self._written = self._written, []
                self._written_bytes = 0
            repo = pygit2.Repository(self.path)
            loose = [key for key in dict.fromkeys(written) if _loose_path(repo, key).exists()]
            if not loose:
                return 0
            builder = pygit2.PackBuilder(repo)
            builder.set_threads(0)
            for key in loose:
                builder.add(pygit2.Oid(hex=key))
            builder.write()  # into objects/pack/, renamed into place once complete
            for key in loose:
                with contextlib.suppress(OSError):
                    _loose_path(repo, key).unlink()
            self.packs += 1
            return len(loose)


def open_cache_repository(base: Path | None = None) -> pygit2.Repository:
    """The private bare repository that caches verdicts for plain files outside any repository.

    `$XDG_CACHE_HOME/gitreduce/cache.git` (default `~/.cache/gitreduce/cache.git`),
    created on first use; concurrent first uses are harmless (init is idempotent).
    """
    if base is None:
        xdg = os.environ.get("XDG_CACHE_HOME", "")
        base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    path = base / "gitreduce" / "cache.git"
    try:
        if (path / "HEAD").exists():
            return pygit2.Repository(str(path))
        path.parent.mkdir(parents=True, exist_ok=True)
        return pygit2.init_repository(str(path), bare=True)
    except (OSError, pygit2.GitError) as error:
        raise UserError(f"cannot open the cache repository {path}: {error}") from error


# -- results --------------------------------------------------------------------------


def result_branch_name(hint: str) -> str:
    """`reduce/<hint>` made into a valid branch name (`hint`: the input's file name, a commit)."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", hint).strip("-.") or "result"
    name = re.sub(r"\.\.+", ".", name)
    if name.endswith(".lock"):
        name = name[: -len(".lock")] + "-lock"
    return RESULT_BRANCH_PREFIX + name


def user_signature(repo: pygit2.Repository) -> pygit2.Signature:
    """The user's identity for result commits, or a stand-in when none is configured."""
    try:
        return repo.default_signature
    except (KeyError, ValueError, pygit2.GitError):
        return pygit2.Signature("git reduce", "gitreduce@localhost")


def result_message(
    subject: str,
    *,
    path: str,
    test: str,
    sources: Sequence[str] = (),
    bytes_before: int | None = None,
    bytes_after: int | None = None,
    tokens_before: int | None = None,
    tokens_after: int | None = None,
    extra: Sequence[str] = (),
) -> str:
    """A result commit message: subject, what was reduced and how, and sizes before -> after.

    Trailers are `Reduced-*` (not `Reduce-Test`), so a hook that reduces
    commits carrying `Reduce-Test:` never fires on its own results.
    """
    body = [f"Reduced {path}" + (f" from {', '.join(sources)}" if sources else "")]
    if bytes_before is not None and bytes_after is not None:
        body.append(f"Bytes: {bytes_before} -> {bytes_after}")
    if tokens_before is not None and tokens_after is not None:
        body.append(f"Tokens: {tokens_before} -> {tokens_after}")
    body.extend(extra)
    trailers = [f"Reduced-From: {source}" for source in sources]
    trailers.append(f"Reduced-With: {test}")
    return f"{subject}\n\n" + "\n".join(body) + "\n\n" + "\n".join(trailers) + "\n"


def record_result(
    repo: pygit2.Repository,
    *,
    branch: str,
    path: str,
    versions: Sequence[tuple[str, bytes]],
    force: bool = False,
    author: pygit2.Signature | None = None,
) -> list[pygit2.Oid]:
    """Create branch `branch` with one commit per `(message, content)` in `versions`.

    Single-file mode passes one version (the reduced file); pairwise passes
    two (reduced seed, then reduced variant), so `git show <branch>` is the
    minimal failure-inducing change. Each commit's tree holds only `path`.

    The history is an orphan: the first commit has no parent. With the GOOD
    commit as parent, the first commit would show as deleting every other
    file of the project; orphaned, `git show` of each commit is exactly the
    reduced program or the reduced change, and the source commits are named
    in the messages instead. Refuses an existing branch unless `force`, and
    never moves the branch HEAD is on. Returns the commit ids, oldest first.
    """
    if not versions:
        raise ValueError("record_result needs at least one version")
    ref_name = "refs/heads/" + branch
    if not pygit2.reference_is_valid_name(ref_name):
        raise UserError(f"{branch!r} is not a valid branch name")
    parts = [part for part in path.split("/") if part not in ("", ".")]
    if not parts or ".." in parts:
        raise UserError(f"{path!r} is not a path inside the repository")
    head = repo.references.get("HEAD")
    symbolic = head is not None and head.type == pygit2.enums.ReferenceType.SYMBOLIC
    if symbolic and head.target == ref_name:  # unborn too: creating it would commit for the user
        raise UserError(f"branch {branch} is checked out; will not write to it")
    existing = repo.references.get(ref_name)
    if existing is not None and not force:
        raise UserError(f"branch {branch} already exists; use --force to replace it")
    signature = author or user_signature(repo)
    commits: list[pygit2.Oid] = []
    for message, content in versions:
        tree_id = _single_file_tree(repo, parts, content)
        commits.append(
            repo.create_commit(None, signature, signature, message, tree_id, commits[-1:])
        )
    try:
        if existing is None:
            repo.references.create(ref_name, commits[-1])
        else:
            existing.set_target(commits[-1], "git reduce: result")
    except (pygit2.AlreadyExistsError, pygit2.GitError, OSError) as error:
        raise UserError(f"cannot write branch {branch}: {error}") from error
    return commits


def _single_file_tree(repo: pygit2.Repository, parts: list[str], content: bytes) -> pygit2.Oid:
    entry = repo.create_blob(content)
    mode = FileMode.BLOB
    for name in reversed(parts):
        builder = repo.TreeBuilder()
        builder.insert(name, entry, mode)
        entry, mode = builder.write(), FileMode.TREE
    return entry


def format_patch(repo: pygit2.Repository, commit: pygit2.Commit | pygit2.Oid | str) -> bytes:
    """`git format-patch -1` of `commit` as bytes: applies with `git am` onto its parent.

    A root commit becomes a patch that creates its files. Note that `git am`
    drops carriage returns unless given `--keep-cr`, as for any mailed patch.
    """
    if not isinstance(commit, pygit2.Commit):
        try:
            found = repo.revparse_single(commit) if isinstance(commit, str) else repo[commit]
            commit = found.peel(pygit2.Commit)
        except (KeyError, ValueError, pygit2.GitError):
            raise UserError(f"{commit} is not a commit") from None
    if commit.parents:
        diff = repo.diff(commit.parents[0], commit)
    else:
        diff = commit.tree.diff_to_tree(swap=True)
    author = commit.author
    zone = timezone(timedelta(minutes=author.offset))
    date = format_datetime(datetime.fromtimestamp(author.time, zone))
    subject, _, body = commit.message.partition("\n")
    body = body.strip("\n")
    head = [
        f"From {commit.id} Mon Sep 17 00:00:00 2001",
        f"From: {formataddr((author.name, author.email), charset='utf-8')}",
        f"Date: {date}",
        f"Subject: {_header(f'[PATCH] {subject.strip()}')}",
        "MIME-Version: 1.0",
        "Content-Type: text/plain; charset=UTF-8",
        "Content-Transfer-Encoding: 8bit",
        "",
    ]
    if body:
        head += [body, ""]
    stats = diff.stats.format(
        pygit2.enums.DiffStatsFormat.FULL | pygit2.enums.DiffStatsFormat.INCLUDE_SUMMARY, 72
    )
    text = "\n".join(head).encode() + b"---\n" + stats.encode() + b"\n"
    text += b"".join(patch.data for patch in diff)
    text += b"-- \ngit reduce\n\n"
    return text


def _header(value: str) -> str:
    """A mail header value, RFC 2047-encoded when not ASCII (as `git format-patch` does)."""
    if value.isascii():
        return value
    return Header(value, "utf-8").encode(maxlinelen=76)


def write_patch(
    repo: pygit2.Repository, commit: pygit2.Commit | pygit2.Oid | str, path_out: Path
) -> Path:
    """Write `format_patch(repo, commit)` to `path_out` (the `--patch FILE` output)."""
    try:
        path_out.write_bytes(format_patch(repo, commit))
    except OSError as error:
        raise UserError(f"cannot write {path_out}: {error.strerror}") from error
    return path_out


def written_objects_size(repo: pygit2.Repository) -> int:
    """Bytes of loose objects plus packs: how much `.git/objects` holds (for reports and tests)."""
    objects = objects_dir(repo)
    return sum(path.stat().st_size for path in objects.rglob("*") if path.is_file())
