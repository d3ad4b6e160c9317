"""The verdict cache: the engine's verdicts of one test, kept in the repository's object store.

Job: `GitVerdictCache`, the thread-safe map the engine asks and tells (`get`,
`put`, `remember`, `recording`), and the background thread that has its
pending verdicts committed as checkpoints and seals. How those commits are
written and the ref moved among concurrent writers is
`gitreduce.git.cache_log`; what the ref's trees hold is
`gitreduce.git.cache_format`; docs/cache.md describes both.

Every verdict the cache hands out says whether this repository's own runs
produced it (`Outcome.local`): records are signed with a secret that never
leaves the repository (`gitreduce.git.provenance`), so verdicts fetched from
elsewhere are told apart from local ones whatever the fetched ref claims. A
local verdict supersedes a foreign one for the same candidate, and a run
whose verdicts turn out inconsistent can be revoked as a whole.

Everything here writes objects and cache refs only; nothing reads or writes
the user's working tree, index, HEAD or any branch. Paths and locks in the git
directory come from `gitreduce.git.layout`; result branches and patches are
`gitreduce.git.results`.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable

import pygit2

from gitreduce.core.keys import set_tree
from gitreduce.core.outcome import Outcome
from gitreduce.git import packs
from gitreduce.git.cache_format import FINGERPRINT, CacheMemory, RecordCodec, write_candidate
from gitreduce.git.cache_log import CacheLog
from gitreduce.git.layout import objects_dir
from gitreduce.git.provenance import (
    SECRET_BYTES,
    new_run_id,
    origin_label,
    repository_secret,
    revoked_runs,
)

# Small packs of candidates (one a checkpoint, at most two a second) folded into one pack at
# most this many at a time: each is a file pair every lookup of a missing object searches.
SMALL_PACKS = 64


class GitVerdictCache:
    """Verdicts of one test (by fingerprint), keyed by candidate id (`core/keys.candidate_key`:
    a file's blob id, a file set's tree id), kept in a git repository.

    Implements `core/outcome.VerdictCache` (`get`, `put`). Content
    reaches the store in one of two ways, because the protocol's `put` only
    sees the key:
    - wrap the test runner: `Engine(cache.recording(oracle.run), ..., cache=cache)`
      keeps each tested candidate (a blob, or a set's tree) once its run is over,
      written by the background thread just before the commit that first holds
      its verdict, or
    - call `remember(content)` yourself, or `put(key, outcome, content=content)`.
    A verdict whose candidate was never written is still stored (the record is
    enough for a cache hit); only its candidate is then not kept.

    Thread-safe: `get`/`put`/`remember` may be called from any thread. A
    background thread writes a checkpoint at most every `checkpoint_seconds`
    (at once when `checkpoint_verdicts` verdicts are pending), seals every
    `seal_after` checkpoints, and seals and packs once `pack_bytes` of loose
    objects have been written. Always `close()` (or use `with`): it seals
    and packs what is left.
    """

    def __init__(
        self,
        repo: pygit2.Repository,
        fingerprint: str,
        *,
        description: str = "",
        checkpoint_seconds: float = 0.5,
        checkpoint_verdicts: int = 64,
        seal_after: int = 64,
        compact_after: int = 128,
        pack_bytes: int = 32 << 20,
        lock_wait_seconds: float = 10.0,
    ) -> None:
        if not FINGERPRINT.fullmatch(fingerprint):
            raise ValueError(f"test fingerprint must be lowercase hex, got {fingerprint!r}")
        self.fingerprint = fingerprint
        self.path = repo.path
        self._checkpoint_seconds = checkpoint_seconds
        self._checkpoint_verdicts = max(1, checkpoint_verdicts)
        self._seal_after = max(1, seal_after)
        self._pack_bytes = pack_bytes
        # Separate libgit2 handles per role (the log has its own): a git_repository must not
        # be used from two threads at once, and a slow pack must not block the workers.
        self._blob_repo = pygit2.Repository(repo.path)
        memory = CacheMemory()
        self._lock = memory.lock  # _known, _pending, and the log's bookkeeping
        self._blob_lock = threading.Lock()  # _blob_repo
        # Tested candidates not written yet (see `recording`), and the lock they are kept by
        self._unwritten: list[bytes] = []
        self._unwritten_lock = threading.Lock()
        self._memory = memory
        self._known = memory.known
        self._pending = memory.pending
        self.warnings: list[str] = []
        try:
            secret = repository_secret(repo)
        except OSError as error:
            # Nothing read from the cache can then be proven local: every verdict that
            # would accept a candidate is confirmed by a run; this run's own still count.
            secret = secrets.token_bytes(SECRET_BYTES)
            self.warnings.append(f"cached verdicts cannot be trusted here: {error}")
        self._log = CacheLog(
            repo.path,
            fingerprint,
            memory,
            codec=RecordCodec(
                fingerprint, secret, origin_label(), new_run_id(), revoked_runs(repo)
            ),
            description=description,
            compact_after=compact_after,
            lock_wait_seconds=lock_wait_seconds,
            before_save=self._write_unwritten,
        )
        self.ref_name = self._log.ref_name
        self._closed = False
        self._wake = threading.Event()  # a verdict is pending
        self._urgent = threading.Event()  # a full batch, or close(): do not wait
        self._pack_now = threading.Event()  # pack_soon(): seal and pack at once
        self._thread: threading.Thread | None = None
        self._log.load()
        self.loaded = len(self._known)

    # -- the VerdictCache protocol ------------------------------------------------

    def get(self, key: str) -> Outcome | None:
        with self._lock:
            return self._known.get(key)

    def put(self, key: str, outcome: Outcome, content: bytes | None = None) -> None:
        """Record a verdict. The first verdict for a key wins (later ones are re-runs), except
        that a local one supersedes a foreign one, and one confirmed by more runs made alone
        supersedes one confirmed by fewer.

        After `close()` verdicts are still remembered in memory but no longer
        saved: runs left over from a finished reduction may report late.
        """
        if content is not None and not self._closed:
            self.remember(content)
        with self._lock:
            if not self._memory.learn(key, outcome):
                return
            if self._closed:
                return
            self._pending[key] = outcome
            full = len(self._pending) >= self._checkpoint_verdicts
        self._start_checkpoints()
        self._wake.set()
        if full:
            self._urgent.set()

    def revoke_run(self) -> None:
        """This run's verdicts are not to be reused: its tests turned out inconsistent.

        The records it sealed stay on the ref but are ignored by every later run
        here (their run id is listed in the repository's revoked runs); those
        only checkpointed are left out of the next seal, and those not committed
        yet are dropped. Verdicts put afterwards are saved under a new run id.
        """
        self._log.revoke()

    def remember(self, content: bytes) -> str:
        """Write the candidate `content` under its key, loose: one file's text as a blob (well
        under 1 ms for a source file), a packed file set as the tree of its files
        (`cache_format.write_candidate`); return the key.

        Tried twice: a concurrent `git gc` may remove the fan-out directory
        the first attempt was about to rename an object into.
        """
        with self._blob_lock:
            try:
                written = write_candidate(self._blob_repo, content)
            except (OSError, pygit2.GitError):
                written = write_candidate(self._blob_repo, content)
        for oid, size in written:
            self._log.keep(str(oid), size)
        return str(written[-1][0])

    def recording(self, run_test: Callable[[bytes], Outcome]) -> Callable[[bytes], Outcome]:
        """`run_test`, plus keeping each tested candidate to be written under its key.

        Kept once the run is over, so a run cut short (which raises) leaves no
        object behind; not after `close()`, when nothing more would make the
        candidate reachable. Written by the background thread, just before the
        commit that first holds its verdict (`_write_unwritten`), not by the
        thread that ran the test: a loose object was a file created, 0.4 ms per
        test measured on sequence-point's 11-ms tests at one job, and the next
        test waited for it.
        """

        def run(content: bytes) -> Outcome:
            outcome = run_test(content)
            if not self._closed:
                with self._unwritten_lock:
                    self._unwritten.append(content)
            return outcome

        return run

    def _write_unwritten(self) -> None:
        """Write every candidate `recording` kept so far. The log calls it once it has taken
        the verdicts it is about to commit: each was put after its candidate was kept, so
        every candidate those verdicts name is written before the commit refers to it.

        One file's texts go into one new pack (`git/packs.py`: two files, not one
        per candidate); a file set's trees, and texts a pack cannot take, loose.
        """
        with self._unwritten_lock:
            unwritten, self._unwritten = self._unwritten, []
        texts: list[bytes] = []
        loose: list[bytes] = []
        for content in unwritten:
            (texts if set_tree(content) is None else loose).append(content)
        try:
            written = packs.write_blobs(objects_dir(self._blob_repo), texts)
        except (OSError, packs.PackTooLarge):
            written, loose = None, unwritten
        if written is not None:
            self._log.keep_pack(written)
        for content in loose:
            self.remember(content)

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
        """Checkpoint pending verdicts, no sooner than `checkpoint_seconds` after the last
        checkpoint (or the first verdict).

        A verdict arriving after a quiet spell is saved at once; a stream of
        them is saved in batches, at most 1 / `checkpoint_seconds` a second:
        a checkpoint is five object writes and a ref update (5 ms measured
        here, more on a loaded machine), and with fast tests (gcc12: 40
        verdicts a second) one per verdict took a fifth of a core. Every
        50 ms still took about a tenth of a core beside two tests, CPU the
        tests of `--jobs 2` on two cores need; twice a second costs about one
        percent and loses at most half a second of verdicts to a kill -9.
        """
        due = time.monotonic() + self._checkpoint_seconds
        while True:
            self._wake.wait()
            self._wake.clear()
            pause = due - time.monotonic()
            if pause > 0:
                self._urgent.wait(pause)
            self._urgent.clear()
            if self._closed:
                return
            try:
                packing = self._pack_now.is_set()
                if not packing:  # else the seal below commits the pending verdicts itself
                    self._log.checkpoint()
                if (
                    packing
                    or self._log.unpacked_bytes >= self._pack_bytes
                    or self._log.small_packs >= SMALL_PACKS
                ):
                    self._pack_now.clear()
                    self.flush()
                    self.pack()
                elif self._log.unsealed >= self._seal_after:
                    self.flush()
            except Exception as error:  # the final flush in close() retries and reports
                self.warnings.append(f"cache checkpoint failed: {error}")
            due = time.monotonic() + self._checkpoint_seconds

    def pack_soon(self) -> None:
        """Seal and pack what is saved so far, now, in the background.

        For when a reduction is over: its verdicts are all in, and sealing and
        packing them (a third of a second after 800 candidates of 23,000
        tokens) overlaps the re-verification of the result instead of being
        waited for in `close`, which then only has that verification's few
        verdicts left to save.
        """
        self._start_checkpoints()
        self._pack_now.set()
        self._wake.set()
        self._urgent.set()

    def close(self, *, pack: bool = True) -> None:
        """Stop checkpointing, seal every verdict, pack this run's objects.

        Raises `cache_log.CacheError` when the verdicts could not be saved; the caller
        should report it as a warning, the reduction's result is unaffected.
        """
        if self._closed:
            return
        self._closed = True
        self._wake.set()
        self._urgent.set()
        if self._thread is not None:
            self._thread.join()
        self.flush()
        if pack:
            self.pack()

    # -- saving, by the log -----------------------------------------------------------

    def flush(self) -> bool:
        """Seal now (see `CacheLog.flush`); whether a commit was made."""
        return self._log.flush()

    def pack(self) -> int:
        """Pack this writer's loose objects (see `CacheLog.pack`); how many were packed."""
        return self._log.pack()

    @property
    def flushes(self) -> int:
        """Commits this writer put on the ref: checkpoints and seals."""
        return self._log.flushes

    @property
    def conflicts(self) -> int:
        """Times the ref moved under this writer, which rebuilt its commit on top."""
        return self._log.conflicts

    @property
    def packs(self) -> int:
        """Packs this writer wrote."""
        return self._log.packs
