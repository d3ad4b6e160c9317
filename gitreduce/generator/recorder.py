"""Trace instrumentation: run a generator once and record every random decision it makes.

GReduce reduces a generator's *execution* rather than its output, so the
execution has to become data first. Every call of a `random` API is one
decision (the paper's Dec(O)): what was asked (the API and enough of its
arguments to check feasibility later) and what came back. Its call stack, as
code objects and bytecode offsets from the entry function down, is the
decision's Prog(O): the same call stack in another execution is "the same
operation", which is what trace alignment matches on.

While the generator runs, a `sys.settrace` hook also recognises the two
reducible patterns of the paper, because after the run the information is
gone:

- a `for` loop whose trip count was a decision (`for _ in range(rng.randint(1, 5))`,
  or `n = random.choice(range(20))` then `for i in range(n)`): a *loop*
  region with one *iteration* region per pass;
- a branch guarded by a decision (`if random.choice([False, True]):`,
  `if rng.random() < 0.3:`, also a `while` test): a *block* region for the
  code the branch ran.

Both are found from bytecode (FOR_ITER ranges, a conditional jump right after
the decision's CALL) and from the offsets the frames are seen at, so no
source annotation is needed. Regions nest as the execution nested them; the
reducer removes iterations and blocks, and the tree of regions is the tree
HDD walks. Calls of generator functions are recorded too, with the decisions
each made, so that a recursive generator's outer call can be replayed along
a nested one (hoisting, see replay.py).

The same recorder runs during trace-aligned re-execution, with an aligner
deciding the values, so every re-execution yields a complete trace of its own.
"""

from __future__ import annotations

import contextlib
import difflib
import dis
import inspect
import io
import linecache
import os
import random
import sys
import sysconfig
import time
from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from types import CodeType, FrameType
from typing import Any, Protocol

# Frame = (file, function, first line of the function, bytecode offset of the call)
Frame = tuple[str, str, int, int]
# Site = (API name, frames from the entry function down to the call): Prog(O)
Site = tuple[str, tuple[Frame, ...]]

ROOT = -1  # the region id of "not inside any region"

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
COUNT_APIS = frozenset({"randint", "randrange", "choice", "getrandbits"})

_GUARD_PASSTHROUGH = frozenset(
    {
        "LOAD_CONST",
        "LOAD_FAST",
        "LOAD_DEREF",
        "LOAD_GLOBAL",
        "LOAD_NAME",
        "LOAD_ATTR",
        "COMPARE_OP",
        "IS_OP",
        "CONTAINS_OP",
        "UNARY_NOT",
        "BINARY_OP",
        "COPY",
        "SWAP",
        "NOP",
        "EXTENDED_ARG",
        "TO_BOOL",
        "CACHE",
    }
)
_GENERATOR_FLAGS = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR


class GeneratorFailed(Exception):
    """The generator itself failed (raised, returned something unusable): a one-line reason."""


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

    def randrange(self, start: int, stop: int | None = None, step: int = 1) -> int:  # type: ignore[override]
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

    def choice(self, seq: Sequence[Any]) -> Any:
        if not len(seq):
            raise IndexError("Cannot choose from an empty sequence")
        return self._decide(
            "choice",
            lambda: seq[self._real(random.Random._randbelow, len(seq))],  # type: ignore[attr-defined]
            lambda value: _pick_of(seq, value),
            lambda pick: find_pick(seq, pick),
            lambda: _sequence_domain(seq),
        )

    def choices(
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

    def expovariate(self, lambd: float) -> float:  # type: ignore[override]
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


# -- the trace -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Decision:
    """One random decision: Prog(O) is `site`, Dec(O) is `api` and `value`."""

    site: Site
    line: int  # where in the generator, for people
    value: Any  # portable: a number, bytes, a Pick, a tuple of Picks or a permutation
    region: int  # innermost region it was made in (ROOT when none)
    domain: Domain | None

    @property
    def api(self) -> str:
        return self.site[0]


@dataclass(slots=True)
class Region:
    """A loop, one of its iterations, or the block a guard let run.

    `init` is the decision that started it: the trip count of a loop (None
    when the count was not recognisably a decision, so its iterations cannot
    be removed) or the guard of a block.
    """

    id: int
    kind: str  # "loop", "iteration", "block"
    parent: int
    first: int  # decisions made before it opened
    last: int = -1  # decisions made before it closed
    init: int | None = None
    ordinal: int = 0  # iterations: 1, 2, ...
    where: tuple[str, int] = ("", 0)  # file and line, for people
    call: int = ROOT  # the call whose frame opened it


@dataclass(slots=True)
class Call:
    """One call of a generator function, and the decisions made while it ran.

    A recursive generator builds nested parts by nested calls of one function
    (an expression inside an expression, a statement inside a block); running
    an outer call along the decisions of a nested call of the same function
    replaces the outer part by the nested one, the way Perses hoists a node.
    """

    id: int
    parent: int  # the nearest traced call it was made from (ROOT for the entry function)
    code: tuple[str, str, int]  # file, function, first line: what makes calls comparable
    depth: int  # its frame's position in the frames of a decision's site
    region: int  # innermost region open when it started
    first: int  # decisions made before it started
    last: int = -1  # decisions made before it returned
    suspends: bool = False  # a generator function: its decisions need not be contiguous


@dataclass
class Trace:
    """One execution: its decisions, its regions and the input it generated."""

    decisions: list[Decision]
    regions: list[Region]
    output: bytes
    guards: dict[int, bool] = field(default_factory=dict)  # guard decision -> block ran
    seconds: float = 0.0
    calls: list[Call] = field(default_factory=list)

    def counts(self) -> dict[int, int]:
        """Loop-count decision -> its loop region."""
        found = self.__dict__.get("_counts")
        if found is None:
            found = {r.init: r.id for r in self.regions if r.kind == "loop" and r.init is not None}
            self.__dict__["_counts"] = found
        return found

    def blocks(self) -> dict[int, int]:
        """Guard decision -> the block region it let run."""
        found = self.__dict__.get("_blocks")
        if found is None:
            found = {r.init: r.id for r in self.regions if r.kind == "block" and r.init is not None}
            self.__dict__["_blocks"] = found
        return found

    def ancestors(self, region: int) -> Iterator[int]:
        """`region` and the regions around it, innermost first."""
        while region != ROOT:
            yield region
            region = self.regions[region].parent

    def path(self, region: int) -> tuple[int, ...]:
        """Iteration numbers of the loops around `region`, outermost first: its execution index."""
        ordinals = [
            self.regions[r].ordinal
            for r in self.ancestors(region)
            if self.regions[r].kind == "iteration"
        ]
        return tuple(reversed(ordinals))


# -- structure recognition -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Guard:
    jump: int  # offset of the conditional jump
    low: int  # block: the offsets the guarded code occupies
    high: int


class _CodeInfo:
    """What the bytecode of one function says about loops and guards, computed once."""

    __slots__ = ("_containing", "guards", "loops", "ranged", "starts", "yields")

    def __init__(self, code: CodeType) -> None:
        instructions = list(dis.get_instructions(code))
        self.starts = [instruction.offset for instruction in instructions]
        self.loops: list[tuple[int, int]] = []
        self.ranged: dict[int, bool] = {}  # loop start -> iterates a range(...)
        for index, instruction in enumerate(instructions):
            if instruction.opname == "FOR_ITER" and isinstance(instruction.argval, int):
                # A long loop's FOR_ITER carries EXTENDED_ARG prefixes, and the back jump
                # lands on the first of them: that is where an iteration ends.
                start = index
                while start > 0 and instructions[start - 1].opname == "EXTENDED_ARG":
                    start -= 1
                offset = instructions[start].offset
                self.loops.append((offset, instruction.argval))
                if code.co_name in _COMPREHENSIONS:
                    lines = {line for _, _, line in code.co_lines() if line is not None}
                else:
                    header = [instruction]
                    if start > 0 and instructions[start - 1].opname == "GET_ITER":
                        header.append(instructions[start - 1])
                    lines = {i.positions.lineno for i in header if i.positions is not None}
                self.ranged[offset] = _iterates_range(code.co_filename, lines)
        self.loops.sort()
        self.yields = frozenset(i.offset for i in instructions if i.opname == "YIELD_VALUE")
        self.guards: dict[int, _Guard] = {}
        for index, instruction in enumerate(instructions):
            if instruction.opname != "CALL":
                continue
            for follower_index in range(index + 1, min(index + 12, len(instructions))):
                follower = instructions[follower_index]
                if follower.opname in _GUARD_PASSTHROUGH:
                    continue
                if (
                    follower.opname.startswith("POP_JUMP")
                    and "IF" in follower.opname
                    and isinstance(follower.argval, int)
                ):
                    target = follower.argval
                    if target > follower.offset:
                        after = instructions[follower_index + 1].offset
                        self.guards[instruction.offset] = _Guard(follower.offset, after, target)
                    else:
                        self.guards[instruction.offset] = _Guard(
                            follower.offset, target, follower.offset
                        )
                break
        self._containing: dict[int, tuple[tuple[int, int], ...]] = {}

    def instruction_at(self, lasti: int) -> int:
        """The instruction an `f_lasti` falls in (a call leaves it on the CALL's inline cache)."""
        return self.starts[max(0, bisect_right(self.starts, lasti) - 1)]

    def loops_containing(self, offset: int) -> tuple[tuple[int, int], ...]:
        found = self._containing.get(offset)
        if found is None:
            found = tuple(loop for loop in self.loops if loop[0] < offset < loop[1])
            self._containing[offset] = found
        return found


def _iterates_range(filename: str, lines: set[int | None]) -> bool:
    """Whether a loop header reads `for ... in range(...)`: the paper's loop pattern.

    A loop over data whose length happens to equal an earlier decision would
    otherwise pass for a counted loop. Without source to look at, assume it.
    """
    texts = [linecache.getline(filename, line) for line in lines if line]
    if not any(texts):
        return True
    return any("range(" in text for text in texts)


_INFO: dict[CodeType, _CodeInfo | None] = {}
_COMPREHENSIONS = frozenset({"<genexpr>", "<listcomp>", "<setcomp>", "<dictcomp>"})
_INTERNAL_FILES = frozenset({os.path.abspath(__file__), os.path.abspath(random.__file__ or "")})
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_PATHS = sysconfig.get_paths()
_LIBRARY = tuple(
    {os.path.abspath(_PATHS[key]) + os.sep for key in ("stdlib", "platstdlib") if key in _PATHS}
)
_SITE = tuple(
    {os.path.abspath(_PATHS[key]) + os.sep for key in ("purelib", "platlib") if key in _PATHS}
)


def _traced(code: CodeType) -> bool:
    """Generator code is traced; the standard library and gitreduce itself are not."""
    filename = code.co_filename
    if filename.startswith("<frozen"):
        return False
    path = os.path.abspath(filename)
    if path.startswith(_PACKAGE_DIR) or path in _INTERNAL_FILES:
        return False
    return not (path.startswith(_LIBRARY) and not path.startswith(_SITE))


_INTERNAL_CODE: dict[CodeType, bool] = {}


def _internal(code: CodeType) -> bool:
    """Frames of `random` and of this module: between the generator and a decision, never part
    of its site."""
    try:
        return _INTERNAL_CODE[code]
    except KeyError:
        found = os.path.abspath(code.co_filename) in _INTERNAL_FILES
        _INTERNAL_CODE[code] = found
        return found


def _info(code: CodeType) -> _CodeInfo | None:
    try:
        return _INFO[code]
    except KeyError:
        info = _CodeInfo(code) if _traced(code) else None
        _INFO[code] = info
        return info


class _Open:
    """A region currently open in one frame."""

    __slots__ = ("chain", "count", "frame", "high", "iteration", "kind", "low", "region")

    def __init__(
        self, kind: str, region: int, low: int, high: int, frame: int, chain: frozenset[int]
    ) -> None:
        self.kind = kind
        self.region = region
        self.low = low
        self.high = high
        self.frame = frame  # id of the frame it is open in
        self.chain = chain  # ids of that frame and its callers, to find a loop's count
        self.iteration: int | None = None
        self.count = 0

    def innermost(self) -> int:
        return self.iteration if self.iteration is not None else self.region


class _FrameState:
    __slots__ = ("call", "frame", "info", "last", "open", "pending")

    def __init__(self, frame: FrameType, info: _CodeInfo, call: int) -> None:
        self.frame = frame  # held so that its id stays unique while we track it
        self.info = info
        self.call = call
        self.open: list[_Open] = []
        self.pending: tuple[int, int, _Guard] | None = None  # (decision, call offset, guard)
        self.last = -1


class Aligning(Protocol):
    """Trace-aligned re-execution's side of a decision (replay.Aligner)."""

    def choose(
        self,
        site: Site,
        path: tuple[int, ...],
        draw: Callable[[], Any],
        force: Callable[[Any], Any],
        domain: Domain | None,
    ) -> Any: ...

    def guard_resolved(self, decision: int, taken: bool) -> None: ...


class Recorder:
    """Records one execution: decisions with their sites, and the regions they fall in."""

    def __init__(self, harness: CodeType, aligner: Aligning | None = None) -> None:
        self.decisions: list[Decision] = []
        self.regions: list[Region] = []
        self.guards: dict[int, bool] = {}
        self.calls: list[Call] = []
        self.aligner = aligner
        self._harness = harness
        self._states: dict[int, _FrameState] = {}
        self._direct: dict[int, list[int]] = {}
        self._chains: list[tuple[int, frozenset[int]]] = []  # (caller id, ids on its stack)
        self._claimed: set[int] = set()
        self._sites: dict[Site, Site] = {}

    # -- the decision hook ---------------------------------------------------------

    def decide(
        self,
        api: str,
        draw: Callable[[], Any],
        encode: Callable[[Any], Any],
        force: Callable[[Any], Any],
        domain: Domain | None,
    ) -> Any:
        frames = self._stack()
        for frame in reversed(frames):  # callers first: a caller may have a guard pending
            state = self._state(frame)
            if state is not None:
                x = state.info.instruction_at(frame.f_lasti)
                if x != state.last:
                    self._observe(state, x)
        caller = frames[0] if frames else None
        site = self._site(api, frames)
        region = self._innermost(frames)
        if self.aligner is not None:
            value = self.aligner.choose(site, self._path(region), draw, force, domain)
        else:
            value = draw()
        index = len(self.decisions)
        line = caller.f_lineno if caller is not None else 0
        self.decisions.append(Decision(site, line or 0, encode(value), region, domain))
        self._direct.setdefault(region, []).append(index)
        self._chains.append(
            (id(caller) if caller is not None else 0, frozenset(id(frame) for frame in frames))
        )
        if caller is not None:
            state = self._states.get(id(caller))
            if state is not None and state.frame is caller:
                call = state.info.instruction_at(caller.f_lasti)
                guard = state.info.guards.get(call)
                if guard is not None:
                    state.pending = (index, call, guard)
                    caller.f_trace_opcodes = True  # the next opcode tells which way it went
        return value

    def _stack(self) -> list[FrameType]:
        """Frames from the decision's caller up to (not including) the harness, innermost first."""
        frames: list[FrameType] = []
        frame: FrameType | None = sys._getframe(2)
        while frame is not None and frame.f_code is not self._harness:
            if not _internal(frame.f_code):
                frames.append(frame)
            frame = frame.f_back
        return frames

    def _site(self, api: str, frames: list[FrameType]) -> Site:
        key = (
            api,
            tuple(
                (f.f_code.co_filename, f.f_code.co_name, f.f_code.co_firstlineno, _call_offset(f))
                for f in reversed(frames)
            ),
        )
        return self._sites.setdefault(key, key)

    def _innermost(self, frames: list[FrameType]) -> int:
        for frame in frames:
            state = self._states.get(id(frame))
            if state is not None and state.frame is frame and state.open:
                return state.open[-1].innermost()
        return ROOT

    def _path(self, region: int) -> tuple[int, ...]:
        ordinals = []
        while region != ROOT:
            found = self.regions[region]
            if found.kind == "iteration":
                ordinals.append(found.ordinal)
            region = found.parent
        return tuple(reversed(ordinals))

    # -- sys.settrace ------------------------------------------------------------------

    def global_trace(self, frame: FrameType, event: str, arg: Any) -> Any:
        caller = frame.f_back
        if caller is not None:
            state = self._states.get(id(caller))
            if state is not None and state.frame is caller:
                x = state.info.instruction_at(caller.f_lasti)
                if x != state.last:
                    self._observe(state, x)
        info = _info(frame.f_code)
        if info is None:
            return None
        if caller is not None and caller.f_code is not self._harness and _internal(caller.f_code):
            return None  # code the recorder itself runs, like a Pick's __init__
        state = self._states.get(id(frame))
        if state is None or state.frame is not frame:
            state = _FrameState(frame, info, self._new_call(frame))
            self._states[id(frame)] = state
        self._observe(state, frame.f_lasti if frame.f_lasti >= 0 else 0)
        return self.local_trace

    def _new_call(self, frame: FrameType) -> int:
        """Record a call starting; its depth and parent come from the nearest traced caller,
        so deep recursion does not cost a walk down the whole stack per call."""
        parent = region = ROOT
        depth = 0
        caller = frame.f_back
        while caller is not None and caller.f_code is not self._harness:
            if not _internal(caller.f_code):
                depth += 1
            state = self._state(caller)
            if state is not None:
                parent = state.call
                depth += self.calls[state.call].depth
                region = state.open[-1].innermost() if state.open else self._parent(state)
                break
            caller = caller.f_back
        code = frame.f_code
        call = len(self.calls)
        self.calls.append(
            Call(
                call,
                parent,
                (code.co_filename, code.co_name, code.co_firstlineno),
                depth,
                region,
                len(self.decisions),
                suspends=bool(code.co_flags & _GENERATOR_FLAGS),
            )
        )
        return call

    def local_trace(self, frame: FrameType, event: str, arg: Any) -> Any:
        state = self._states.get(id(frame))
        if state is None or state.frame is not frame:
            return self.local_trace
        if event == "line" or event == "opcode":
            self._observe(state, frame.f_lasti)
            if event == "opcode" and state.pending is None:
                frame.f_trace_opcodes = False
        elif event == "return":
            x = frame.f_lasti
            if x in state.info.yields and frame.f_code.co_flags & _GENERATOR_FLAGS:
                self._observe(state, x)  # suspended, not finished: its loops stay open
            else:
                self._finish(state, x)
        return self.local_trace

    def close(self) -> None:
        """Close what is still open (frames abandoned mid-way), so every region has an end."""
        for state in list(self._states.values()):
            self._finish(state, -1)
        self._states.clear()

    # -- regions -----------------------------------------------------------------------

    def _state(self, frame: FrameType) -> _FrameState | None:
        state = self._states.get(id(frame))
        if state is not None and state.frame is frame:
            return state
        return None

    def _observe(self, state: _FrameState, x: int) -> None:
        state.last = x
        pending = state.pending
        if pending is not None and pending[1] <= x <= pending[2].jump:
            return  # still evaluating the guard's condition: no control flow yet
        opened = state.open
        while opened:
            top = opened[-1]
            if top.kind == "loop":
                if top.low <= x < top.high:
                    if x == top.low and top.iteration is not None:
                        self._end_iteration(top)
                    break
                self._close_loop(top)
            else:
                if top.low <= x < top.high:
                    break
                self.regions[top.region].last = len(self.decisions)
            opened.pop()
        if pending is not None:
            decision, _call, guard = pending
            state.pending = None
            taken = guard.low <= x < guard.high
            self.guards[decision] = taken
            if taken:
                region = self._new_region("block", self._parent(state), state, decision)
                opened.append(
                    _Open("block", region, guard.low, guard.high, id(state.frame), frozenset())
                )
            if self.aligner is not None:
                self.aligner.guard_resolved(decision, taken)
        for low, high in state.info.loops_containing(x):
            loop = next((o for o in opened if o.kind == "loop" and o.low == low), None)
            if loop is None:
                if opened and low < opened[-1].low:
                    continue  # would enclose a region opened before it: not a nesting we saw
                region = self._new_region("loop", self._parent(state), state, None)
                chain = self._chain(state.frame) if state.info.ranged.get(low) else frozenset()
                loop = _Open("loop", region, low, high, id(state.frame), chain)
                opened.append(loop)
            if loop.iteration is None:
                loop.count += 1
                loop.iteration = self._new_region("iteration", loop.region, state, None)
                self.regions[loop.iteration].ordinal = loop.count

    def _finish(self, state: _FrameState, x: int) -> None:
        if state.pending is not None:
            decision, _call, guard = state.pending
            state.pending = None
            taken = guard.low <= x < guard.high
            self.guards[decision] = taken
            if taken:  # `if coin: return ...`: the block ran, and ends right here
                region = self._new_region("block", self._parent(state), state, decision)
                self.regions[region].last = len(self.decisions)
            if self.aligner is not None:
                self.aligner.guard_resolved(decision, taken)
        while state.open:
            top = state.open.pop()
            if top.kind == "loop":
                self._close_loop(top)
            else:
                self.regions[top.region].last = len(self.decisions)
        self.calls[state.call].last = len(self.decisions)
        self._states.pop(id(state.frame), None)

    def _parent(self, state: _FrameState) -> int:
        if state.open:
            return state.open[-1].innermost()
        frame = state.frame.f_back
        while frame is not None and frame.f_code is not self._harness:
            outer = self._states.get(id(frame))
            if outer is not None and outer.frame is frame and outer.open:
                return outer.open[-1].innermost()
            frame = frame.f_back
        return ROOT

    def _chain(self, frame: FrameType) -> frozenset[int]:
        ids = []
        current: FrameType | None = frame
        while current is not None and current.f_code is not self._harness:
            ids.append(id(current))
            current = current.f_back
        return frozenset(ids)

    def _new_region(self, kind: str, parent: int, state: _FrameState, init: int | None) -> int:
        region = len(self.regions)
        frame = state.frame
        self.regions.append(
            Region(
                region,
                kind,
                parent,
                len(self.decisions),
                init=init,
                where=(frame.f_code.co_filename, frame.f_lineno or 0),
                call=state.call,
            )
        )
        return region

    def _end_iteration(self, loop: _Open) -> None:
        if loop.iteration is not None:
            self.regions[loop.iteration].last = len(self.decisions)
            loop.iteration = None

    def _close_loop(self, loop: _Open) -> None:
        self._end_iteration(loop)
        region = self.regions[loop.region]
        region.last = len(self.decisions)
        if loop.count and loop.chain:  # an empty chain: not a range loop, never counted
            region.init = self._find_count(region, loop)

    def _find_count(self, region: Region, loop: _Open) -> int | None:
        """The decision that set the trip count: the nearest earlier one in the same region,
        made in this frame or a caller (or in a call this frame made), whose value is the
        number of iterations that ran. A loop over anything else stays unlinked."""
        candidates = self._direct.get(region.parent, [])
        looked = 0
        for index in reversed(candidates):
            if index >= region.first:
                continue
            looked += 1
            if looked > 64:
                break
            if index in self._claimed:
                continue
            decision = self.decisions[index]
            if (
                decision.api not in COUNT_APIS
                or plain_int(decision.api, decision.value) != loop.count
            ):
                continue
            caller, chain = self._chains[index]
            if loop.frame not in chain and caller not in loop.chain:
                continue  # made neither in the loop's frame, a call from it, nor a caller of it
            self._claimed.add(index)
            return index
        return None


def _call_offset(frame: FrameType) -> int:
    info = _INFO.get(frame.f_code)
    if info is None:
        return frame.f_lasti
    return info.instruction_at(frame.f_lasti)


# -- running the entry function ----------------------------------------------------------

EntryFactory = Callable[[], Callable[..., Any]]


def execute(factory: EntryFactory, seed: int, aligner: Aligning | None = None) -> Trace:
    """Run the entry function once under instrumentation and return its trace.

    `factory` produces the entry function; it is called inside the
    instrumentation so that a generator loaded afresh for this run binds
    `from random import choice` to this run's recorder. Raises
    `GeneratorFailed` with a one-line reason when the generator does.
    """
    rng = RecordingRandom(seed)
    recorder = Recorder(_run.__code__, aligner)
    rng._hook = recorder
    started = time.monotonic()
    buffer = io.BytesIO()
    stdout = io.TextIOWrapper(buffer, encoding="utf-8", errors="surrogateescape", newline="")
    previous_trace = sys.gettrace()
    try:
        with _patched_module(rng), contextlib.redirect_stdout(stdout):
            sys.settrace(recorder.global_trace)
            try:
                result = _run(factory, rng, seed)
            finally:
                sys.settrace(previous_trace)
                recorder.close()
    except GeneratorFailed:
        raise
    except SystemExit as stop:
        if stop.code not in (None, 0):
            raise GeneratorFailed(f"the generator exited with status {stop.code}") from None
        result = None
    except Exception as error:
        raise GeneratorFailed(describe_exception(error)) from None
    stdout.flush()
    output = _as_bytes(result, buffer.getvalue())
    return Trace(
        recorder.decisions,
        recorder.regions,
        output,
        recorder.guards,
        time.monotonic() - started,
        recorder.calls,
    )


def _run(factory: EntryFactory, rng: RecordingRandom, seed: int) -> Any:
    """The harness frame: call stacks are recorded up to here, never beyond."""
    entry = factory()
    args, kwargs = entry_arguments(entry, rng, seed)
    return entry(*args, **kwargs)


def entry_arguments(
    entry: Callable[..., Any], rng: random.Random, seed: int
) -> tuple[list[Any], dict[str, Any]]:
    """How to call the entry: a parameter named `seed` gets the seed, a first required one
    the random source; anything else required is a mistake worth a clear message."""
    try:
        signature = inspect.signature(entry)
    except (TypeError, ValueError):
        return [rng], {}
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    for parameter in signature.parameters.values():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        if parameter.name == "seed":
            kwargs["seed"] = seed
        elif (
            not args
            and not kwargs
            and parameter.default is parameter.empty
            and (parameter.kind in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD))
        ):
            args.append(rng)
        elif parameter.default is parameter.empty:
            name = getattr(entry, "__name__", "the entry function")
            raise GeneratorFailed(
                f"{name}() needs an argument for {parameter.name!r}; the entry function takes "
                "a random.Random (its first parameter), optionally `seed`, and nothing else"
            )
    return args, kwargs


def _as_bytes(result: Any, printed: bytes) -> bytes:
    if result is None:
        return printed
    if isinstance(result, bytes):
        return result
    if isinstance(result, str):
        return result.encode("utf-8", "surrogateescape")
    raise GeneratorFailed(
        f"the entry function returned a {type(result).__name__}; return str or bytes, "
        "or print the input"
    )


def describe_exception(error: BaseException) -> str:
    """`ValueError: message (gen.py:12 in expr)`: the innermost generator line, not a traceback."""
    where = ""
    tb = error.__traceback__
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if _traced(tb.tb_frame.f_code):
            where = (
                f" ({os.path.basename(filename)}:{tb.tb_lineno} in {tb.tb_frame.f_code.co_name})"
            )
        tb = tb.tb_next
    message = str(error).splitlines()[0] if str(error) else ""
    return (
        f"the generator raised {type(error).__name__}" + (f": {message}" if message else "") + where
    )


@contextlib.contextmanager
def _patched_module(rng: RecordingRandom) -> Iterator[None]:
    """Module-level `random.*` functions bound to this run's recorder for the run's duration.

    The functions are bound methods of a hidden instance, so replacing the
    instance would not reach them; the names themselves are swapped.
    """
    saved = {name: getattr(random, name) for name in MODULE_FUNCTIONS if hasattr(random, name)}
    try:
        for name in saved:
            setattr(random, name, getattr(rng, name))
        yield
    finally:
        for name, function in saved.items():
            setattr(random, name, function)
