"""What decides a candidate: the judge a batch of the engine asks, and the single-program one.

A judge answers in two steps so that the engine can keep its jobs busy: the
cheap checks in the main thread (`quick`: size, syntax, a cached verdict),
and the tests in a worker (`full`). The pair's judge (`pair/current.py`) asks
two tests for one candidate; the single-program judge below asks one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Protocol, TypeVar

from gitreduce.core.outcome import Outcome

if TYPE_CHECKING:
    from gitreduce.core.engine import Engine

# The syntax check of a candidate text: False rejects it untested
Precheck = Callable[[bytes], bool]
# What a verdict must say for the candidate asking to be accepted (interesting, or a pair's
# seed still good): a foreign verdict that says no may reject it without a test.
Accepts = Callable[[Outcome], bool]
C = TypeVar("C")
C_contra = TypeVar("C_contra", contravariant=True)
# What a caller will try next if none of a batch wins, made only when it is asked for
Lookahead = Callable[[], Iterable[C]]
# What a caller will try next if the batch's candidate of the given index is the first to
# win, made only when asked for, once that candidate has been read
AfterSuccess = Callable[[int], Iterable[C]]


class Judge(Protocol[C_contra]):
    """Decides whether a candidate of some shape (a text, a seed/variant pair) is interesting.

    `quick` answers from cheap checks alone (size, syntax, cached verdicts) in
    the main thread, or returns None; `full` runs in a worker thread and may
    call `Engine.outcome` for as many tests as the candidate needs.
    """

    def quick(self, candidate: C_contra) -> bool | None: ...

    def full(self, candidate: C_contra) -> bool: ...


class TextJudge:
    """The single-program judge: smaller, parses, and the test says interesting.

    With `place`, a candidate is one file of a file set and what is tested (and
    cached) is `place(candidate)`, the whole set with that file in place; size
    and syntax are still the file's own.
    """

    def __init__(
        self,
        engine: Engine,
        is_interesting: Callable[[Outcome], bool],
        smaller_than: int,
        precheck: Precheck | None,
        place: Callable[[bytes], bytes] | None = None,
    ) -> None:
        self._engine = engine
        self._is_interesting = is_interesting
        self._smaller_than = smaller_than
        self._precheck = precheck
        self._place = place

    def _tested(self, candidate: bytes) -> bytes:
        return candidate if self._place is None else self._place(candidate)

    def quick(self, candidate: bytes) -> bool | None:
        engine = self._engine
        if len(candidate) >= self._smaller_than:
            engine.stats.not_smaller += 1
            return False
        cached = engine.recall(self._tested(candidate), self._is_interesting)
        if cached is not None:
            return self._is_interesting(cached)
        if not engine.parses(candidate, self._precheck):
            return False
        return None

    def full(self, candidate: bytes) -> bool:
        tested = self._tested(candidate)
        return self._is_interesting(self._engine.outcome(tested, self._is_interesting))
