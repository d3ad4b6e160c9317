"""Trace-aligned re-execution: run the generator again, forcing the decisions a reduced trace keeps.

Re-executing aligns each decision the generator asks for with the next kept
decision of the reduced trace's plan (plan.py: same Prog(O), same execution
index) and returns that decision's value; the recorder runs as it did the
first time, so every re-execution yields a complete trace of its own.

Alignment can be infeasible: the generator goes down another path (the
paper's Case 1) or the recorded value is no longer possible (Case 2, a choice
among variables one of which was removed). The three strategies differ there:

- halt: give up; this reduced trace yields nothing;
- bypass: also remove the innermost iteration or block around the decision
  that could not be aligned, and start over (it only ever removes more, so it
  ends);
- re-align (default): take an arbitrary feasible value for the misaligned
  decision (the nearest one for numbers, the most similar element for a
  choice; for a decision with no counterpart at all, a value that turns its
  guard off if its call guards a block elsewhere in the trace, else a random
  draw) and align later decisions with the first kept decision of the same
  Prog and execution index, skipping what lies between.
"""

from __future__ import annotations

import contextlib
from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any

from gitreduce.generator.plan import Edits, Expected, Plan, Unit, call_site, derive
from gitreduce.generator.random_source import Domain, Infeasible, Pick
from gitreduce.generator.recorder import GeneratorFailed, execute
from gitreduce.generator.trace import Site, Trace


class Alignment(Enum):
    """What to do when a reduced trace cannot be followed exactly."""

    HALT = "halt"
    BYPASS = "bypass"
    REALIGN = "realign"


class Halt(BaseException):
    """Stops a re-execution; a BaseException so that a generator's `except Exception` cannot
    swallow it."""


class Bypass(BaseException):
    """Restart with `unit` removed as well (None: nothing around the decision to remove)."""

    def __init__(self, unit: int | None) -> None:
        super().__init__(unit)
        self.unit = unit


# -- aligning one execution --------------------------------------------------------------


class Aligner:
    """Hands out the values of one re-execution and notices where it stops following the plan."""

    def __init__(self, plan: Plan, alignment: Alignment) -> None:
        self.expected = plan.expected
        self.plan = plan
        self.alignment = alignment
        self.pointer = 0
        self.misaligned = 0
        self.failure: BaseException | None = None
        self._position = 0
        self._aligned: dict[int, Expected] = {}
        self._positions: dict[tuple[Site, tuple[int, ...]], list[int]] = {}
        if alignment is Alignment.REALIGN:
            for index, expected in enumerate(self.expected):
                self._positions.setdefault((expected.site, expected.path), []).append(index)

    def choose(
        self,
        site: Site,
        path: tuple[int, ...],
        draw: Callable[[], Any],
        force: Callable[[Any], Any],
        domain: Domain | None,
    ) -> Any:
        if self.failure is not None:
            raise self.failure
        actual = self._position
        self._position += 1
        found = self._match(site, path)
        if found is None:
            return self._misaligned(site, draw, force)
        try:
            value = force(found.value)
        except Infeasible:
            self.misaligned += 1
            if self.alignment is Alignment.HALT:
                raise Halt from None
            if self.alignment is Alignment.BYPASS:
                raise Bypass(found.unit) from None
            return self._nearest(found.value, draw, force, domain)
        self._aligned[actual] = found
        return value

    def guard_resolved(self, decision: int, taken: bool) -> None:
        """Called from the trace hook, where raising would unset it: failures wait for the next
        decision or the end."""
        expected = self._aligned.get(decision)
        if expected is None or expected.taken is None or expected.taken == taken:
            return
        self.misaligned += 1
        if self.failure is None and self.alignment is Alignment.HALT:
            self.failure = Halt()
        elif self.failure is None and self.alignment is Alignment.BYPASS:
            self.failure = Bypass(expected.unit)

    def finish(self) -> None:
        """The end of the execution: kept decisions that never came are a misalignment too."""
        if self.failure is not None:
            raise self.failure
        if self.pointer < len(self.expected) and self.alignment is not Alignment.REALIGN:
            self.misaligned += 1
            if self.alignment is Alignment.HALT:
                raise Halt
            raise Bypass(self.expected[self.pointer].unit)

    def _match(self, site: Site, path: tuple[int, ...]) -> Expected | None:
        if self.alignment is not Alignment.REALIGN:
            if self.pointer < len(self.expected):
                expected = self.expected[self.pointer]
                if expected.site == site and expected.path == path:
                    self.pointer += 1
                    return expected
            return None
        positions = self._positions.get((site, path))
        if not positions:
            return None
        at = bisect_left(positions, self.pointer)
        if at == len(positions):
            return None
        self.pointer = positions[at] + 1  # what lies between is skipped: re-aligned
        return self.expected[positions[at]]

    def _misaligned(self, site: Site, draw: Callable[[], Any], force: Callable[[Any], Any]) -> Any:
        self.misaligned += 1
        if self.alignment is Alignment.HALT:
            raise Halt
        if self.alignment is Alignment.BYPASS:
            unit = self.expected[self.pointer].unit if self.pointer < len(self.expected) else None
            raise Bypass(unit)
        # Nobody asked for this decision: re-align may take any value. A guard is turned
        # off, so the part it starts does not grow a block nobody asked for; anything else
        # is drawn. (Its simplest value would be no better a guess: the alternative that
        # mattered is as likely the second as the first.)
        skip = self.plan.skips.get(call_site(site))
        if skip is not None:
            with contextlib.suppress(Infeasible):
                return force(skip)
        return draw()

    def _nearest(
        self,
        value: Any,
        draw: Callable[[], Any],
        force: Callable[[Any], Any],
        domain: Domain | None,
    ) -> Any:
        """An arbitrary value for re-align, chosen to stay close: a count stays as small as
        allowed, a choice takes the most similar element left (else the same position)."""
        target = value.value if isinstance(value, Pick) and value.plain else value
        candidates: list[Any] = []
        if type(target) is int and domain is not None:
            if domain.kind == "int":
                candidates.append(min(max(target, domain.low), domain.high))
            elif domain.kind == "values" and domain.values is not None:
                numbers = [v for v in domain.values if type(v) is int]
                if numbers:
                    candidates.append(min(numbers, key=lambda v: (abs(v - target), v)))
            if isinstance(value, Pick):
                candidates = [Pick(-1, candidate, plain=True) for candidate in candidates]
        if isinstance(value, Pick) and (value.text is not None or value.plain):
            candidates.append(Pick(value.index, value.value, value.plain, value.text, nearest=True))
        if isinstance(value, Pick) and value.index >= 0:
            candidates.append(Pick(value.index))
        for candidate in candidates:
            with contextlib.suppress(Infeasible):
                return force(candidate)
        return draw()


@dataclass
class Replayed:
    """What one re-execution of a reduced trace gave: a trace, or why there is none."""

    trace: Trace | None
    removed: Edits  # the edits in the end (bypass may add regions to the request)
    misaligned: int = 0
    runs: int = 1
    failure: str | None = None


def replay(
    factory: Callable[[], Callable[..., Any]],
    base: Trace,
    removed: Edits,
    alignment: Alignment,
    seed: int,
) -> Replayed:
    """Re-execute the generator along `base` with the edits `removed`, under `alignment`."""
    labels: set[Unit] = set(removed)
    runs = 0
    misaligned = 0
    while True:
        plan = derive(base, frozenset(labels))
        if plan is None:
            return Replayed(None, frozenset(labels), misaligned, runs, "infeasible count")
        aligner = Aligner(plan, alignment)
        runs += 1
        try:
            trace = execute(factory, seed, aligner)
            aligner.finish()
        except Halt:
            return Replayed(None, frozenset(labels), aligner.misaligned, runs, "halted")
        except Bypass as bypass:
            misaligned += aligner.misaligned
            if bypass.unit is None or bypass.unit in labels:
                return Replayed(None, frozenset(labels), misaligned, runs, "nothing to bypass")
            labels.add(bypass.unit)
            continue
        except GeneratorFailed as error:
            return Replayed(None, frozenset(labels), aligner.misaligned, runs, str(error))
        return Replayed(trace, frozenset(labels), misaligned + aligner.misaligned, runs)
