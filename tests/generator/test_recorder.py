"""Trace instrumentation: decisions with their sites, and the loops and guards around them."""

from __future__ import annotations

import itertools
import random
from string import ascii_lowercase

import pytest
from generator_support import loops, record

from gitreduce.generator.random_source import RecordingRandom, plain_int
from gitreduce.generator.recorder import GeneratorFailed
from gitreduce.generator.trace import ROOT


def listing1(seed: int = 26524) -> str:
    """The paper's Listing 1, on the module-level functions."""
    random.seed(seed)
    w = ""
    n = random.choice(range(20))
    for _ in range(n):
        w += random.choice(ascii_lowercase)
    w += "\n"
    return w + w


def test_listing1_records_the_papers_trace() -> None:
    trace = record(listing1, 26524)
    assert trace.output == b"abc\nabc\n"
    assert [d.api for d in trace.decisions] == ["choice"] * 4
    assert [plain_int("choice", trace.decisions[0].value)] == [3]
    assert [d.value.value for d in trace.decisions[1:]] == ["a", "b", "c"]
    assert loops(trace) == [(0, 3)]  # L{3}: L_init is decision 0
    iterations = [r for r in trace.regions if r.kind == "iteration"]
    assert [r.ordinal for r in iterations] == [1, 2, 3]
    assert [trace.decisions[i].region for i in (1, 2, 3)] == [r.id for r in iterations]


def test_the_module_functions_are_restored() -> None:
    before = random.choice
    record(listing1, 1)
    assert random.choice is before
    state = random.getstate()
    random.seed(5)
    expected = random.random()
    random.setstate(state)
    random.seed(5)
    assert random.random() == expected


def test_a_loop_count_in_the_for_line_and_in_a_comprehension() -> None:
    def entry(rng: random.Random) -> str:
        words = []
        for _ in range(rng.randint(1, 4)):
            words.append(rng.choice("abc"))
        numbers = [str(rng.randint(0, 9)) for _ in range(rng.randint(2, 5))]
        joined = ",".join(str(rng.random() < 0.5) for _ in range(rng.randint(1, 3)))
        return " ".join(words + numbers) + joined

    trace = record(entry, 7)
    counted = [(init, n) for init, n in loops(trace) if init is not None]
    assert len(counted) == 3
    for init, iterations in counted:
        assert init is not None
        assert plain_int(trace.decisions[init].api, trace.decisions[init].value) == iterations


def test_a_loop_over_data_is_not_reducible() -> None:
    def entry(rng: random.Random) -> str:
        rng.randint(2, 2)  # a decision equal to the trip count, made in another statement...
        names = ["a", "b"]
        return "".join(name + rng.choice("xy") for name in names)  # ...of a loop over data

    trace = record(entry, 1)
    assert [init for init, _ in loops(trace)] == [None]


def test_guards_record_whether_their_block_ran() -> None:
    def entry(rng: random.Random) -> str:
        out = []
        for _ in range(6):
            if rng.random() < 0.5:
                out.append(rng.choice("xy"))
        return "".join(out)

    trace = record(entry, 3)
    guards = [i for i, d in enumerate(trace.decisions) if d.api == "random"]
    assert set(trace.guards) == set(guards)
    blocks = {r.init: r for r in trace.regions if r.kind == "block"}
    for index in guards:
        taken = trace.guards[index]
        assert (index in blocks) == taken
        if taken:
            inside = [i for i, d in enumerate(trace.decisions) if d.region == blocks[index].id]
            assert inside == [index + 1]


def test_a_while_test_nests_one_block_per_iteration() -> None:
    def entry(rng: random.Random) -> str:
        out = "a"
        while rng.random() < 0.8:
            out += rng.choice("xyz")
        return out

    seed = next(s for s in range(50) if len(entry(random.Random(s))) >= 4)
    trace = record(entry, seed)
    blocks = [r for r in trace.regions if r.kind == "block"]
    assert len(blocks) == len(trace.output) - 1
    for outer, inner in itertools.pairwise(blocks):
        assert inner.parent == outer.id  # turning one off also ends the loop there


def test_regions_follow_calls() -> None:
    def item(rng: random.Random) -> str:
        return rng.choice("ab") + ("!" if rng.random() < 0.5 else "")

    def entry(rng: random.Random) -> str:
        return ",".join(item(rng) for _ in range(rng.randint(2, 4)))

    trace = record(entry, 2)
    (loop,) = [r for r in trace.regions if r.kind == "loop"]
    for index, decision in enumerate(trace.decisions):
        if index == loop.init:
            assert decision.region == ROOT
            continue
        region = trace.regions[decision.region]
        assert region.kind == "iteration" and region.parent == loop.id
    sites = {d.site for d in trace.decisions if d.api == "choice"}
    assert len(sites) == 1  # the same call stack in every iteration: the same Prog(O)


def test_calling_conventions() -> None:
    def takes_seed(seed: int) -> str:
        return str(seed)

    def takes_nothing() -> str:
        return str(random.randint(0, 9))

    def needs_more(rng: random.Random, count: int) -> str:
        return ""

    assert record(takes_seed, 42).output == b"42"
    assert record(takes_nothing, 1).output == str(random.Random(1).randint(0, 9)).encode()
    with pytest.raises(GeneratorFailed, match="needs an argument for 'count'"):
        record(needs_more, 1)


def test_printed_output_and_failures() -> None:
    def prints(rng: RecordingRandom) -> None:
        print("hello", rng.randint(1, 1))

    def returns_a_list(rng: random.Random) -> list[int]:
        return [1]

    def raises(rng: random.Random) -> str:
        return str(1 // (rng.randint(0, 0)))

    assert record(prints, 1).output == b"hello 1\n"
    with pytest.raises(GeneratorFailed, match="returned a list"):
        record(returns_a_list, 1)
    with pytest.raises(GeneratorFailed, match=r"raised ZeroDivisionError: .*in raises"):
        record(raises, 1)


def arith(rng: random.Random, depth: int = 0) -> str:
    """Binary trees over digits; below depth 3 a leaf asks for no guard at all."""
    if depth < 3 and rng.random() < 0.6:
        return f"({arith(rng, depth + 1)}{rng.choice('+-*')}{arith(rng, depth + 1)})"
    return str(rng.randint(0, 9))


def arith_entry(rng: random.Random) -> str:
    return arith(rng)


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
