"""Reduced traces: the edits a trace allows, and the plan a re-execution follows.

A reduced trace T† is the recorded trace T with some iterations and blocks
labelled "removed". Its plan is the decisions T† keeps, each with where it
must be made (same Prog(O): API and call stack; same execution index:
iteration numbers, renumbered after removals) and the value it must return
(Dec(O') = Dec(O)), except that a loop's count becomes the number of kept
iterations and a removed block's guard gets a value that skips it.

Two more edits go beyond the paper: a hoisted call (the decisions of an
outer call replaced by those of a nested call of the same function, their
call stacks and iteration numbers shortened to match) and a simplified
decision (its value replaced by the simplest its call allows).

What a trace offers (`removable`, `hoists`, `simplifiable`) is what the
search (search.py) works on; following a plan is replay.py's job.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from gitreduce.generator.random_source import Domain, Pick, plain_int
from gitreduce.generator.trace import ROOT, Frame, Site, Trace


@dataclass(frozen=True, slots=True)
class Hoist:
    """Run call `outer` along the decisions of `inner`, a nested call of the same function.

    Removing iterations and blocks cannot shrink `(a | (b ? c : d))` to `c`:
    with the guard of the compound expression off, the leaf that takes its
    place is decided afresh. Hoisting replays the outer call with the nested
    call's decisions, so the outer part becomes the nested one (Perses's
    replacement of a node by a compatible descendant, on the generator's
    call tree): the generator still builds the part, so it stays valid.
    """

    outer: int
    inner: int


@dataclass(frozen=True, slots=True)
class Simplify:
    """Give decision `decision` the simplest value its call allows: the first element of a
    choice, the number nearest 0. A selection made by value (`kind = choice(KINDS)`) is no
    guard, yet its first alternative is often the smallest."""

    decision: int


# A reduced trace is the base trace with edits: region ids (ints) labelled removed,
# hoisted calls and simplified decisions.
Unit = int | Hoist | Simplify
Edits = frozenset[Unit]
CallSite = tuple[str, Frame | None]  # API and innermost frame: the same call in the code


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
    """The decisions a re-execution must follow, and per guarding call in the code a value
    that turns its guard off (for decisions re-align finds no counterpart for)."""

    expected: tuple[Expected, ...]
    skips: dict[CallSite, Any] = field(default_factory=dict)


def call_site(site: Site) -> CallSite:
    """The call in the code a decision was made at, whatever the calls around it."""
    return (site[0], site[1][-1] if site[1] else None)


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


def hoists(trace: Trace) -> list[Hoist]:
    """Every call paired with each nearest nested call of the same function, the pairs that
    drop the most decisions first.

    Generator functions (which suspend) are left out: their decisions need not
    be contiguous. A pair whose calls make the same decisions would change nothing.
    """
    calls = trace.calls
    found: list[Hoist] = []
    for call in calls:
        if call.suspends:
            continue
        outer = call.parent
        while outer != ROOT and calls[outer].code != call.code:
            outer = calls[outer].parent
        if outer == ROOT or calls[outer].suspends:
            continue
        if calls[outer].last - calls[outer].first > call.last - call.first:
            found.append(Hoist(outer, call.id))

    def dropped(hoist: Hoist) -> tuple[int, int, int]:
        outer, inner = calls[hoist.outer], calls[hoist.inner]
        return (-(outer.last - outer.first - inner.last + inner.first), outer.first, inner.first)

    return sorted(found, key=dropped)


def simplifiable(trace: Trace) -> list[Simplify]:
    """Decisions that are neither a loop count nor a guard and whose value is not yet the
    simplest, in trace order."""
    counts = trace.counts()
    return [
        Simplify(index)
        for index, decision in enumerate(trace.decisions)
        if index not in counts
        and index not in trace.guards
        and simplest(decision.api, decision.value, decision.domain) is not None
    ]


def simplest(api: str, value: Any, domain: Domain | None) -> Any:
    """The simplest value the call that made `value` allows (its portable form): the first
    element of a choice, else the number nearest 0. None when `value` is it already, or
    when the call has no simplest value (shuffles, samples, bytes, unbounded floats)."""
    if domain is None:
        return None
    if api == "choice" and isinstance(value, Pick):
        if domain.kind == "values" and domain.values:
            first = domain.values[0]
            if value.plain and type(value.value) is type(first) and value.value == first:
                return None
            return Pick(-1, first, plain=True)
        if domain.kind == "int":
            low = _nearest_zero(domain.low, domain.high)
            return None if value.plain and value.value == low else Pick(-1, low, plain=True)
        if domain.kind == "size" and value.index != 0:
            return Pick(0)
        return None
    if api in ("randint", "randrange", "getrandbits") and domain.kind == "int":
        low = _nearest_zero(domain.low, domain.high)
        return None if value == low else low
    if api in ("random", "uniform", "triangular") and domain.kind == "float":
        low = float(_nearest_zero(domain.low, domain.high))
        return None if value == low else low
    return None


def _nearest_zero(low: Any, high: Any) -> Any:
    return low if low > 0 else high if high < 0 else type(low)(0)


@dataclass
class _Labels:
    """Which regions and decisions of a trace a set of edits keeps.

    A region is gone when it or a region around it is removed, or when a hoist
    drops the part of the outer call it belongs to. The regions of the outer
    call that lead to the inner call are elided: they stay, transparently, so
    that what the inner call opened keeps its place.
    """

    gone: list[bool]
    elided: list[bool]
    hoisted: list[Hoist]  # in force, the deepest outer call first


def _labels(trace: Trace, edits: Edits) -> _Labels:
    calls = trace.calls
    hoisted = sorted(
        (unit for unit in edits if isinstance(unit, Hoist)),
        key=lambda hoist: -calls[hoist.outer].depth,
    )
    chains = [set(trace.ancestors(calls[hoist.inner].region)) for hoist in hoisted]
    gone = [False] * len(trace.regions)
    elided = [False] * len(trace.regions)
    for region in trace.regions:  # a parent always has a smaller id than its children
        if region.parent != ROOT and gone[region.parent]:
            gone[region.id] = True
            continue
        for hoist, chain in zip(hoisted, chains, strict=True):
            if _dropped_call(trace, hoist, region.call):
                if region.id in chain:
                    elided[region.id] = True
                else:
                    gone[region.id] = True
                break
        else:
            gone[region.id] = region.id in edits
    return _Labels(gone, elided, hoisted)


def _within(trace: Trace, call: int, outer: int) -> bool:
    """Whether `call` is `outer` or was made, directly or not, while `outer` ran."""
    while call != ROOT and call >= outer:
        if call == outer:
            return True
        call = trace.calls[call].parent
    return False


def _dropped_call(trace: Trace, hoist: Hoist, call: int) -> bool:
    return _within(trace, call, hoist.outer) and not _within(trace, call, hoist.inner)


def _dropped_decision(trace: Trace, hoist: Hoist, index: int) -> bool:
    outer, inner = trace.calls[hoist.outer], trace.calls[hoist.inner]
    return outer.first <= index < outer.last and not inner.first <= index < inner.last


def canonical(trace: Trace, removed: Edits) -> Edits:
    """`removed` without regions that a removed region already contains: equal plans, equal keys."""
    return frozenset(
        unit
        for unit in removed
        if not isinstance(unit, int)
        or not any(ancestor in removed for ancestor in trace.ancestors(trace.regions[unit].parent))
    )


def _kept_counts(trace: Trace, labels: _Labels) -> dict[int, int]:
    """Per loop, the iterations a labelling keeps."""
    kept: dict[int, int] = {}
    for region in trace.regions:
        if region.kind == "iteration" and not (labels.gone[region.id] or labels.elided[region.id]):
            kept[region.parent] = kept.get(region.parent, 0) + 1
    return kept


def _count_stays(labels: _Labels, loop: int) -> bool:
    """Whether a loop's count decision keeps its recorded value: its iterations are not
    counted when the loop is gone, or elided by a hoist (the count, made outside the
    dropped part, is then the caller's business)."""
    return labels.gone[loop] or labels.elided[loop]


def feasible(trace: Trace, removed: Edits) -> bool:
    """Whether every loop keeps a count its call could have returned: the cheap part of
    `derive`, for rejecting a candidate without running the generator."""
    labels = _labels(trace, removed)
    kept = _kept_counts(trace, labels)
    for index, loop in trace.counts().items():
        decision = trace.decisions[index]
        if _count_stays(labels, loop) or (decision.region != ROOT and labels.gone[decision.region]):
            continue
        count = kept.get(loop, 0)
        if count != plain_int(decision.api, decision.value) and not _allows(decision.domain, count):
            return False
    return True


def derive(trace: Trace, removed: Edits) -> Plan | None:
    """The kept decisions of `trace` with `removed` applied, or None when the edits cannot
    be aligned at all (a count below what its call allows)."""
    regions = trace.regions
    labels = _labels(trace, removed)
    gone, elided = labels.gone, labels.elided
    units = set(removable(trace))
    kept = _kept_counts(trace, labels)
    ordinal: dict[int, int] = {}
    paths: list[tuple[int, ...]] = []
    unit_of: list[int | None] = []
    for node in regions:
        parent_path = paths[node.parent] if node.parent != ROOT else ()
        parent_unit = unit_of[node.parent] if node.parent != ROOT else None
        if node.kind == "iteration" and not gone[node.id] and not elided[node.id]:
            ordinal[node.parent] = ordinal.get(node.parent, 0) + 1
            paths.append((*parent_path, ordinal[node.parent]))
        else:
            paths.append(parent_path)
        own = node.id in units and not elided[node.id]
        unit_of.append(node.id if own else parent_unit)
    counts = trace.counts()
    blocks = trace.blocks()
    offs = off_values(trace)
    simplified = {unit.decision for unit in removed if isinstance(unit, Simplify)}
    calls = trace.calls
    expected: list[Expected] = []
    for index, decision in enumerate(trace.decisions):
        region = decision.region
        if region != ROOT and gone[region]:
            continue
        if any(_dropped_decision(trace, hoist, index) for hoist in labels.hoisted):
            continue
        value = decision.value
        taken = trace.guards.get(index)
        loop = counts.get(index)
        if loop is not None and not _count_stays(labels, loop):
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
        if index in simplified and loop is None and taken is None:
            value = simplest(decision.api, value, decision.domain)
            if value is None:
                value = decision.value
        site = decision.site
        for hoist in labels.hoisted:
            outer, inner = calls[hoist.outer], calls[hoist.inner]
            if inner.first <= index < inner.last:
                site = (site[0], site[1][: outer.depth] + site[1][inner.depth :])
        expected.append(
            Expected(
                site,
                paths[region] if region != ROOT else (),
                value,
                taken,
                unit_of[region] if region != ROOT else None,
            )
        )
    return Plan(tuple(expected), _skips(trace))


def _skips(trace: Trace) -> dict[CallSite, Any]:
    """Per call in the code that guards a block somewhere in the trace, a value that skipped
    the block there (or would have)."""
    skips: dict[CallSite, Any] = {}
    offs = off_values(trace)
    for index, taken in trace.guards.items():
        key = call_site(trace.decisions[index].site)
        if not taken:
            skips[key] = trace.decisions[index].value
        elif key not in skips and index in offs:
            skips[key] = offs[index]
    return skips


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
