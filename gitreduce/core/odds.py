"""Whether a judgement still running will more likely win than lose, from how long it has run.

A candidate that keeps the bug often takes longer to test than one that
loses it: a compiler that crashes writes its report, one that rejects the
candidate stops at the first error. While the oldest judgement of a batch
runs, a free job can test a later candidate of the batch (worth something
only if the oldest loses) or what the pass tries after the oldest (worth
something only if it wins). Either test saves about one test's time when its
guess comes true, so the likelier guess is the better bet. The recent
judgements that ran at least as long as the oldest has so far say which is
likelier.
"""

from __future__ import annotations

import bisect
from collections import deque

# How many recent judgements decide: enough to hold a few winners at a typical rate of one in
# twenty, few enough to follow the tests as the inputs shrink
_WINDOW = 256
# The fewest winners as long as the running judgement that make a bet on it worth making
_LEAST_WINNERS = 4
# The gap between a duration and the least longer one, in seconds: far below a clock's tick
# of difference any two tests could show
_JUST_LONGER = 1e-6


class Odds:
    """Recent judgements' durations and answers; used by one batch's thread at a time."""

    def __init__(self) -> None:
        self._recent: deque[tuple[float, bool]] = deque()
        self._by_duration: list[tuple[float, bool]] = []

    def record(self, seconds: float, won: bool) -> None:
        if len(self._recent) == _WINDOW:
            oldest = self._recent.popleft()
            del self._by_duration[bisect.bisect_left(self._by_duration, oldest)]
        self._recent.append((seconds, won))
        bisect.insort(self._by_duration, (seconds, won))

    def favour_success(self, elapsed: float, margin: float = 1.0) -> bool:
        """Whether, of the recent judgements that took at least `elapsed` seconds, more
        than `margin` times as many won as lost (and enough won to tell)."""
        turn = self.when_success_favoured(elapsed, margin)
        return turn is not None and turn <= elapsed

    def when_success_favoured(self, elapsed: float, margin: float = 1.0) -> float | None:
        """The least running time from `elapsed` on at which `favour_success` holds; None
        when it never does (no recent judgement that long won often enough)."""
        records = self._by_duration
        won = lost = 0
        earliest = None
        # From the longest down: those at least e long, for e just above the next shorter
        # duration up to this one, are this record and every longer one.
        for index in range(len(records) - 1, -1, -1):
            seconds, success = records[index]
            if seconds < elapsed:
                break
            if success:
                won += 1
            else:
                lost += 1
            shorter = records[index - 1][0] if index else None
            if shorter == seconds:
                continue  # the same duration again: counted with it, judged below
            if won >= _LEAST_WINNERS and won > margin * lost:
                earliest = elapsed if shorter is None else max(elapsed, shorter + _JUST_LONGER)
        return earliest
