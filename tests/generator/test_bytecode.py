"""Loops and guards as the bytecode shows them: long loop bodies, the forms a guard takes."""

from __future__ import annotations

import random
from typing import Any

from generator_support import loops, record

from gitreduce.generator.random_source import Pick


def test_a_long_loop_body_still_has_iterations() -> None:
    # Enough code in the body that FOR_ITER needs an EXTENDED_ARG prefix: the back jump
    # lands on the prefix, which must count as the loop's header, not as leaving it.
    body = "\n".join(f"        x{i} = rng.random() if i > {i} else {i}" for i in range(40))
    source = (
        "def entry(rng):\n"
        "    out = []\n"
        "    for i in range(rng.randint(3, 3)):\n"
        f"{body}\n"
        "        out.append(rng.choice('ab'))\n"
        "    return ''.join(out)\n"
    )
    namespace: dict[str, Any] = {}
    exec(compile(source, "<long-loop>", "exec"), namespace)
    trace = record(namespace["entry"], 1)
    assert loops(trace) == [(0, 3)]


def test_guard_forms() -> None:
    def entry(rng: random.Random) -> str:
        if rng.choice([False, True]):  # noqa: SIM108 -- the statement form is what is tested
            head = "T"
        else:
            head = "F"
        value = rng.choice("ab") if rng.random() < 0.9 else "-"
        if rng.getrandbits(1):
            return head + value + "!"
        return head + value

    for seed in range(6):
        trace = record(entry, seed)
        assert len(trace.guards) == 3
        text = trace.output.decode()
        first = trace.decisions[0].value
        assert isinstance(first, Pick)
        assert trace.guards[0] == first.value == (text[0] == "T")
