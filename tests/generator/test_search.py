"""Trace reduction, in process: tree-based (HDD) and sequence-based (ddmin) search over
iterations and blocks, under each alignment strategy, on toy generators whose minimal
results are known."""

from __future__ import annotations

import random
import re
from string import ascii_lowercase

import pytest
from generator_support import reduce_in_process

from gitreduce.generator import search as search_module
from gitreduce.generator.plan import removable
from gitreduce.generator.recorder import execute
from gitreduce.generator.replay import Alignment
from gitreduce.generator.search import depths

ALL = list(Alignment)
STRATEGIES = ["tree", "sequence"]


def listing1(seed: int = 26524) -> str:
    random.seed(seed)
    w = ""
    n = random.choice(range(20))
    for _ in range(n):
        w += random.choice(ascii_lowercase)
    w += "\n"
    return w + w


def in_language_with_c(text: bytes) -> bool:
    """The paper's property: ww with w in [a-z]*\\n, and the bug wants a 'c'."""
    half = len(text) // 2
    return text.endswith(b"\n") and text[:half] == text[half:] and b"c" in text


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("alignment", ALL)
def test_listing1_reduces_to_c(strategy: str, alignment: Alignment) -> None:
    result = reduce_in_process(
        listing1, 26524, in_language_with_c, strategy=strategy, alignment=alignment
    )
    assert result.original.output == b"abc\nabc\n"
    assert result.output == b"c\nc\n"
    assert result.tests <= 4


def blocks(rng: random.Random) -> str:
    """Nested reducible parts: blocks of items, each block maybe followed by a '!'."""
    out = []
    for _ in range(rng.randint(0, 6)):
        items = [rng.choice("abcdefgh") for _ in range(rng.randint(0, 6))]
        if rng.random() < 0.5:
            items.append("!")
        out.append("".join(items))
    return "[" + "|".join(out) + "]"


BLOCKS_SEED = next(
    s
    for s in range(500)
    if blocks(random.Random(s)).count("e") == 1 and len(blocks(random.Random(s))) > 25
)


def has_e(text: bytes) -> bool:
    return b"e" in text


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("alignment", ALL)
def test_nested_parts_reduce_to_the_minimal_trace(strategy: str, alignment: Alignment) -> None:
    result = reduce_in_process(blocks, BLOCKS_SEED, has_e, strategy=strategy, alignment=alignment)
    assert result.output == b"[e]"
    assert len(result.trace.decisions) == 4  # block count, item count, the 'e', the '!' guard


def test_tree_walks_the_nesting_level_by_level() -> None:
    trace = execute(lambda: blocks, BLOCKS_SEED)
    by_depth = depths(trace)
    assert set(by_depth.values()) == {0, 1}
    for unit in removable(trace):
        region = trace.regions[unit]
        assert by_depth[unit] == (0 if region.kind == "iteration" and region.parent == 0 else 1)
    tree = reduce_in_process(blocks, BLOCKS_SEED, has_e, strategy="tree")
    sequence = reduce_in_process(blocks, BLOCKS_SEED, has_e, strategy="sequence")
    assert tree.output == sequence.output == b"[e]"
    assert max(tree.tests, sequence.tests) <= 12


def case2(rng: random.Random) -> str:
    x = [0]
    if rng.choice([False, True]):
        x += [1]
    if rng.choice([False, True]):
        y = rng.choice(x)
        return f"{x} y={y}"
    return f"{x}"


CASE2_SEED = next(s for s in range(100) if case2(random.Random(s)) == "[0, 1] y=1")


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_case2_outcomes_depend_on_the_alignment(strategy: str) -> None:
    def chooses_y(text: bytes) -> bool:
        return b"y=" in text

    outcomes = {
        alignment: reduce_in_process(
            case2, CASE2_SEED, chooses_y, strategy=strategy, alignment=alignment
        ).output
        for alignment in Alignment
    }
    # halt and bypass cannot drop x += [1] without losing y; re-align lets y take 0.
    assert outcomes == {
        Alignment.HALT: b"[0, 1] y=1",
        Alignment.BYPASS: b"[0, 1] y=1",
        Alignment.REALIGN: b"[0] y=0",
    }


def case1(rng: random.Random) -> str:
    def f(r: random.Random) -> str:
        return f"f{r.randint(0, 9)}"

    def g(r: random.Random) -> str:
        return f"g{r.randint(0, 9):02d}"

    x = 0
    if rng.choice([False, True]):
        x = 1
    tag = f(rng) if x == 0 else g(rng)
    return f"{tag} {rng.randint(100, 999)}"


def test_case1_only_realign_takes_the_other_path() -> None:
    seed = next(s for s in range(100) if case1(random.Random(s)).startswith("g"))
    line8 = case1(random.Random(seed)).split()[1].encode()

    def keeps_line8(text: bytes) -> bool:
        return text.endswith(line8)

    for alignment in (Alignment.HALT, Alignment.BYPASS):
        result = reduce_in_process(case1, seed, keeps_line8, alignment=alignment)
        assert result.output.startswith(b"g")
    realigned = reduce_in_process(case1, seed, keeps_line8, alignment=Alignment.REALIGN)
    assert realigned.output.startswith(b"f") and realigned.output.endswith(line8)


def test_results_are_deterministic() -> None:
    first = reduce_in_process(blocks, BLOCKS_SEED, lambda text: text.count(b"!") >= 2)
    second = reduce_in_process(blocks, BLOCKS_SEED, lambda text: text.count(b"!") >= 2)
    assert first.output == b"[!|!]"
    assert first.output == second.output
    assert first.tests == second.tests


def arith(rng: random.Random, depth: int = 0) -> str:
    if depth < 3 and rng.random() < 0.6:
        return f"({arith(rng, depth + 1)}{rng.choice('+-*')}{arith(rng, depth + 1)})"
    return str(rng.randint(0, 9))


def arith_entry(rng: random.Random) -> str:
    return arith(rng)


ARITH_SEED = 14  # (8+((1*7)-(6-1))): the 7 is two compound expressions down


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_hoisting_reaches_a_leaf_deep_in_a_recursive_generator(
    strategy: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Turning the guards of the compound expressions off gives leaves with digits drawn
    afresh; only running the outer calls along the nested ones keeps the 7."""
    assert arith_entry(random.Random(ARITH_SEED)) == "(8+((1*7)-(6-1)))"
    result = reduce_in_process(
        arith_entry, ARITH_SEED, lambda text: b"7" in text, strategy=strategy
    )
    assert result.output == b"7"
    assert len(result.trace.decisions) == 2  # the guard that made it a leaf, the digit
    assert result.tests <= 12
    monkeypatch.setattr(search_module, "hoists", lambda trace: [])
    without = reduce_in_process(
        arith_entry, ARITH_SEED, lambda text: b"7" in text, strategy=strategy
    )
    assert len(without.output) > 1


def shapes(rng: random.Random) -> str:
    """Kinds chosen by value, not by a guard, and sizes: what simplification is for."""
    items = []
    for _ in range(rng.randint(1, 6)):
        kind = rng.choice(["dot", "line", "square"])
        items.append(kind if kind == "dot" else f"{kind}({rng.randint(1, 99)})")
    return " ".join(items)


SHAPES_SEED = next(
    s
    for s in range(1000)
    if re.search(r"^line\(\d+\) .*square\(\d\d\)", shapes(random.Random(s)))
    and shapes(random.Random(s)).count("square") == 1
)


def test_simplification_takes_the_first_alternative_and_the_smallest_number() -> None:
    """Two items must stay, one of them a square: the other becomes the first kind (a dot),
    the square's two-digit size the smallest its call allows (the size gate would keep a
    one-digit size: the same length is not smaller)."""

    def two_with_a_square(text: bytes) -> bool:
        return b"square" in text and len(text.split()) >= 2

    result = reduce_in_process(shapes, SHAPES_SEED, two_with_a_square)
    assert result.output == b"dot square(1)"
