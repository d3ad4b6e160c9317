"""Judging a candidate by several runs of the test: for tests that fail only sometimes.

Job: the rule `--repeat N` applies to every candidate, to the originals and
to the final re-verification of a result.

The rule: runs are grouped by what the test said, the verdict and, for a
BAD run, its failure signature (unless `--any-failure`, which ignores
signatures); a candidate's verdict is the group holding a strict majority of
its N runs. Runs stop as soon as one group has a majority or none can reach
one any more, so a test that agrees with itself costs about N/2 + 1 runs. No
majority makes the candidate SKIP: it can be judged neither way, which
rejects it as a variant and as a seed alike. Lithium and shrinkray offer a
repeat count too; a majority rather than "any of N" keeps a candidate that
fails by chance now and then from being taken for one that fails.
"""

from __future__ import annotations

from collections.abc import Callable

from gitreduce.core.outcome import Outcome, Verdict
from gitreduce.oracle.spec import TestSpec

Kind = tuple[Verdict, str | None]

# Every candidate costs up to this many runs: past it a reduction of any size would not
# end (a million runs a candidate looked like a hang in calibration), and a test that
# needs more than a hundred runs to decide is not one a reduction can follow.
MAX_REPEAT = 99


def kind(spec: TestSpec, outcome: Outcome) -> Kind:
    """What two runs must share to count as the test saying the same thing twice."""
    if outcome.verdict is Verdict.BAD and not spec.any_failure:
        return outcome.verdict, outcome.signature
    return outcome.verdict, None


def describe(spec: TestSpec, outcomes: list[Outcome]) -> str:
    """`bad, bad, good`: what the runs said, signatures added only where BAD runs differ."""
    signatures = {outcome.signature for outcome in outcomes if outcome.verdict is Verdict.BAD}
    show = len(signatures) > 1 and not spec.any_failure
    return ", ".join(
        f"bad ({outcome.signature!r})"
        if show and outcome.verdict is Verdict.BAD
        else outcome.verdict.value
        for outcome in outcomes
    )


class Tally:
    """Runs of one text by the majority rule, out of `total`: fed one run at a time."""

    def __init__(self, spec: TestSpec, total: int) -> None:
        self.spec = spec
        self.total = total
        self.runs: list[Outcome] = []
        self._groups: dict[Kind, list[Outcome]] = {}

    def add(self, outcome: Outcome) -> None:
        self.runs.append(outcome)
        self._groups.setdefault(kind(self.spec, outcome), []).append(outcome)

    def winner(self) -> Outcome | None:
        """The first run of the group holding a strict majority of `total`, if one does."""
        for group in self._groups.values():
            if 2 * len(group) > self.total:
                return group[0]
        return None

    def decided(self) -> bool:
        """A group has its majority, or none can reach one with the runs left."""
        if self.winner() is not None:
            return True
        largest = max((len(group) for group in self._groups.values()), default=0)
        return 2 * (largest + self.total - len(self.runs)) <= self.total

    def verdict(self) -> Outcome:
        """The majority's run, or SKIP when there is none (see the module's docstring)."""
        winner = self.winner()
        if winner is not None:
            return winner
        return Outcome(Verdict.SKIP, None, max(outcome.seconds for outcome in self.runs))


def repeated(run: Callable[[bytes], Outcome], spec: TestSpec) -> Callable[[bytes], Outcome]:
    """`run` judged by the majority of `spec.repeat` runs (just `run` when that is 1)."""
    if spec.repeat == 1:
        return run

    def judged(content: bytes) -> Outcome:
        tally = Tally(spec, spec.repeat)
        while not tally.decided():
            tally.add(run(content))
        return tally.verdict()

    return judged
