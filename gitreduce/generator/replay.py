"""Trace-aligned re-execution: run the generator again, forcing the decisions a reduced trace keeps.

A reduced trace T† is the recorded trace T with some iterations and blocks
labelled "removed". Re-executing aligns each decision the generator asks for
with the next kept decision of T† (same Prog(O): API and call stack; same
execution index: iteration numbers, renumbered after removals) and returns
that decision's value (Dec(O') = Dec(O)), except that a loop's count becomes
the number of kept iterations and a removed block's guard gets a value that
skips it.

Alignment can be infeasible: the generator goes down another path (the
paper's Case 1) or the recorded value is no longer possible (Case 2, a choice
among variables one of which was removed). The three strategies differ there:

- halt: give up; this reduced trace yields nothing;
- bypass: also remove the innermost iteration or block around the decision
  that could not be aligned, and start over (it only ever removes more, so it
  ends);
- re-align (default): take an arbitrary feasible value for the misaligned
  decision (the nearest one for numbers, the same position for a choice) and
  align later decisions with the first kept decision of the same Prog and
  execution index, skipping what lies between.

This module also holds the worker loop that runs generators in a subprocess
for the session, because that process only ever records and replays.
"""

from __future__ import annotations

import contextlib
import importlib.util
import math
import os
import pickle
import struct
import sys
import types
from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import IO, Any

from gitreduce.generator.trace import (
    ROOT,
    Domain,
    GeneratorFailed,
    Infeasible,
    Pick,
    Site,
    Trace,
    describe_exception,
    execute,
    plain_int,
)


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


@dataclass(frozen=True, slots=True)
class Expected:
    """One kept decision of a reduced trace: where it must happen and what it must return."""

    site: Site
    path: tuple[int, ...]
    value: Any
    taken: bool | None  # for guards: whether the block must run
    unit: int | None  # innermost removable region still around it (for bypass)


@dataclass(frozen=True)
class Plan:
    expected: tuple[Expected, ...]


# -- reduced traces ---------------------------------------------------------------------


def removable(trace: Trace) -> list[int]:
    """The regions a reduction may label removed, in trace order: iterations of loops whose
    count is a decision, and blocks whose guard has a value that skips them."""
    cached = trace.__dict__.get("_removable")
    if cached is not None:
        return cached
    counted = {r.id for r in trace.regions if r.kind == "loop" and r.init is not None}
    offs = off_values(trace)
    units = [
        r.id
        for r in trace.regions
        if (r.kind == "iteration" and r.parent in counted)
        or (r.kind == "block" and r.init is not None and r.init in offs)
    ]
    units.sort(key=lambda unit: (trace.regions[unit].first, unit))
    trace.__dict__["_removable"] = units
    return units


def closure(trace: Trace, removed: frozenset[int]) -> list[bool]:
    """Per region: gone, because it or a region around it is removed."""
    gone = [False] * len(trace.regions)
    for region in trace.regions:  # a parent always has a smaller id than its children
        gone[region.id] = region.id in removed or (region.parent != ROOT and gone[region.parent])
    return gone


def canonical(trace: Trace, removed: frozenset[int]) -> frozenset[int]:
    """`removed` without regions that a removed region already contains: equal plans, equal keys."""
    return frozenset(
        unit
        for unit in removed
        if not any(ancestor in removed for ancestor in trace.ancestors(trace.regions[unit].parent))
    )


def feasible(trace: Trace, removed: frozenset[int]) -> bool:
    """Whether every loop keeps a count its call could have returned: the cheap part of
    `derive`, for rejecting a candidate without running the generator."""
    gone = closure(trace, removed)
    kept: dict[int, int] = {}
    for region in trace.regions:
        if region.kind == "iteration" and not gone[region.id]:
            kept[region.parent] = kept.get(region.parent, 0) + 1
    for index, loop in trace.counts().items():
        decision = trace.decisions[index]
        if gone[loop] or (decision.region != ROOT and gone[decision.region]):
            continue
        count = kept.get(loop, 0)
        if count != plain_int(decision.api, decision.value) and not _allows(decision.domain, count):
            return False
    return True


def derive(trace: Trace, removed: frozenset[int]) -> Plan | None:
    """The kept decisions of `trace` with `removed` labelled, or None when the labelling
    cannot be aligned at all (a count below what its call allows)."""
    regions = trace.regions
    gone = closure(trace, removed)
    units = set(removable(trace))
    kept: dict[int, int] = {}
    ordinal: dict[int, int] = {}
    paths: list[tuple[int, ...]] = []
    unit_of: list[int | None] = []
    for region in regions:
        parent_path = paths[region.parent] if region.parent != ROOT else ()
        parent_unit = unit_of[region.parent] if region.parent != ROOT else None
        if region.kind == "iteration" and not gone[region.id]:
            kept[region.parent] = kept.get(region.parent, 0) + 1
            ordinal[region.id] = kept[region.parent]
            paths.append((*parent_path, ordinal[region.id]))
        else:
            paths.append(parent_path)
        unit_of.append(region.id if region.id in units else parent_unit)
    counts = trace.counts()
    blocks = trace.blocks()
    offs = off_values(trace)
    expected: list[Expected] = []
    for index, decision in enumerate(trace.decisions):
        region = decision.region
        if region != ROOT and gone[region]:
            continue
        value = decision.value
        taken = trace.guards.get(index)
        loop = counts.get(index)
        if loop is not None:
            count = kept.get(loop, 0)
            if count != plain_int(decision.api, value):
                if not _allows(decision.domain, count):
                    return None
                value = Pick(-1, count, plain=True) if decision.api == "choice" else count
        block = blocks.get(index)
        if block is not None and gone[block]:
            if index not in offs:
                return None
            value, taken = offs[index], False
        expected.append(
            Expected(
                decision.site,
                paths[region] if region != ROOT else (),
                value,
                taken,
                unit_of[region] if region != ROOT else None,
            )
        )
    return Plan(tuple(expected))


def _allows(domain: Domain | None, count: int) -> bool:
    if domain is None:
        return True
    if domain.kind == "int":
        return domain.low <= count <= domain.high
    if domain.kind == "values" and domain.values is not None:
        return any(type(value) is int and value == count for value in domain.values)
    return True


def off_values(trace: Trace) -> dict[int, Any]:
    """For each guard whose block ran, a value that skips the block, if one can be found.

    The best evidence is the same guard (same call site) skipping its block
    elsewhere in the trace; then the negation of a boolean; then the far end
    of the value's range (`random() < p` with a small draw is skipped by a
    large one). A wrong guess is caught during re-execution.
    """
    cached = trace.__dict__.get("_off_values")
    if cached is not None:
        return cached
    skipped: dict[tuple[str, Any], list[int]] = {}
    for index, taken in trace.guards.items():
        if not taken:
            decision = trace.decisions[index]
            key = (decision.api, decision.site[1][-1] if decision.site[1] else None)
            skipped.setdefault(key, []).append(index)
    found: dict[int, Any] = {}
    for index, taken in trace.guards.items():
        if not taken:
            continue
        decision = trace.decisions[index]
        value = _off_value(decision.api, decision.value, decision.domain)
        key = (decision.api, decision.site[1][-1] if decision.site[1] else None)
        others = skipped.get(key)
        if others:
            nearest = min(others, key=lambda other: abs(other - index))
            value = trace.decisions[nearest].value
        if value is not None:
            found[index] = value
    trace.__dict__["_off_values"] = found
    return found


def _off_value(api: str, value: Any, domain: Domain | None) -> Any:
    if type(value) is bool:
        return not value
    if isinstance(value, Pick):
        if value.plain and type(value.value) is bool:
            return Pick(-1, not value.value, plain=True)
        if domain is not None and domain.kind == "values" and domain.values is not None:
            for other in domain.values:
                if not (type(other) is type(value.value) and other == value.value):
                    return Pick(-1, other, plain=True)
        if domain is not None and domain.kind == "int" and value.plain:
            other = domain.low if value.value != domain.low else domain.high
            return Pick(-1, other, plain=True) if other != value.value else None
        return None
    if domain is None:
        return None
    if domain.kind == "int" and type(value) is int:
        other = domain.low if value != domain.low else domain.high
        return other if other != value else None
    if domain.kind == "float" and isinstance(value, float):
        middle = (domain.low + domain.high) / 2
        if value >= middle:
            return float(domain.low)
        high = float(domain.high)
        return math.nextafter(high, domain.low) if api == "random" else high
    return None


# -- aligning one execution --------------------------------------------------------------


class Aligner:
    """Hands out the values of one re-execution and notices where it stops following the plan."""

    def __init__(self, plan: Plan, alignment: Alignment) -> None:
        self.expected = plan.expected
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
            return self._misaligned(draw)
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

    def _misaligned(self, draw: Callable[[], Any]) -> Any:
        self.misaligned += 1
        if self.alignment is Alignment.HALT:
            raise Halt
        if self.alignment is Alignment.BYPASS:
            unit = self.expected[self.pointer].unit if self.pointer < len(self.expected) else None
            raise Bypass(unit)
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
    removed: frozenset[int]  # what was removed in the end (bypass may add to the request)
    misaligned: int = 0
    runs: int = 1
    failure: str | None = None


def replay(
    factory: Callable[[], Callable[..., Any]],
    base: Trace,
    removed: frozenset[int],
    alignment: Alignment,
    seed: int,
) -> Replayed:
    """Re-execute the generator along `base` with `removed` labelled, under `alignment`."""
    labels = set(removed)
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


# -- loading a generator ----------------------------------------------------------------

DEFAULT_ENTRIES = ("generate", "main", "gen")


@dataclass(frozen=True)
class TargetSpec:
    """Where the generator is: a Python file, or an importable module; and its entry function."""

    kind: str  # "file" or "module"
    location: str  # absolute path, or dotted module name
    entry: str | None = None
    cwd: str = "."


class Target:
    """A generator loaded for repeated runs: compiled once, executed afresh for every run.

    A fresh module per run means module-level state (counters, caches) starts
    over each time, so every run depends on its decisions alone; compiling once
    keeps the code objects, and with them the bytecode analysis, shared.
    """

    def __init__(self, spec: TargetSpec) -> None:
        self.spec = spec
        if spec.kind == "file":
            path = Path(spec.location)
            try:
                source = path.read_bytes()
            except OSError as error:
                raise GeneratorFailed(f"cannot read {path}: {error.strerror}") from None
            self._name = "__gitreduce_generator__"
            self._file = str(path)
            self._package: str | None = None
            self._spec = None
            directory = str(path.parent)
            if directory not in sys.path:
                sys.path.insert(0, directory)
        else:
            if spec.cwd not in sys.path:
                sys.path.insert(0, spec.cwd)
            try:
                found = importlib.util.find_spec(spec.location)
            except (ImportError, ValueError) as error:
                raise GeneratorFailed(f"cannot import {spec.location}: {error}") from None
            if found is None or found.loader is None or not hasattr(found.loader, "get_code"):
                raise GeneratorFailed(f"no module named {spec.location!r}")
            self._name = spec.location
            self._file = found.origin or spec.location
            self._package = found.parent
            self._spec = found
            source = None
        try:
            if source is not None:
                self._code = compile(source, self._file, "exec")
            else:
                self._code = found.loader.get_code(spec.location)  # type: ignore[union-attr]
        except SyntaxError as error:
            raise GeneratorFailed(
                f"{Path(self._file).name}:{error.lineno}: syntax error: {error.msg}"
            ) from None
        if self._code is None:
            raise GeneratorFailed(f"{spec.location} has no Python code to run")

    def load(self) -> Callable[..., Any]:
        """A fresh module's entry function."""
        module = types.ModuleType(self._name)
        module.__file__ = self._file
        if self._spec is not None:
            module.__spec__ = self._spec
            module.__package__ = self._package
        sys.modules[self._name] = module
        try:
            exec(self._code, module.__dict__)
        except GeneratorFailed:
            raise
        except Exception as error:
            raise GeneratorFailed(describe_exception(error)) from None
        name = self.spec.entry
        if name is None:
            name = next((n for n in DEFAULT_ENTRIES if callable(module.__dict__.get(n))), None)
            if name is None:
                raise GeneratorFailed(
                    f"{Path(self._file).name} has none of the functions "
                    f"{', '.join(DEFAULT_ENTRIES)}; name the entry function with --entry"
                )
        entry = module.__dict__.get(name)
        if not callable(entry):
            functions = sorted(
                key
                for key, value in module.__dict__.items()
                if isinstance(value, types.FunctionType) and not key.startswith("_")
            )
            raise GeneratorFailed(
                f"{Path(self._file).name} has no function {name!r}"
                + (f" (functions: {', '.join(functions[:8])})" if functions else "")
            )
        return entry


# -- the worker process -----------------------------------------------------------------

_HEADER = struct.Struct(">Q")


def send(stream: IO[bytes], message: object) -> None:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(data)) + data)
    stream.flush()


def receive(stream: IO[bytes]) -> object | None:
    header = _read_exactly(stream, _HEADER.size)
    if header is None:
        return None
    (size,) = _HEADER.unpack(header)
    data = _read_exactly(stream, size)
    return None if data is None else pickle.loads(data)


def _read_exactly(stream: IO[bytes], size: int) -> bytes | None:
    chunks, remaining = [], size
    while remaining:
        chunk = stream.read(remaining)
        if not chunk:
            return None
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def serve(read_fd: int, write_fd: int) -> None:
    """The worker loop: load a generator, then record and replay on request until EOF.

    Base traces are cached by id, so a batch of candidates over one base sends
    the base once per worker.
    """
    reader = os.fdopen(read_fd, "rb")
    writer = os.fdopen(write_fd, "wb")
    target: Target | None = None
    bases: OrderedDict[int, Trace] = OrderedDict()
    while True:
        message = receive(reader)
        if message is None:
            return
        assert isinstance(message, tuple)
        kind = message[0]
        try:
            if kind == "load":
                target = Target(message[1])
                target.load()
                reply: tuple[Any, ...] = ("ok",)
            elif kind == "record":
                assert target is not None
                reply = ("trace", execute(target.load, message[1]))
            elif kind == "replay":
                assert target is not None
                _, base_id, base, removed, alignment, seed = message
                if base is not None:
                    bases[base_id] = base
                    while len(bases) > 4:
                        bases.popitem(last=False)
                if base_id not in bases:
                    reply = ("missing",)
                else:
                    bases.move_to_end(base_id)
                    reply = (
                        "replayed",
                        replay(target.load, bases[base_id], removed, Alignment(alignment), seed),
                    )
            else:
                reply = ("error", f"unknown request {kind!r}")
        except GeneratorFailed as error:
            reply = ("failed", str(error))
        except RecursionError:
            reply = ("failed", "the generator raised RecursionError")
        except Exception as error:  # a bug on our side: report, keep serving
            reply = ("error", f"{type(error).__name__}: {error}")
        send(writer, reply)
