"""What the engine knows about texts: verdicts with their provenance, syntax rejections,
one test per text at a time, and the time the oracle was busy.

Cached verdicts carry their provenance (`Outcome.local`). A verdict this
repository's own runs produced decides a candidate either way. A foreign one
(fetched from elsewhere) may only reject: a verdict that would accept a
candidate is confirmed by running the test first, and the local verdict
replaces it in the cache. Once a confirmation contradicts a foreign verdict,
no foreign verdict is used for the rest of the run. So every accepted
candidate, and hence the result, rests on a run made here.

Every test, cache hit and syntax rejection counts for the pass the calling
thread works for (`counting_for`; the engine's jobs take their batch's, or
the pass a lookahead announced for the candidate it yielded: `announce`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from gitreduce.core import tickets
from gitreduce.core.jobs import Jobs
from gitreduce.core.judges import Accepts, Precheck
from gitreduce.core.keys import candidate_key
from gitreduce.core.outcome import MemoryCache, Outcome, VerdictCache
from gitreduce.core.stats import Stats

ORIGINALS = "originals"  # the label of tests outside any pass: the originals, final checks


class VerdictMemo:
    """The memory half of the engine (`core/engine.py` runs the batches on top of it)."""

    def __init__(
        self,
        run_test: Callable[[bytes], Outcome],
        cache: VerdictCache | None,
        lock: threading.Lock,
        jobs: Jobs,
    ) -> None:
        self._run_test = run_test
        self.cache: VerdictCache = cache if cache is not None else MemoryCache()
        self.stats = Stats()
        self._lock = lock
        self._jobs = jobs
        self._context = threading.local()
        self._tests_in_flight: dict[str, threading.Event] = {}
        self._syntax_rejects: set[str] = set()
        self._running = 0
        self._busy_since = 0.0
        self._foreign_trusted = True  # until a confirmation contradicts a foreign verdict
        self._announced: str | None = None  # see `announce`

    def recall(self, text: bytes, accepts: Accepts | None = None) -> Outcome | None:
        """A verdict already known for `text` that may decide it, counted as a cache hit.

        A local verdict always may. A foreign one may only when it rejects:
        `accepts` says no to it. None when there is no such verdict, and for a
        foreign one without `accepts` (a single check, where every verdict
        decides something): those are confirmed by `outcome`.
        """
        cached = self.known(text, accepts)
        if cached is None:
            return None
        self.stats.cache_hits += 1
        self.stats.of_pass(self._label()).cache_hits += 1
        if not cached.local:
            self.stats.foreign_used += 1
        return cached

    def known(self, text: bytes, accepts: Accepts | None = None) -> Outcome | None:
        """What `recall` would give, not counted: for choosing what to test ahead."""
        cached = self.cache.get(candidate_key(text))
        if cached is None or not self._decides(cached, accepts):
            return None
        if not cached.local and getattr(self._context, "reading_ahead", False):
            return None  # a test still running may end the trust: the judgement decides it
        return cached

    def announce(self, label: str) -> None:
        """Said by a lookahead (on the batch's main thread) just before it yields a candidate
        of another pass than the batch reading it, the next pass's first batch: that
        candidate's cheap checks and test count for `label`, not for the pass that read
        it ahead. Each read of a lookahead forgets the previous announcement."""
        self._announced = label

    @contextmanager
    def counting_for(self, label: str) -> Iterator[None]:
        """Count what this thread does meanwhile (tests, cache hits, syntax rejections)
        for the pass `label`: for checks made outside a batch."""
        outer = self._label()
        self._context.label = label
        try:
            yield
        finally:
            self._context.label = outer

    def _decides(self, cached: Outcome, accepts: Accepts | None) -> bool:
        """Whether `cached` may stand for a run: see the module's docstring."""
        if cached.local:
            return True
        return accepts is not None and self._foreign_trusted and not accepts(cached)

    def parses(self, text: bytes, precheck: Precheck | None) -> bool:
        """The syntax pre-check, remembered per text so a rejected text is parsed once."""
        if precheck is None:
            return True
        key = candidate_key(text)
        if key in self._syntax_rejects:
            return False
        if precheck(text):
            return True
        self.stats.syntax_rejected += 1
        self.stats.of_pass(self._label()).syntax_rejected += 1
        self._syntax_rejects.add(key)
        return False

    def outcome(self, text: bytes, accepts: Accepts | None = None) -> Outcome:
        """The test's verdict on `text`: cached, awaited from another worker, or run now.

        A cached foreign verdict is used only where `recall` would use it;
        otherwise the test runs to confirm it, and a confirmation that says
        otherwise is counted and ends the trust in foreign verdicts.
        Called from worker threads; a text is never tested twice at once. A
        judgement abandoned meanwhile starts no test: `tickets.Abandoned`.
        """
        key = candidate_key(text)
        while True:
            tickets.check()
            with self._lock:
                cached = self.cache.get(key)
                if cached is not None and self._decides(cached, accepts):
                    if not cached.local:
                        self.stats.foreign_used += 1
                    return cached
                running = self._tests_in_flight.get(key)
                if running is None:
                    self._tests_in_flight[key] = threading.Event()
                    break
                self._jobs.wait_begins_locked()
            tickets.test_under_way()  # another judgement's test, but running: nothing to start
            try:
                running.wait()
            finally:
                with self._lock:
                    self._jobs.wait_ends_locked()
        try:
            fresh = self._timed_run(key, text)
        finally:
            with self._lock:
                self._tests_in_flight.pop(key).set()
        if cached is not None:
            self._confirmed(cached, fresh, accepts)
        return fresh

    def _confirmed(self, foreign: Outcome, fresh: Outcome, accepts: Accepts | None) -> None:
        if accepts is not None:
            contradicted = accepts(foreign) != accepts(fresh)
        else:
            contradicted = (foreign.verdict, foreign.signature) != (fresh.verdict, fresh.signature)
        with self._lock:
            self.stats.confirmations += 1
            if contradicted:
                self.stats.contradicted += 1
                self._foreign_trusted = False

    def _timed_run(self, key: str, text: bytes) -> Outcome:
        with self._lock:
            started = time.monotonic()
            if self._running == 0:
                self._busy_since = started
            self._running += 1
        try:
            outcome = self._run_test(text)
        finally:
            with self._lock:
                self._running -= 1
                ended = time.monotonic()
                self.stats.test_seconds += ended - started
                if self._running == 0:
                    self.stats.oracle_busy_seconds += ended - self._busy_since
        with self._lock:
            self.cache.put(key, outcome)
            self.stats.tests_run += 1
            self.stats.of_pass(self._label()).tests += 1
        return outcome

    def _label(self) -> str:
        """The pass whose batch this thread is working for."""
        return getattr(self._context, "label", ORIGINALS)
