"""The recording random source: a `random.Random` whose every draw is a decision.

A generator draws from the `random.Random` its entry function is given, or
from the module-level `random` functions, which are bound to the same source
for the run. Each public draw goes through a hook (the recorder) that records
it, or asks an aligner for the value a reduced trace wants (forced). For that
the source describes each draw portably: a chosen element as a `Pick` that
another execution can look up again in its own sequence, and what the call
could have returned as a `Domain` (for checks made without the generator).
Infeasible is how a forced value says this call cannot return it.
"""

from __future__ import annotations

import difflib
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

# The APIs a generator draws from. Everything else in `random` is built on
# these, so recording them records every choice; nested calls (choice ->
# _randbelow -> getrandbits) are one decision, the outermost.
API = (
    "random",
    "uniform",
    "triangular",
    "randint",
    "randrange",
    "getrandbits",
    "randbytes",
    "choice",
    "choices",
    "sample",
    "shuffle",
    "gauss",
    "normalvariate",
    "lognormvariate",
    "expovariate",
    "vonmisesvariate",
    "gammavariate",
    "betavariate",
    "paretovariate",
    "weibullvariate",
)
MODULE_FUNCTIONS = (*API, "seed", "getstate", "setstate")


class Infeasible(Exception):
    """A recorded value cannot be returned by this call (Dec(O') cannot equal Dec(O))."""


# -- portable values -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Pick:
    """One element chosen from a sequence, in a form another execution can look up.

    Plain values (numbers, strings, tuples of them) are matched by value, so a
    choice among names still finds its name after earlier elements went away
    (the paper's Case 2 is exactly a value that is no longer there). Objects
    are matched by a repr that carries no address, else by position.
    """

    index: int
    value: Any = None
    plain: bool = False
    text: str | None = None
    nearest: bool = False  # re-align's fallback: the most similar element will do


@dataclass(frozen=True, slots=True)
class Domain:
    """What a call could have returned, kept for checks made without the generator:
    the lowest count a loop can be forced to, a value that turns a guard off."""

    kind: str  # "int", "float", "values", "size"
    low: Any = None
    high: Any = None
    values: tuple[Any, ...] | None = None


def _is_plain(value: object, depth: int = 0) -> bool:
    if value is None or type(value) in (bool, int, float, str, bytes):
        return True
    if type(value) in (tuple, frozenset) and depth < 3 and len(value) <= 16:  # type: ignore[arg-type]
        return all(_is_plain(item, depth + 1) for item in value)  # type: ignore[attr-defined]
    return False


def _stable_repr(value: object) -> str | None:
    try:
        text = repr(value)
    except Exception:
        return None
    if " at 0x" in text or len(text) > 200:
        return None
    return text


def make_pick(seq: Sequence[Any], index: int) -> Pick:
    element = seq[index]
    if _is_plain(element):
        return Pick(index, element, plain=True)
    return Pick(index, text=_stable_repr(element) if len(seq) <= 1000 else None)


def plain_int(api: str, value: Any) -> int | None:
    """The decision's value as a loop count, if it is an integer (booleans are not counts)."""
    if api == "choice" and isinstance(value, Pick):
        value = value.value if value.plain else None
    if type(value) is int:
        return value
    return None


def find_pick(seq: Sequence[Any], pick: Pick) -> Any:
    """The element of `seq` that `pick` names, or Infeasible."""
    if pick.nearest:
        return _most_similar(seq, pick)
    if pick.plain:
        value = pick.value
        if isinstance(seq, range):
            if type(value) is int and value in seq:
                return value
            raise Infeasible
        for element in seq:
            if type(element) is type(value) and element == value:
                return element
        raise Infeasible
    if pick.text is not None:
        for element in seq:
            if _stable_repr(element) == pick.text:
                return element
        raise Infeasible
    if 0 <= pick.index < len(seq):
        return seq[pick.index]
    raise Infeasible


def _most_similar(seq: Sequence[Any], pick: Pick) -> Any:
    """The element whose repr is closest to the one recorded, ties to the earliest.

    When removals renumber what a generator picks from (`p_3` is now called
    `p_2`), the recorded element is gone; the one most like it usually shares
    what mattered about it (its type, say), where the same position need not.
    """
    if not len(seq) or len(seq) > 256:
        raise Infeasible
    wanted = pick.text if pick.text is not None else repr(pick.value)
    best, best_score = None, -1.0
    for element in seq:
        text = _stable_repr(element) if not pick.plain else repr(element)
        if text is None:
            continue
        score = difflib.SequenceMatcher(None, wanted, text, autojunk=False).ratio()
        if score > best_score:
            best, best_score = element, score
    if best_score < 0:
        raise Infeasible
    return best


def _int_domain(values: range) -> Domain | None:
    if not values:
        return None
    return Domain("int", min(values[0], values[-1]), max(values[0], values[-1]))


def _sequence_domain(seq: Sequence[Any]) -> Domain:
    if isinstance(seq, range):
        domain = _int_domain(seq)
        return domain if domain is not None else Domain("size", len(seq))
    if len(seq) <= 64 and all(_is_plain(element) for element in seq):
        return Domain("values", values=tuple(seq))
    return Domain("size", len(seq))


# -- the recording random source -----------------------------------------------------


class Hook(Protocol):
    """Who decides: the recorder alone, or the recorder asking an aligner."""

    def decide(
        self,
        api: str,
        draw: Callable[[], Any],
        encode: Callable[[Any], Any],
        force: Callable[[Any], Any],
        domain: Domain | None,
    ) -> Any: ...


class RecordingRandom(random.Random):
    """A `random.Random` whose every public draw is a recorded (or forced) decision.

    It subclasses rather than wraps so that `isinstance(rng, random.Random)` and
    every derived method keep working, and so that an unforced draw consumes
    the underlying stream exactly as `random.Random(seed)` would: the recorded
    execution is the one the user saw.
    """

    def __init__(self, seed: Any = None) -> None:
        self._depth = 0
        self._hook: Hook | None = None
        super().__init__(seed)

    def _real(self, method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        self._depth += 1
        try:
            return method(self, *args, **kwargs)
        finally:
            self._depth -= 1

    def _decide(
        self,
        api: str,
        draw: Callable[[], Any],
        encode: Callable[[Any], Any],
        force: Callable[[Any], Any],
        domain: Callable[[], Domain | None],
    ) -> Any:
        if self._depth or self._hook is None:
            return draw()
        return self._hook.decide(api, draw, encode, force, domain())

    # Scalars: the value itself is portable; feasibility is a range check.

    def random(self) -> float:
        def force(value: Any) -> float:
            if type(value) is float and 0.0 <= value < 1.0:
                return value
            raise Infeasible

        return self._decide(
            "random",
            lambda: self._real(random.Random.random),
            _same,
            force,
            lambda: Domain("float", 0.0, 1.0),
        )

    def getrandbits(self, k: int) -> int:
        def force(value: Any) -> int:
            if type(value) is int and 0 <= value < (1 << k):
                return value
            raise Infeasible

        return self._decide(
            "getrandbits",
            lambda: self._real(random.Random.getrandbits, k),
            _same,
            force,
            lambda: Domain("int", 0, (1 << k) - 1),
        )

    def randrange(self, start: int, stop: int | None = None, step: int = 1) -> int:
        def values() -> range:
            return range(start) if stop is None else range(start, stop, step)

        def force(value: Any) -> int:
            if type(value) is int and value in values():
                return value
            raise Infeasible

        return self._decide(
            "randrange",
            lambda: self._real(random.Random.randrange, start, stop, step),
            _same,
            force,
            lambda: _int_domain(values()),
        )

    def randint(self, a: int, b: int) -> int:
        def force(value: Any) -> int:
            if type(value) is int and a <= value <= b:
                return value
            raise Infeasible

        return self._decide(
            "randint",
            lambda: self._real(random.Random.randint, a, b),
            _same,
            force,
            lambda: Domain("int", a, b),
        )

    def uniform(self, a: float, b: float) -> float:
        def force(value: Any) -> float:
            if isinstance(value, float) and min(a, b) <= value <= max(a, b):
                return value
            raise Infeasible

        return self._decide(
            "uniform",
            lambda: self._real(random.Random.uniform, a, b),
            _same,
            force,
            lambda: Domain("float", min(a, b), max(a, b)),
        )

    def triangular(self, low: float = 0.0, high: float = 1.0, mode: float | None = None) -> float:
        def force(value: Any) -> float:
            if isinstance(value, float) and min(low, high) <= value <= max(low, high):
                return value
            raise Infeasible

        return self._decide(
            "triangular",
            lambda: self._real(random.Random.triangular, low, high, mode),
            _same,
            force,
            lambda: Domain("float", min(low, high), max(low, high)),
        )

    def randbytes(self, n: int) -> bytes:
        def force(value: Any) -> bytes:
            if type(value) is bytes and len(value) == n:
                return value
            raise Infeasible

        return self._decide(
            "randbytes", lambda: self._real(random.Random.randbytes, n), _same, force, _no_domain
        )

    # Sequences: the element is looked up again in the sequence given this time.

    def choice(self, seq: Sequence[Any]) -> Any:  # type: ignore[override]
        if not len(seq):
            raise IndexError("Cannot choose from an empty sequence")
        return self._decide(
            "choice",
            lambda: seq[self._real(random.Random._randbelow, len(seq))],  # type: ignore[attr-defined]
            lambda value: _pick_of(seq, value),
            lambda pick: find_pick(seq, pick),
            lambda: _sequence_domain(seq),
        )

    def choices(  # type: ignore[override]
        self,
        population: Sequence[Any],
        weights: Sequence[float] | None = None,
        *,
        cum_weights: Sequence[float] | None = None,
        k: int = 1,
    ) -> list[Any]:
        def draw() -> list[Any]:
            count = len(population)
            marks = list(range(count))
            chosen = self._real(random.Random.choices, marks, weights, cum_weights=cum_weights, k=k)
            return [population[i] for i in chosen]

        def encode(values: list[Any]) -> tuple[Pick, ...]:
            return tuple(_pick_of(population, value) for value in values)

        def force(picks: Any) -> list[Any]:
            if not isinstance(picks, tuple) or len(picks) != k:
                raise Infeasible
            return [find_pick(population, pick) for pick in picks]

        return self._decide("choices", draw, encode, force, lambda: Domain("size", len(population)))

    def sample(self, population: Sequence[Any], k: int, *, counts: Any = None) -> list[Any]:
        def draw() -> list[Any]:
            return list(self._real(random.Random.sample, population, k, counts=counts))

        def encode(values: list[Any]) -> tuple[Pick, ...]:
            return tuple(_pick_of(population, value) for value in values)

        def force(picks: Any) -> list[Any]:
            if not isinstance(picks, tuple) or len(picks) != k or counts is not None:
                raise Infeasible
            return [find_pick(population, pick) for pick in picks]

        return self._decide("sample", draw, encode, force, lambda: Domain("size", len(population)))

    def shuffle(self, x: list[Any]) -> None:  # type: ignore[override]
        before = list(x)

        def draw() -> tuple[int, ...]:
            order = list(range(len(before)))
            self._real(random.Random.shuffle, order)  # same stream use as shuffling x itself
            return tuple(order)

        def force(order: Any) -> tuple[int, ...]:
            if not isinstance(order, tuple) or sorted(order) != list(range(len(before))):
                raise Infeasible
            return order

        order = self._decide("shuffle", draw, _same, force, _no_domain)
        x[:] = [before[i] for i in order]

    # Real-valued distributions: any float is a possible outcome.

    def gauss(self, mu: float = 0.0, sigma: float = 1.0) -> float:
        return self._float("gauss", random.Random.gauss, mu, sigma)

    def normalvariate(self, mu: float = 0.0, sigma: float = 1.0) -> float:
        return self._float("normalvariate", random.Random.normalvariate, mu, sigma)

    def lognormvariate(self, mu: float, sigma: float) -> float:
        return self._float("lognormvariate", random.Random.lognormvariate, mu, sigma)

    def expovariate(self, lambd: float) -> float:
        return self._float("expovariate", random.Random.expovariate, lambd)

    def vonmisesvariate(self, mu: float, kappa: float) -> float:
        return self._float("vonmisesvariate", random.Random.vonmisesvariate, mu, kappa)

    def gammavariate(self, alpha: float, beta: float) -> float:
        return self._float("gammavariate", random.Random.gammavariate, alpha, beta)

    def betavariate(self, alpha: float, beta: float) -> float:
        return self._float("betavariate", random.Random.betavariate, alpha, beta)

    def paretovariate(self, alpha: float) -> float:
        return self._float("paretovariate", random.Random.paretovariate, alpha)

    def weibullvariate(self, alpha: float, beta: float) -> float:
        return self._float("weibullvariate", random.Random.weibullvariate, alpha, beta)

    def _float(self, api: str, method: Callable[..., float], *args: float) -> float:
        def force(value: Any) -> float:
            if isinstance(value, float):
                return value
            raise Infeasible

        return self._decide(api, lambda: self._real(method, *args), _same, force, _no_domain)


def _same(value: Any) -> Any:
    return value


def _no_domain() -> None:
    return None


def _pick_of(seq: Sequence[Any], value: Any) -> Pick:
    """The Pick for an element just drawn from `seq` (found by identity, else equality)."""
    for index, element in enumerate(seq):
        if element is value:
            return make_pick(seq, index)
    for index, element in enumerate(seq):
        if element == value:
            return make_pick(seq, index)
    return Pick(-1, text=_stable_repr(value))
