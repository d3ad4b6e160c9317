"""Reduced traces: the parts a trace offers, the plans edits give, and which are feasible."""

from __future__ import annotations

import random

from generator_support import again, record

from gitreduce.generator.plan import (
    Simplify,
    canonical,
    derive,
    feasible,
    hoists,
    off_values,
    removable,
    simplest,
    simplifiable,
)
from gitreduce.generator.random_source import Pick
from gitreduce.generator.replay import Alignment


def test_counts_below_what_the_call_allows_are_infeasible() -> None:
    def entry(rng: random.Random) -> str:
        return "".join(rng.choice("ab") for _ in range(rng.randint(2, 5)))

    seed = next(s for s in range(100) if len(entry(random.Random(s))) >= 4)
    base = record(entry, seed)
    units = removable(base)
    assert feasible(base, frozenset(units[:-2]))
    assert not feasible(base, frozenset(units[:-1]))  # one iteration left, randint(2, 5)
    assert derive(base, frozenset(units[:-1])) is None
    result = again(entry, base, set(units[:-1]), Alignment.REALIGN, seed)
    assert result.trace is None and result.failure == "infeasible count"


def test_off_values() -> None:
    def entry(rng: random.Random) -> str:
        out = ""
        for _ in range(20):
            if rng.random() < 0.3:
                out += "x"
        if rng.choice([False, True]):
            out += "!"
        if rng.randint(0, 3) == 0:
            out += "?"
        return out

    seed = next(
        s
        for s in range(200)
        if entry(random.Random(s)).endswith("!?") and "x" in entry(random.Random(s))
    )
    base = record(entry, seed)
    offs = off_values(base)
    blocks = base.blocks()
    assert set(offs) == set(blocks)
    for guard, value in offs.items():
        decision = base.decisions[guard]
        if decision.api == "random":  # evidence from the same site: a draw that skipped it
            assert value >= 0.3
        elif decision.api == "choice":
            assert value == Pick(-1, False, plain=True)
        else:
            assert value != 0
    for block in removable(base):
        result = again(entry, base, {block}, Alignment.HALT, seed)
        assert result.trace is not None and len(result.trace.output) == len(base.output) - 1


def test_canonical_drops_parts_inside_removed_parts() -> None:
    def entry(rng: random.Random) -> str:
        return "|".join(
            "".join(rng.choice("ab") for _ in range(rng.randint(1, 3)))
            for _ in range(rng.randint(2, 3))
        )

    base = record(entry, 4)
    units = removable(base)
    outer = [u for u in units if base.regions[base.regions[u].parent].parent == -1]
    inner = [u for u in units if u not in outer]
    inside = next(u for u in inner if outer[0] in base.ancestors(u))
    assert canonical(base, frozenset({outer[0], inside})) == {outer[0]}


# -- beyond removals: hoisting a nested call, simplifying a value ---------------------------


def tree(rng: random.Random) -> str:
    """Nodes with 0-2 children built in a list comprehension: a loop between two calls."""
    kids = [tree(rng) for _ in range(rng.randint(0, 2))]
    return rng.choice("abc") + (f"[{','.join(kids)}]" if kids else "")


def tree_entry(rng: random.Random) -> str:
    return tree(rng)


def children(text: str) -> list[str]:
    """The subtrees of a root `x[...]` as text."""
    found, depth, start = [], 0, 2
    for at, char in enumerate(text[2:-1], 2):
        depth += {"[": 1, "]": -1}.get(char, 0)
        if char == "," and depth == 0:
            found.append(text[start:at])
            start = at + 1
    return [*found, text[start:-1]]


def test_hoisting_runs_the_outer_call_along_a_nested_one() -> None:
    seed = next(s for s in range(200) if len(children(record(tree_entry, s).output.decode())) == 2)
    base = record(tree_entry, seed)
    root = next(call for call in base.calls if call.code[1] == "tree")
    expected = children(base.output.decode())
    pairs = [hoist for hoist in hoists(base) if hoist.outer == root.id]
    assert len(pairs) == 2  # each child, through the list comprehension's loop
    replayed = [again(tree_entry, base, {hoist}, Alignment.HALT, seed) for hoist in pairs]
    assert sorted(r.trace.output.decode() for r in replayed if r.trace) == sorted(expected)


def test_simplest_values() -> None:
    def entry(rng: random.Random) -> str:
        return " ".join(
            [
                rng.choice(["leaf", "pair", "list"]),
                str(rng.randint(3, 9)),
                str(rng.randrange(-5, 5)),
                rng.choice(range(2, 7)).__str__(),
                f"{rng.uniform(-1.0, 1.0):.1f}",
            ]
        )

    seed = next(s for s in range(100) if len(simplifiable(record(entry, s))) == 5)
    base = record(entry, seed)
    units = simplifiable(base)
    assert units == [Simplify(index) for index in range(5)]
    result = again(entry, base, set(units), Alignment.HALT, seed)
    assert result.trace is not None and result.trace.output == b"leaf 3 0 2 0.0"
    assert simplifiable(result.trace) == []
    assert simplest("random", 0.5, None) is None  # nothing known to be simpler
