"""What a reduction cost and gained, overall and per pass: what `--stats`, `--json` and the
benchmark report.

The engine counts tests, cache hits, syntax rejections and successes as it
judges; `run_pass` adds each pass's runs, wall time and tokens removed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field


@dataclass
class PassStats:
    """What one pass (by its label) cost and gained: the profile `--stats` prints.

    The engine counts tests, cache hits, syntax rejections and successes of the
    batches that carry the label; `run_pass` adds runs, wall time and tokens removed.
    """

    runs: int = 0
    tests: int = 0
    cache_hits: int = 0
    syntax_rejected: int = 0
    successes: int = 0
    tokens_removed: int = 0
    seconds: float = 0.0


@dataclass
class Stats:
    """Counters a reporter shows and the benchmark reads."""

    tests_run: int = 0
    cache_hits: int = 0
    # Cached verdicts from elsewhere that saved a test by rejecting a candidate; tests run to
    # confirm one that would have accepted a candidate (or decided a single check); those
    # confirmations that came out otherwise.
    foreign_used: int = 0
    confirmations: int = 0
    contradicted: int = 0
    not_smaller: int = 0
    syntax_rejected: int = 0
    interesting: int = 0
    # Judgements started on what follows a candidate still running, betting that it wins
    success_bets: int = 0
    # Judgements of later candidates stopped to give their job to such a bet
    preempted_for_bets: int = 0
    oracle_busy_seconds: float = 0.0
    # Every test's own duration, summed (tests stopped as speculation included): divided by
    # jobs times the wall time, how busy the jobs were
    test_seconds: float = 0.0
    started: float = field(default_factory=time.monotonic)
    passes: dict[str, PassStats] = field(default_factory=dict)

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def of_pass(self, label: str) -> PassStats:
        """The counters of `label`, created on first use (in the order passes first ran)."""
        return self.passes.setdefault(label, PassStats())  # one atomic step: threads share it

    def pass_profile(self) -> list[dict[str, object]]:
        """Every pass's counters in the order the passes first ran, for `--json`."""
        return [
            {
                "pass": label,
                "runs": stats.runs,
                "tests": stats.tests,
                "cache_hits": stats.cache_hits,
                "syntax_rejected": stats.syntax_rejected,
                "successes": stats.successes,
                "tokens_removed": stats.tokens_removed,
                "seconds": round(stats.seconds, 3),
            }
            for label, stats in self.passes.items()
        ]

    @property
    def by_pass(self) -> dict[str, int]:
        """Tests run per pass label, for passes that ran any."""
        return {label: stats.tests for label, stats in self.passes.items() if stats.tests}
