"""Trace-aligned re-execution and the three strategies for misalignment (halt, bypass, re-align).

The toy generators are the paper's: Listing 1 ("abc\\nabc\\n"), and the Case 1 /
Case 2 examples of infeasible alignment (section 4.4.1), with the outcomes
the paper gives for each strategy (Figure 3).
"""

from __future__ import annotations

import random
from string import ascii_lowercase

import pytest
from generator_support import again, record

from gitreduce.generator.plan import Hoist, removable
from gitreduce.generator.random_source import Pick
from gitreduce.generator.replay import Alignment

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


def arith(rng: random.Random, depth: int = 0) -> str:
    """Binary trees over digits; below depth 3 a leaf asks for no guard at all."""
    if depth < 3 and rng.random() < 0.6:
        return f"({arith(rng, depth + 1)}{rng.choice('+-*')}{arith(rng, depth + 1)})"
    return str(rng.randint(0, 9))


def arith_entry(rng: random.Random) -> str:
    return arith(rng)


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
