"""The verdict cache's format on its ref: what the commits, trees and records look like.

Job: the names, records and tree shapes every writer and reader of a cache
ref agrees on, and building them: a batch's tree, the compacted shards; and
which of two verdicts for one key stands, on the ref (`keep_better`) and in
the memory a cache shares with its writer (`CacheMemory`). When
commits are made and how the ref moves among concurrent writers is
`gitreduce.git.cache_log`; how the engine uses the cache,
`gitreduce.git.verdicts`.

One ref per test fingerprint, `refs/reduce/cache/<fingerprint>`, points at a
commit whose tree is::

    README                          what this is, how to share it
    batches/<batch>/verdicts        the records of one batch: lines "<key> <record>"
    batches/<batch>/<16 hex>        that batch's candidates (entry id == key)
    verdicts/<ab>                   compacted records, one blob per key prefix
    candidates/<ab>/<14 hex>        compacted candidates

A key is the candidate's git object id (`gitreduce.core.keys.candidate_key`):
one file's candidate is its blob, a file set's the tree of its files
(`write_candidate`), entered as a subtree, so `git ls-tree -r KEY` lists the
set's files.

Why this shape:
- Verdicts and candidates are reachable from a ref, so `git gc --prune=now`
  keeps them and `git push/fetch 'refs/reduce/*'` carries them.
- Two kinds of commits, told apart by their subjects: checkpoints (whose
  records start with a `# checkpoint <batch>` line) and seals. A batch's name
  starts with the time, so batches sort oldest first, and ends with a random
  part no other writer picks.
- Compactions fold batches into the 256 prefix shards, keeping the batch
  list, which every commit rewrites, short. Reads load everything into a
  dict once.
- Records are compact JSON arrays and candidate entries have short names:
  once candidates are delta-packed, this bookkeeping is what takes the space.
- Each record says where it came from and proves it when it came from here
  (`RecordCodec`): a shared cache is data from strangers, and the engine
  must tell this repository's own verdicts from theirs. Where two records
  for one key meet, the better-founded one stays (`keep_better`).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import re
import secrets
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Protocol

import pygit2
from pygit2.enums import FileMode, ObjectType

from gitreduce.core.keys import Tree, blob_id, set_tree
from gitreduce.core.outcome import Outcome, Verdict

CACHE_REF_PREFIX = "refs/reduce/cache/"

VERDICTS = "verdicts"
CANDIDATES = "candidates"
BATCHES = "batches"
README = "README"
# Subjects of the two kinds of cache commits; earlier versions only wrote seals.
CHECKPOINT = "gitreduce cache checkpoint"
SEAL = "gitreduce cache"
# Entry names are the key's first hex digits: the entry's id is the full key,
# the name only needs to be unique where it stands (64 bits) and short.
NAME_END = 16
FINGERPRINT = re.compile(r"[0-9a-f]{4,64}")
# A candidate's key in a records line: its object id, in hex
_KEY = re.compile(rb"[0-9a-f]{40}")

README_TEXT = """\
gitreduce verdict cache for one test fingerprint.

batches/<batch>/verdicts   lines "<candidate id> [2, verdict, exit, seconds, signature,
                           solo runs, origin, run, mac]"
batches/<batch>/<hex>      the candidates of that batch (entry id = candidate id: a file's
                           blob, or the tree of a file set's files)
verdicts/<ab>              older batches' records, by the id's first two hex digits
candidates/<ab>/<hex>      older batches' candidates

Candidates are kept reachable so that gc does not drop them. Share it with:
    git push origin 'refs/reduce/*'
    git fetch origin 'refs/reduce/*:refs/reduce/*'
A verdict fetched from elsewhere only saves the tests of candidates it rejects;
one that would accept a candidate is confirmed by a run first.
"""


def cache_signature() -> pygit2.Signature:
    """Cache commits are machine bookkeeping: a fixed identity, no user config needed."""
    return pygit2.Signature("git reduce", "gitreduce@localhost", int(time.time()), 0)


# Records of this version start with it; earlier versions' start with the verdict.
RECORD_VERSION = 2
# The MAC is truncated to 128 bits: forging one is still out of reach, and records stay short.
MAC_HEX = 32
# What a verdict weighs when two records for one key meet: local above foreign, then more
# runs made alone; an unreadable record weighs least.
Rank = tuple[int, int]
UNREADABLE: Rank = (-1, -1)
# The rank of a raw record for a key (`RecordCodec.rank`): what merges of records go by.
Weigh = Callable[[bytes, bytes], Rank]


def rank(outcome: Outcome | None) -> Rank:
    """How much `outcome` is to be believed: a record of higher rank replaces a lower one."""
    if outcome is None:
        return UNREADABLE
    return int(outcome.local), outcome.solo_runs


@dataclass
class CacheMemory:
    """What a cache and its log share: every verdict known, the verdicts not committed yet,
    and the lock that guards both and the log's own bookkeeping (one lock, so that a seal
    sees what is pending and what it has to squash at once)."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    known: dict[str, Outcome] = field(default_factory=dict)
    pending: dict[str, Outcome] = field(default_factory=dict)

    def learn(self, key: str, outcome: Outcome) -> bool:
        """Know `outcome` for `key` unless a verdict of at least its rank is known (the first
        of equal ones wins: later ones are re-runs); whether it was taken. Hold `lock`."""
        known = self.known.get(key)
        if known is not None and rank(known) >= rank(outcome):
            return False
        self.known[key] = outcome
        return True


def _dumps(record: list[object]) -> bytes:
    return json.dumps(record, separators=(",", ":"), ensure_ascii=False).encode()


@dataclass(frozen=True)
class RecordCodec:
    """Encodes this repository's records and tells its own from everyone else's.

    A record is a compact JSON array, `[2, verdict, exit code, seconds,
    signature, solo runs, origin, run, mac]`: seconds to the millisecond
    (they only feed statistics and a derived timeout), the signature null
    unless a BAD run had one, solo runs as in `Outcome.solo_runs`, origin the
    writer's `user@host` (information only), run the writing run's id (see
    `gitreduce.git.provenance`), and mac the first 128 bits of an
    HMAC-SHA256 under this repository's secret over the fingerprint, the key
    and the array before it. A record decodes as local exactly when its MAC
    verifies: a stranger's record, one edited after writing, one copied from
    another key or another test, and every record of an earlier version decode
    as foreign. Records of a revoked run, and records this version cannot
    read (a newer writer, damage), decode as None: they are ignored.
    """

    fingerprint: str
    secret: bytes
    origin: str
    run: str
    revoked: frozenset[str] = frozenset()

    def _mac(self, key: str, body: list[object]) -> str:
        message = f"{self.fingerprint}\0{key}\0".encode() + _dumps(body)
        return hmac.new(self.secret, message, hashlib.sha256).hexdigest()[:MAC_HEX]

    def encode(self, key: str, outcome: Outcome) -> bytes:
        body: list[object] = [
            RECORD_VERSION,
            outcome.verdict.value,
            outcome.exit_code,
            round(outcome.seconds, 3),
            outcome.signature,
            outcome.solo_runs,
            self.origin,
            self.run,
        ]
        return _dumps([*body, self._mac(key, body)])

    def decode(self, key: str, raw: bytes) -> Outcome | None:
        """The verdict of a record, `local` set when this repository wrote it."""
        try:
            record = json.loads(raw)
            if not isinstance(record, list) or not record:
                return None
            if isinstance(record[0], str):  # version 1: [verdict, exit, seconds(, signature)]
                verdict, exit_code, seconds = record[:3]
                signature = record[3] if len(record) > 3 else None
                return _outcome(verdict, exit_code, seconds, signature, 0, local=False)
            if type(record[0]) is not int or record[0] != RECORD_VERSION or len(record) != 9:
                return None
            body, mac = record[:8], record[8]
            _, verdict, exit_code, seconds, signature, solo, _, run = body
            if not isinstance(run, str) or run in self.revoked:
                return None
            local = isinstance(mac, str) and hmac.compare_digest(mac, self._mac(key, body))
            return _outcome(verdict, exit_code, seconds, signature, solo, local=local)
        except (ValueError, KeyError, TypeError, IndexError, OverflowError, RecursionError):
            return None  # a record built to break the parser, as any fetched one may be

    def rank(self, key: bytes, raw: bytes) -> Rank:
        return rank(self.decode(key.decode(), raw))


def _outcome(
    verdict: object,
    exit_code: object,
    seconds: object,
    signature: object,
    solo: object,
    *,
    local: bool,
) -> Outcome | None:
    """An `Outcome` of decoded fields, or None when one has the wrong type."""
    if not isinstance(verdict, str) or isinstance(seconds, bool) or isinstance(solo, bool):
        return None
    if exit_code is not None and (isinstance(exit_code, bool) or not isinstance(exit_code, int)):
        return None
    if not isinstance(seconds, (int, float)) or not isinstance(solo, int) or solo < 0:
        return None
    if not 0 <= float(seconds) < math.inf:
        return None
    if signature is not None and not isinstance(signature, str):
        return None
    return Outcome(
        Verdict(verdict), exit_code, float(seconds), signature, local=local, solo_runs=solo
    )


def keep_better(lines: dict[bytes, bytes], key: bytes, record: bytes, weigh: Weigh) -> None:
    """Add `record` for `key` unless `lines` holds one of at least its rank: of equal ones,
    the first wins (later ones are re-runs)."""
    old = lines.get(key)
    if old is None or weigh(key, record) > weigh(key, old):
        lines[key] = record


def parse_records(data: bytes) -> dict[bytes, bytes]:
    """Raw `key -> record` lines of a records blob.

    Records stay bytes, so other writers' records are copied as they are.
    Other lines (a checkpoint's `# checkpoint <batch>` head) are skipped.
    """
    lines: dict[bytes, bytes] = {}
    for line in data.splitlines():
        key, _, record = line.partition(b" ")
        if record and _KEY.fullmatch(key):
            lines.setdefault(key, record)
    return lines


def records_of(entry: pygit2.Object) -> bytes:
    """The records an entry holds: none unless it is a blob (a fetched cache ref may put
    anything where records go)."""
    return entry.data if isinstance(entry, pygit2.Blob) else b""


def records_blob(lines: dict[bytes, bytes]) -> bytes:
    return b"".join(key + b" " + record + b"\n" for key, record in sorted(lines.items()))


def new_batch_name() -> str:
    """The time first, so batches sort oldest first (the first verdict for a key wins), then a
    random part: unique across writers, which is what lets a writer delete its checkpoints."""
    return f"{time.time_ns() // 1_000_000:012x}-{secrets.token_hex(4)}"


def child_tree(tree: pygit2.Tree | None, name: str) -> pygit2.Tree | None:
    if tree is None or name not in tree:
        return None
    entry = tree[name]
    return entry if isinstance(entry, pygit2.Tree) else None


def record_blobs(tree: pygit2.Tree) -> list[pygit2.Oid]:
    """Every records blob of a cache tree: shards first, then batches oldest first."""
    blobs: list[pygit2.Oid] = []
    verdicts = child_tree(tree, VERDICTS)
    for entry in verdicts or []:
        if isinstance(entry, pygit2.Blob):  # a fetched tree may hold anything there
            blobs.append(entry.id)
    batches = child_tree(tree, BATCHES)
    for batch in sorted(batches or [], key=lambda entry: entry.name or ""):
        records = batch[VERDICTS] if isinstance(batch, pygit2.Tree) and VERDICTS in batch else None
        if isinstance(records, pygit2.Blob):
            blobs.append(records.id)
    return blobs


class Note(Protocol):
    """Told of each object written for a commit being built, with its size in bytes and
    whether only this writer can have written it."""

    def __call__(self, oid: pygit2.Oid, size: int, *, unique: bool) -> pygit2.Oid: ...


# A candidate as a cache tree holds it: its object id and entry mode (a file's blob, a
# file set's tree), by entry name.
Entries = dict[str, tuple[pygit2.Oid, int]]


def write_candidate(repo: pygit2.Repository, content: bytes) -> list[tuple[pygit2.Oid, int]]:
    """Write the candidate `content` under its key: one file's text as a blob, a packed file
    set as the tree of its files (each a blob, directories subtrees). Returns the objects
    written, the candidate itself last (its id is the key), each with its size."""
    tree = set_tree(content)
    if tree is None:
        return [(repo.create_blob(content), len(content))]
    written: list[tuple[pygit2.Oid, int]] = []
    _write_tree(repo, tree, written)
    return written


def _write_tree(
    repo: pygit2.Repository, tree: Tree, written: list[tuple[pygit2.Oid, int]]
) -> pygit2.Oid:
    builder = repo.TreeBuilder()
    for name, entry in tree.items():
        if isinstance(entry, dict):
            builder.insert(name, _write_tree(repo, entry, written), FileMode.TREE)
        else:
            # Most members are those of the set tested before: a lookup is a tenth of a write.
            blob = pygit2.Oid(hex=blob_id(entry))
            if blob not in repo:
                blob = repo.create_blob(bytes(entry))
                written.append((blob, len(entry)))
            builder.insert(name, blob, FileMode.BLOB)
    oid = builder.write()
    written.append((oid, 40 * len(builder)))
    return oid


def candidate_entries(repo: pygit2.Repository, keys: Iterable[str]) -> Entries:
    """The cache tree entries of the candidates of `keys` that the object store holds (only
    their records are kept of the others): a blob's mode for a file, a tree's for a set."""
    entries: Entries = {}
    for key in keys:
        oid = pygit2.Oid(hex=key)
        try:
            kind, _ = repo.odb.read_header(oid)
        except (KeyError, ValueError, pygit2.GitError):
            continue
        mode = FileMode.TREE if kind == ObjectType.TREE else FileMode.BLOB
        entries[key[:NAME_END]] = (oid, int(mode))
    return entries


def write_batch(
    repo: pygit2.Repository,
    note: Note,
    records: dict[bytes, bytes],
    candidates: Entries,
    head: bytes,
) -> pygit2.Oid:
    """The tree of one batch: its records (after `head`) and candidates."""
    data = head + records_blob(records)
    builder = repo.TreeBuilder()
    blob = note(repo.create_blob(data), len(data), unique=bool(head))
    builder.insert(VERDICTS, blob, FileMode.BLOB)
    for name, (oid, mode) in candidates.items():
        builder.insert(name, oid, mode)
    return note(builder.write(), 44 * len(builder), unique=bool(head))


def compact_batches(
    repo: pygit2.Repository,
    note: Note,
    root: pygit2.Tree | None,
    root_builder: pygit2.TreeBuilder,
    batches: list[tuple[str, pygit2.Object]],
    weigh: Weigh,
) -> None:
    """Fold `(name, tree)` batches into the prefix shards of `root`, via `root_builder`;
    of two records for one key the one `weigh` ranks higher stays (see `keep_better`)."""
    records: dict[str, dict[bytes, bytes]] = {}
    candidates: dict[str, Entries] = {}
    for _, batch in batches:
        if not isinstance(batch, pygit2.Tree):
            continue
        for entry in batch:
            if entry.name == VERDICTS:
                for key, record in parse_records(records_of(entry)).items():
                    keep_better(records.setdefault(key[:2].decode(), {}), key, record, weigh)
            else:
                shard = candidates.setdefault((entry.name or "")[:2], {})
                shard.setdefault((entry.name or "")[2:], (entry.id, entry.filemode))
    verdicts = child_tree(root, VERDICTS)
    old_candidates = child_tree(root, CANDIDATES)
    verdict_builder = repo.TreeBuilder(verdicts) if verdicts else repo.TreeBuilder()
    candidate_builder = repo.TreeBuilder(old_candidates) if old_candidates else repo.TreeBuilder()
    for prefix, new in records.items():
        lines = (
            parse_records(records_of(verdicts[prefix])) if verdicts and prefix in verdicts else {}
        )
        for key, record in new.items():
            keep_better(lines, key, record, weigh)
        data = records_blob(lines)
        blob = note(repo.create_blob(data), len(data), unique=False)
        verdict_builder.insert(prefix, blob, FileMode.BLOB)
    for prefix, kept in candidates.items():
        old = child_tree(old_candidates, prefix)
        builder = repo.TreeBuilder(old) if old else repo.TreeBuilder()
        for name, (oid, mode) in kept.items():
            if old is None or name not in old:
                builder.insert(name, oid, mode)
        subtree = note(builder.write(), 42 * len(builder), unique=False)
        candidate_builder.insert(prefix, subtree, FileMode.TREE)
    for name, builder in ((VERDICTS, verdict_builder), (CANDIDATES, candidate_builder)):
        if len(builder):
            tree = note(builder.write(), 30 * len(builder), unique=False)
            root_builder.insert(name, tree, FileMode.TREE)


def _is_checkpoint(commit: pygit2.Commit) -> bool:
    return commit.message.startswith(CHECKPOINT + ":")


def sealed_below(tip: pygit2.Commit | None) -> pygit2.Commit | None:
    """The nearest sealed commit at or below `tip` (checkpoints have one parent at most)."""
    commit = tip
    while commit is not None and _is_checkpoint(commit):
        commit = commit.parents[0] if commit.parents else None
    return commit


def new_objects(old: pygit2.Tree | None, new: pygit2.Tree) -> Iterator[pygit2.Oid]:
    """Ids of the objects under `new` that `old` does not have at the same path."""
    for entry in new:
        name = entry.name or ""
        before = old[name] if old is not None and name in old else None
        if before is not None and before.id == entry.id:
            continue
        yield entry.id
        if isinstance(entry, pygit2.Tree):
            yield from new_objects(before if isinstance(before, pygit2.Tree) else None, entry)
