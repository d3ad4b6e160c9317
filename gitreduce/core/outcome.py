"""What one run of the user's test says about one candidate.

Kept apart from the process runner so that algorithms, caches and reporters can
speak about verdicts without importing subprocess handling.
"""

from dataclasses import dataclass
from enum import Enum


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
    """

    verdict: Verdict
    exit_code: int | None
    seconds: float
    signature: str | None = None
