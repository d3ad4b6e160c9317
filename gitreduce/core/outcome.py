"""What one run of the user's test says about one candidate.

Kept apart from the process runner so that algorithms, caches and reporters can
speak about verdicts without importing subprocess handling.
"""

from dataclasses import dataclass, field
from enum import Enum
from typing import Protocol


class Verdict(Enum):
    """The `git bisect run` classes of an exit status, plus a timeout."""

    GOOD = "good"  # exit 0: valid program, bug absent
    BAD = "bad"  # exit 1-127 except 125: bug present
    SKIP = "skip"  # exit 125: cannot be tested (invalid program, unrelated failure)
    TIMEOUT = "timeout"  # killed after the time limit
    BROKEN = "broken"  # exit >= 128 or killed by a signal: the test itself broke


@dataclass(frozen=True)
class Outcome:
    """One classified test run.

    `signature` is the normalised failure signature of a BAD run (None when the
    run was not BAD or printed nothing that looks like an error).

    Two facts about where the verdict stands, which are not what the test
    said and so do not take part in comparisons:
    - `local`: the verdict was obtained here, by this repository's own runs
      (True for every fresh run). A verdict read from a shared cache that this
      repository cannot prove it wrote is not local: the engine may let it
      reject a candidate but confirms it by a run before it accepts one.
    - `solo_runs`: how many runs made alone (no other test running) agreed
      on this verdict, as the final re-verification of a result does; 0 for a
      run made among others.
    """

    verdict: Verdict
    exit_code: int | None
    seconds: float
    signature: str | None = None
    local: bool = field(default=True, compare=False)
    solo_runs: int = field(default=0, compare=False)


class VerdictCache(Protocol):
    """Verdicts by candidate key (`core/keys.candidate_key`), for one test fingerprint."""

    def get(self, key: str) -> Outcome | None: ...

    def put(self, key: str, outcome: Outcome) -> None:
        """Store a verdict; a local one must replace a foreign one for the same key."""


class MemoryCache:
    """A process-local verdict cache."""

    def __init__(self) -> None:
        self._verdicts: dict[str, Outcome] = {}

    def get(self, key: str) -> Outcome | None:
        return self._verdicts.get(key)

    def put(self, key: str, outcome: Outcome) -> None:
        known = self._verdicts.get(key)
        if known is None or (outcome.local and not known.local):
            self._verdicts[key] = outcome
