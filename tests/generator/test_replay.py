"""Trace-aligned re-execution and the three strategies for misalignment (halt, bypass, re-align).

The toy generators are the paper's: Listing 1 ("abc\\nabc\\n"), and the Case 1 /
Case 2 examples of infeasible alignment (section 4.4.1), with the outcomes
the paper gives for each strategy (Figure 3).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from string import ascii_lowercase
from typing import Any

import pytest

from gitreduce.generator.plan import (
    Alignment,
    Hoist,
    Replayed,
    Simplify,
    Unit,
    canonical,
    derive,
    feasible,
    hoists,
    off_values,
    removable,
    replay,
    simplest,
    simplifiable,
)
from gitreduce.generator.recorder import Pick, Trace, execute

ALL = list(Alignment)


def listing1(seed: int = 26524) -> str:
    random.seed(seed)
    w = ""
    n = random.choice(range(20))
    for _ in range(n):
        w += random.choice(ascii_lowercase)
    w += "\n"
    return w + w


def case1(rng: random.Random) -> str:
    """Turning the guard off sends execution into f() instead of g(): Prog(O') != Prog(O)."""

    def f(r: random.Random) -> str:
        return f"f{r.randint(0, 9)}"

    def g(r: random.Random) -> str:
        return f"g{r.randint(0, 9):02d}"

    x = 0
    if rng.choice([False, True]):
        x = 1
    tag = f(rng) if x == 0 else g(rng)
    return f"{tag} {rng.randint(100, 999)}"  # "line 8": where re-align picks up again


def case2(rng: random.Random) -> str:
    """Turning the first guard off leaves y = choice(x) unable to return 1: Dec(O') != Dec(O)."""
    x = [0]
    if rng.choice([False, True]):
        x += [1]
    if rng.choice([False, True]):
        y = rng.choice(x)
        return f"{x} y={y}"
    return f"{x}"


def record(entry: Callable[..., Any], seed: int) -> Trace:
    return execute(lambda: entry, seed)


def again(
    entry: Callable[..., Any], base: Trace, removed: set[Unit], alignment: Alignment, seed: int
) -> Replayed:
    return replay(lambda: entry, base, frozenset(removed), alignment, seed)


CASE1_SEED = next(s for s in range(100) if record(case1, s).output.startswith(b"g"))
CASE2_SEED = next(s for s in range(100) if record(case2, s).output == b"[0, 1] y=1")


@pytest.mark.parametrize("alignment", ALL)
def test_nothing_removed_replays_the_original(alignment: Alignment) -> None:
    for entry, seed in ((listing1, 26524), (case1, CASE1_SEED), (case2, CASE2_SEED)):
        base = record(entry, seed)
        again_ = again(entry, base, set(), alignment, seed)
        assert again_.trace is not None
        assert again_.trace.output == base.output
        assert [d.value for d in again_.trace.decisions] == [d.value for d in base.decisions]
        assert again_.misaligned == 0


@pytest.mark.parametrize("alignment", ALL)
def test_listing1_removing_two_iterations_gives_c(alignment: Alignment) -> None:
    base = record(listing1, 26524)
    first, second, _third = removable(base)
    result = again(listing1, base, {first, second}, alignment, 26524)
    assert result.trace is not None
    assert result.trace.output == b"c\nc\n"  # the paper's I' = "c\nc\n"
    count = result.trace.decisions[0].value
    assert isinstance(count, Pick) and count.value == 1  # L_init forced from 3 to 1
    assert result.misaligned == 0


def test_case1_per_strategy() -> None:
    base = record(case1, CASE1_SEED)
    (block,) = removable(base)
    line8 = base.decisions[-1].value
    halted = again(case1, base, {block}, Alignment.HALT, CASE1_SEED)
    assert halted.trace is None and halted.failure == "halted"
    bypassed = again(case1, base, {block}, Alignment.BYPASS, CASE1_SEED)
    assert bypassed.trace is None  # g()'s decision is inside no reducible part: like halt
    realigned = again(case1, base, {block}, Alignment.REALIGN, CASE1_SEED)
    assert realigned.trace is not None
    text = realigned.trace.output.decode()
    assert text.startswith("f") and text.endswith(f" {line8}")  # aligned again after f()
    assert realigned.misaligned == 1


def test_case2_per_strategy() -> None:
    base = record(case2, CASE2_SEED)
    first, second = removable(base)
    halted = again(case2, base, {first}, Alignment.HALT, CASE2_SEED)
    assert halted.trace is None and halted.failure == "halted"
    bypassed = again(case2, base, {first}, Alignment.BYPASS, CASE2_SEED)
    assert bypassed.trace is not None
    assert bypassed.trace.output == b"[0]"  # the second guard turned off as well
    assert bypassed.removed == {first, second}
    assert bypassed.runs == 2
    realigned = again(case2, base, {first}, Alignment.REALIGN, CASE2_SEED)
    assert realigned.trace is not None
    assert realigned.trace.output == b"[0] y=0"  # y = choice([0]) takes what is there
    assert realigned.misaligned == 1


def test_realigned_traces_are_complete_traces() -> None:
    base = record(case2, CASE2_SEED)
    first, _ = removable(base)
    realigned = again(case2, base, {first}, Alignment.REALIGN, CASE2_SEED)
    assert realigned.trace is not None
    assert len(realigned.trace.decisions) == 3
    assert removable(realigned.trace) == [0]  # the second block, the only one left


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


def arith(rng: random.Random, depth: int = 0) -> str:
    """Binary trees over digits; below depth 3 a leaf asks for no guard at all."""
    if depth < 3 and rng.random() < 0.6:
        return f"({arith(rng, depth + 1)}{rng.choice('+-*')}{arith(rng, depth + 1)})"
    return str(rng.randint(0, 9))


def arith_entry(rng: random.Random) -> str:
    return arith(rng)


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


def test_calls_are_recorded_with_their_nesting() -> None:
    base = record(arith_entry, 7)
    calls = [call for call in base.calls if call.code[1] == "arith"]
    root = calls[0]
    assert base.calls[root.parent].code[1] == "arith_entry"
    assert (root.first, root.last) == (0, len(base.decisions))
    for call in calls[1:]:
        parent = base.calls[call.parent]
        assert parent.code[1] == "arith" and call.depth == parent.depth + 1
        assert parent.first <= call.first <= call.last <= parent.last


def test_hoisting_runs_the_outer_call_along_a_nested_one() -> None:
    seed = next(s for s in range(200) if len(children(record(tree_entry, s).output.decode())) == 2)
    base = record(tree_entry, seed)
    root = next(call for call in base.calls if call.code[1] == "tree")
    expected = children(base.output.decode())
    pairs = [hoist for hoist in hoists(base) if hoist.outer == root.id]
    assert len(pairs) == 2  # each child, through the list comprehension's loop
    replayed = [again(tree_entry, base, {hoist}, Alignment.HALT, seed) for hoist in pairs]
    assert sorted(r.trace.output.decode() for r in replayed if r.trace) == sorted(expected)


def test_a_decision_nobody_asked_for_turns_its_guard_off() -> None:
    """Hoisted from depth 3 to 0, a leaf meets `rng.random() < 0.6` that it never asked
    at depth 3: re-align answers with a value that skipped that guard elsewhere, so the
    leaf stays a leaf instead of growing a random subtree."""
    seed = next(s for s in range(200) if record(arith_entry, s).output.count(b"(") >= 3)
    base = record(arith_entry, seed)
    deepest = max(base.calls, key=lambda call: call.depth)
    root = next(call for call in base.calls if call.code[1] == "arith")
    assert deepest.last - deepest.first == 1  # the leaf's digit only
    digit = base.decisions[deepest.first].value
    result = again(arith_entry, base, {Hoist(root.id, deepest.id)}, Alignment.REALIGN, seed)
    assert result.trace is not None and result.trace.output == str(digit).encode()
    assert result.misaligned == 1


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
