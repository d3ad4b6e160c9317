"""Trace instrumentation: run a generator once and record every random decision it makes.

GReduce reduces a generator's *execution* rather than its output, so the
execution has to become data first. Every call of a `random` API is one
decision (the paper's Dec(O)): what was asked (the API and enough of its
arguments to check feasibility later) and what came back. The recording
random source (random_source.py) hands each one to the recorder here, which
adds it to the trace (trace.py). Its call stack, as code objects and
bytecode offsets from the entry function down, is the decision's Prog(O):
the same call stack in another execution is "the same operation", which is
what trace alignment matches on.

While the generator runs, a `sys.settrace` hook also recognises the two
reducible patterns of the paper, because after the run the information is
gone:

- a `for` loop whose trip count was a decision (`for _ in range(rng.randint(1, 5))`,
  or `n = random.choice(range(20))` then `for i in range(n)`): a *loop*
  region with one *iteration* region per pass;
- a branch guarded by a decision (`if random.choice([False, True]):`,
  `if rng.random() < 0.3:`, also a `while` test): a *block* region for the
  code the branch ran.

Both are found from bytecode (FOR_ITER ranges, a conditional jump right
after the decision's CALL; see bytecode.py) and from the offsets the frames
are seen at, so no source annotation is needed. Regions nest as the
execution nested them; the reducer removes iterations and blocks, and the
tree of regions is the tree HDD walks. Calls of generator functions are
recorded too, with the decisions each made, so that a recursive generator's
outer call can be replayed along a nested one (hoisting, see plan.py).

The same recorder runs during trace-aligned re-execution, with an aligner
deciding the values, so every re-execution yields a complete trace of its own.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import os
import random
import sys
import time
from collections.abc import Callable, Iterator
from types import CodeType, FrameType
from typing import Any, Protocol

from gitreduce.generator import bytecode, random_source, trace
from gitreduce.generator.bytecode import CodeInfo, Guard, call_offset, code_info, traced
from gitreduce.generator.random_source import MODULE_FUNCTIONS, Domain, RecordingRandom, plain_int
from gitreduce.generator.trace import ROOT, Call, Decision, Region, Site, Trace

COUNT_APIS = frozenset({"randint", "randrange", "choice", "getrandbits"})
_GENERATOR_FLAGS = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR


class GeneratorFailed(Exception):
    """The generator itself failed (raised, returned something unusable): a one-line reason."""


# The modules between a generator's call of `random` and the recorded decision (the
# random source, this recorder, the trace model, the bytecode analysis) and `random` itself.
_INTERNAL_FILES = frozenset(
    os.path.abspath(path)
    for path in (
        random_source.__file__,
        __file__,
        trace.__file__,
        bytecode.__file__,
        random.__file__ or "",
    )
)

_INTERNAL_CODE: dict[CodeType, bool] = {}


def _internal(code: CodeType) -> bool:
    """Frames of `random` and of the modules above: between the generator and a decision,
    never part of its site."""
    try:
        return _INTERNAL_CODE[code]
    except KeyError:
        found = os.path.abspath(code.co_filename) in _INTERNAL_FILES
        _INTERNAL_CODE[code] = found
        return found


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

    def __init__(self, frame: FrameType, info: CodeInfo, call: int) -> None:
        self.frame = frame  # held so that its id stays unique while we track it
        self.info = info
        self.call = call
        self.open: list[_Open] = []
        self.pending: tuple[int, int, Guard] | None = None  # (decision, call offset, guard)
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
                (f.f_code.co_filename, f.f_code.co_name, f.f_code.co_firstlineno, call_offset(f))
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
        info = code_info(frame.f_code)
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
        if traced(tb.tb_frame.f_code):
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
