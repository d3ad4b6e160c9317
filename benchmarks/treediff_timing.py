"""Timing of the tree difference Δ_T (`gitreduce.pair.treediff.diff_trees`) on one pair of files.

Parses both files once, runs `diff_trees` seven times and prints the median
and minimum wall and CPU times, how many seed nodes were matched and how many
operations of each kind the script holds.
"""

from __future__ import annotations

import sys
import time
from statistics import median

from gitreduce.lang import grammars
from gitreduce.lang.syntax import leaves
from gitreduce.pair.treediff import diff_trees


def main(argv: list[str] | None = None) -> int:
    """Time Δ_T on a pair of files: `python benchmarks/treediff_timing.py SEED VARIANT [COPIES]`.

    COPIES concatenates each file that many times, to measure larger inputs.
    """
    args = sys.argv[1:] if argv is None else argv
    if len(args) not in (2, 3):
        print(main.__doc__, file=sys.stderr)
        return 2
    copies = int(args[2]) if len(args) == 3 else 1
    name = grammars.detect(args[0])
    grammar = grammars.load(name) if name else None
    if grammar is None:
        print(f"no grammar for {args[0]}", file=sys.stderr)
        return 2
    with open(args[0], "rb") as handle:
        seed_text = handle.read() * copies
    with open(args[1], "rb") as handle:
        variant_text = handle.read() * copies
    parser = grammar.parser()
    seed_tree = parser.parse(seed_text)
    variant_tree = parser.parse(variant_text)
    print(f"tokens: seed {len(leaves(seed_tree))}, variant {len(leaves(variant_tree))} (x{copies})")
    walls: list[float] = []
    cpus: list[float] = []
    result = None
    for _ in range(7):
        wall, cpu = time.perf_counter(), time.process_time()
        result = diff_trees(seed_tree, seed_text, variant_tree, variant_text)
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    assert result is not None
    print(f"nodes: seed {len(result.seed)}, variant {len(result.variant)}")
    print(
        f"diff_trees: wall median {median(walls) * 1000:.1f} ms (min {min(walls) * 1000:.1f}),"
        f" cpu median {median(cpus) * 1000:.1f} ms (min {min(cpus) * 1000:.1f}), 7 runs"
    )
    print(f"matched: {len(result.mapping)} of {len(result.seed)} seed nodes")
    counts: dict[str, int] = {}
    for op in result.operations:
        counts[type(op).__name__] = counts.get(type(op).__name__, 0) + 1
    print("operations:", ", ".join(f"{k} {n}" for k, n in sorted(counts.items())) or "none")
    return 0


if __name__ == "__main__":
    sys.exit(main())
