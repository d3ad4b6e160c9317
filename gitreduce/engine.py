"""The one road from a candidate to the oracle: gate, cache, parallel runs, deterministic winner.

Passes hand the engine an ordered batch of candidate texts and ask for the
first interesting one. Cheap checks come first (not smaller, already known,
does not parse); what survives runs in parallel, up to `jobs` at once. Later
candidates are only speculation: the answer is always the lowest-indexed
success, so results do not depend on `--jobs` or on which run finishes first.
Runs still going when the answer is known are left to finish and fill the
cache ("orphans") instead of being killed.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Protocol

from gitreduce.outcome import Outcome


def blob_id(content: bytes) -> str:
    """The git blob id of `content`: the cache key, so the git store can reuse it as is."""
    digest = hashlib.sha1(b"blob %d\0" % len(content))
    digest.update(content)
    return digest.hexdigest()


class VerdictCache(Protocol):
    """Verdicts by blob id, for one test fingerprint."""

    def get(self, key: str) -> Outcome | None: ...

    def put(self, key: str, outcome: Outcome) -> None: ...


class MemoryCache:
    """A process-local verdict cache."""

    def __init__(self) -> None:
        self._verdicts: dict[str, Outcome] = {}

    def get(self, key: str) -> Outcome | None:
        return self._verdicts.get(key)

    def put(self, key: str, outcome: Outcome) -> None:
        self._verdicts[key] = outcome


@dataclass
class Stats:
    """Counters a reporter shows and the benchmark reads."""

    tests_run: int = 0
    cache_hits: int = 0
    not_smaller: int = 0
    syntax_rejected: int = 0
    interesting: int = 0
    oracle_busy_seconds: float = 0.0
    started: float = field(default_factory=time.monotonic)
    by_pass: dict[str, int] = field(default_factory=dict)

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started


Precheck = Callable[[bytes], bool]


class Engine:
    """Runs batches of candidates through the gate and the oracle."""

    def __init__(
        self,
        run_test: Callable[[bytes], Outcome],
        is_interesting: Callable[[Outcome], bool],
        *,
        jobs: int,
        cache: VerdictCache | None = None,
    ) -> None:
        self._run_test = run_test
        self._is_interesting = is_interesting
        self.jobs = max(1, jobs)
        self.cache: VerdictCache = cache if cache is not None else MemoryCache()
        self.stats = Stats()
        self.pass_name = "start"
        self._executor = ThreadPoolExecutor(max_workers=self.jobs, thread_name_prefix="oracle")
        self._lock = threading.Lock()
        self._inflight: dict[str, Future[Outcome]] = {}
        self._syntax_rejects: set[str] = set()
        self._running = 0
        self._busy_since = 0.0

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)

    def _timed_run(self, key: str, text: bytes) -> Outcome:
        with self._lock:
            if self._running == 0:
                self._busy_since = time.monotonic()
            self._running += 1
        try:
            outcome = self._run_test(text)
        finally:
            with self._lock:
                self._running -= 1
                if self._running == 0:
                    self.stats.oracle_busy_seconds += time.monotonic() - self._busy_since
        with self._lock:
            self.cache.put(key, outcome)
            self.stats.tests_run += 1
            self.stats.by_pass[self.pass_name] = self.stats.by_pass.get(self.pass_name, 0) + 1
        return outcome

    def _forget(self, key: str, future: Future[Outcome]) -> None:
        with self._lock:
            if self._inflight.get(key) is future:
                del self._inflight[key]

    def test(self, text: bytes) -> Outcome:
        """Run (or recall) one text without any gate: for originals and final checks."""
        key = blob_id(text)
        cached = self.cache.get(key)
        if cached is not None:
            self.stats.cache_hits += 1
            return cached
        return self._submit(key, text).result()

    def _submit(self, key: str, text: bytes) -> Future[Outcome]:
        with self._lock:
            future = self._inflight.get(key)
            if future is not None:
                return future
            future = self._executor.submit(self._timed_run, key, text)
            self._inflight[key] = future
        future.add_done_callback(lambda done, key=key: self._forget(key, done))
        return future

    def _gate(
        self, text: bytes, smaller_than: int, precheck: Precheck | None
    ) -> bool | Future[Outcome]:
        """A verdict known without running the test, or the future of its run."""
        if len(text) >= smaller_than:
            self.stats.not_smaller += 1
            return False
        key = blob_id(text)
        cached = self.cache.get(key)
        if cached is not None:
            self.stats.cache_hits += 1
            return self._is_interesting(cached)
        if key in self._syntax_rejects:
            return False
        if precheck is not None and not precheck(text):
            self.stats.syntax_rejected += 1
            self._syntax_rejects.add(key)
            return False
        return self._submit(key, text)

    def first_success(
        self,
        candidates: Iterable[bytes],
        *,
        smaller_than: int,
        precheck: Precheck | None = None,
    ) -> tuple[int, bytes] | None:
        """The lowest-indexed interesting candidate and its text, or None.

        Candidates are pulled lazily, at most `jobs` runs in flight (orphans of
        earlier batches included), and never past a known success.
        """
        pending = iter(enumerate(candidates))
        texts: dict[int, bytes] = {}
        running: dict[int, Future[Outcome]] = {}
        known: dict[int, bool] = {}
        next_to_resolve = 0
        earliest_success: int | None = None
        exhausted = False
        while True:
            while next_to_resolve in known:
                if known[next_to_resolve]:
                    self.stats.interesting += 1
                    return next_to_resolve, texts[next_to_resolve]
                texts.pop(next_to_resolve, None)
                next_to_resolve += 1
            while not exhausted and earliest_success is None and len(self._inflight) < self.jobs:
                try:
                    index, text = next(pending)
                except StopIteration:
                    exhausted = True
                    break
                texts[index] = text
                verdict = self._gate(text, smaller_than, precheck)
                if isinstance(verdict, bool):
                    known[index] = verdict
                    if verdict:
                        earliest_success = index
                else:
                    running[index] = verdict
            if next_to_resolve in known:
                continue
            if not running:
                if exhausted or earliest_success is not None:
                    return None
                with self._lock:
                    orphans = list(self._inflight.values())
                if orphans:
                    wait(orphans, return_when=FIRST_COMPLETED)
                continue
            wait(list(running.values()), return_when=FIRST_COMPLETED)
            for index in [index for index, future in running.items() if future.done()]:
                outcome = running.pop(index).result()
                known[index] = self._is_interesting(outcome)
                if known[index] and (earliest_success is None or index < earliest_success):
                    earliest_success = index
            if earliest_success is not None:
                for index in [index for index in running if index > earliest_success]:
                    del running[index]  # speculation past the winner: left to fill the cache
