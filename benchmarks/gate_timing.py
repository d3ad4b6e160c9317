"""Cost of the syntax check per candidate, full parse against incremental, next to a test run.

    .venv/bin/python benchmarks/gate_timing.py                    # public cases + csmith-23k
    .venv/bin/python benchmarks/gate_timing.py --cases fixtures/csmith-23k --candidates 500
    .venv/bin/python benchmarks/gate_timing.py --pairs            # PPR's candidate pairs too

For each case (a folder with `variant.EXT` and `test.sh`; `seed.EXT` for --pairs):

- test: the median wall time of `test.sh variant.EXT` over `--runs` runs;
- random: `--candidates` candidates of the variant of the kinds passes make
  (nodes deleted, with the usual widening to lines; several nodes at once; one
  node replaced by another's text; a byte range cut), each checked as the
  reducer checks it (`Syntax.acceptable` with its parent and splices) and by a
  full parse, timed apart;
- single: the first `--candidates` checks of the real single-program schedule
  on the variant, with a stand-in oracle instead of the test (interesting
  while three statement lines of the variant picked at random are still in
  it, and then only one text in ten), so that the candidates are the ones the
  passes really make without spending compiler time;
- pairs (--pairs): the same for PPR on seed and variant, the variant bad while
  it keeps two common statement lines and one line only it has.

Every incremental verdict is compared with the full parse's (a difference
stops the script). The figures are wall times on a shared machine: rerun to
see the noise; `fallback` is the share of incremental checks that had to
parse in full (errors in the original, candidate changed before them).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from statistics import mean, median

from gitreduce.core import edits
from gitreduce.core.current import Current, render_deletions
from gitreduce.core.engine import Engine, blob_id
from gitreduce.core.outcome import Outcome, Verdict
from gitreduce.lang import grammars
from gitreduce.lang.syntax import Splice, Syntax
from gitreduce.pair.alignment import Alignment
from gitreduce.pair.current import PairCurrent
from gitreduce.pair.ppr import reduce_pair
from gitreduce.pair.state import PairState
from gitreduce.passes.schedule import reduce_program

REPO = Path(__file__).resolve().parents[1]
DEFAULT_CASES = [
    *sorted(path for path in (REPO / "benchmarks" / "cases").iterdir() if path.is_dir()),
    REPO / "fixtures" / "csmith-23k",
]


class Enough(Exception):
    """Raised from the check once enough candidates were timed: ends a reduction early."""


@dataclass
class Timings:
    """Per-candidate wall seconds of both ways of checking, and how the checks went."""

    full: list[float] = field(default_factory=list)
    incremental: list[float] = field(default_factory=list)
    fallbacks: int = 0
    accepted: int = 0

    def row(self) -> dict[str, float | int]:
        return {
            "candidates": len(self.full),
            "accepted": self.accepted,
            "full_ms_mean": round(mean(self.full) * 1000, 3),
            "full_ms_median": round(median(self.full) * 1000, 3),
            "incremental_ms_mean": round(mean(self.incremental) * 1000, 3),
            "incremental_ms_median": round(median(self.incremental) * 1000, 3),
            "fallback_share": round(self.fallbacks / len(self.full), 3),
        }


class TimedSyntax(Syntax):
    """The product's check, each verdict also computed by a full parse and both timed."""

    def __init__(self, grammar: grammars.Grammar, original: bytes, limit: int) -> None:
        super().__init__(grammar, original)
        self.timings = Timings()
        self._limit = limit
        self._inside = False

    def _full(self, text: bytes) -> bool:
        if self._inside:
            self.timings.fallbacks += 1
        return super()._full(text)

    def acceptable(
        self, text: bytes, parent: bytes | None = None, splices: Sequence[Splice] | None = None
    ) -> bool:
        if parent is None:  # the product parses in full here too: nothing to compare
            return super().acceptable(text)
        if len(self.timings.full) >= self._limit:
            raise Enough
        self._inside = True
        started = time.perf_counter()
        verdict = super().acceptable(text, parent, splices)
        middle = time.perf_counter()
        self._inside = False
        full = super().acceptable(bytes(text))
        ended = time.perf_counter()
        if verdict != full:
            raise AssertionError(f"incremental {verdict}, full parse {full}: {splices!r}")
        self.timings.incremental.append(middle - started)
        self.timings.full.append(ended - middle)
        self.timings.accepted += full
        return verdict


def test_seconds(test_sh: Path, variant: Path, runs: int) -> float:
    walls = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run([str(test_sh), str(variant)], capture_output=True, check=False)
        walls.append(time.perf_counter() - started)
    return median(walls)


def random_candidates(text: bytes, syntax: Syntax, count: int, rng: random.Random) -> Timings:
    spans = []
    pending = [syntax.parse(text).tree.root_node]
    while pending:
        node = pending.pop()
        if node.end_byte > node.start_byte:
            spans.append((node.start_byte, node.end_byte))
        pending.extend(node.children)
    timed = TimedSyntax(syntax.grammar, text, count)
    timed.parse(text)  # the reducer has the current text's tree: it parsed it when it took it
    for _ in range(count):
        kind = rng.choice(["node", "nodes", "replace", "bytes"])
        if kind in ("node", "nodes"):
            chosen = sorted(rng.sample(spans, 1 if kind == "node" else rng.randint(2, 30)))
            kept: list[tuple[int, int]] = []
            for start, end in chosen:
                if not kept or start >= kept[-1][1]:
                    kept.append((start, end))
            candidate = render_deletions(text, kept)
        elif kind == "replace":
            (start, end), (inner_start, inner_end) = rng.sample(spans, 2)
            if start < inner_end and inner_start < end:
                inner_start, inner_end = start, start  # overlapping: delete instead
            candidate = edits.apply(text, [edits.Edit(start, end, text[inner_start:inner_end])])
        else:
            start = rng.randrange(len(text))
            candidate = render_deletions(
                text, [(start, min(len(text), start + rng.randint(1, 60)))]
            )
        assert isinstance(candidate, edits.Rendered)
        timed.acceptable(candidate, candidate.base, candidate.splices)
    return timed.timings


def statement_lines(text: bytes) -> list[bytes]:
    """Indented lines that end a statement: what the stand-in oracle asks to keep."""
    return sorted(
        {
            line.strip()
            for line in text.splitlines()
            if line.startswith((b"    ", b"\t")) and line.rstrip().endswith(b";")
        }
    )


def stand_in_engine(keep: list[bytes]) -> Engine:
    """Bad while the `keep` lines are in the text, and then only for one text in ten (by its
    hash), as a compiler refuses most cuts: the text stays large for a while, as it does
    under a real test."""

    def run_test(text: bytes) -> Outcome:
        if all(line in text for line in keep) and int(blob_id(text), 16) % 10 == 0:
            return Outcome(Verdict.BAD, 1, 0.0, "exit 1")
        return Outcome(Verdict.GOOD, 0, 0.0)

    return Engine(run_test, lambda outcome: outcome.verdict is Verdict.BAD, jobs=1)


def single_stream(
    text: bytes, grammar: grammars.Grammar, count: int, rng: random.Random
) -> Timings:
    keep = rng.sample(statement_lines(text), 3)
    engine = stand_in_engine(keep)
    timed = TimedSyntax(grammar, text, count)
    try:
        reduce_program(Current(text, engine, timed))
    except Enough:
        pass
    finally:
        engine.close()
    return timed.timings


def pair_stream(
    seed: bytes, variant: bytes, grammar: grammars.Grammar, count: int, rng: random.Random
) -> Timings:
    own = [line for line in statement_lines(variant) if line not in seed]
    common = [line for line in statement_lines(variant) if line in seed]
    keep = [rng.choice(own), *rng.sample(common, 2)]
    engine = stand_in_engine(keep)
    timed = TimedSyntax(grammar, variant, count)

    def good(outcome: Outcome) -> bool:
        return outcome.verdict is Verdict.GOOD

    def bad(outcome: Outcome) -> bool:
        return outcome.verdict is Verdict.BAD

    state = PairState.full(Alignment.of(seed, variant, grammar))
    try:
        reduce_pair(PairCurrent(state, engine, timed, good, bad))
    except Enough:
        pass
    finally:
        engine.close()
    return timed.timings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", nargs="*", type=Path, default=DEFAULT_CASES)
    parser.add_argument("--candidates", type=int, default=1000, help="per case and stream")
    parser.add_argument("--runs", type=int, default=5, help="test.sh runs to time per case")
    parser.add_argument("--pairs", action="store_true", help="time PPR's candidates too")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    results = {"load_before": os.getloadavg(), "cases": {}}
    header = "case tokens B test_ms stream candidates full_ms incr_ms full/test incr/test fallback"
    print(header)
    for folder in args.cases:
        (variant_path,) = folder.glob("variant.*")
        language = grammars.detect(variant_path.name)
        grammar = grammars.load(language) if language else None
        if grammar is None:
            print(f"{folder.name}: no grammar", file=sys.stderr)
            continue
        variant = variant_path.read_bytes()
        syntax = Syntax(grammar, variant)
        tokens = syntax.parse(variant).tokens
        test = test_seconds(folder / "test.sh", variant_path, args.runs)
        rng = random.Random(args.seed)
        streams: list[tuple[str, Callable[[], Timings]]] = [
            ("random", partial(random_candidates, variant, syntax, args.candidates, rng)),
            ("single", partial(single_stream, variant, grammar, args.candidates, rng)),
        ]
        seeds = list(folder.glob("seed.*"))
        if args.pairs and seeds:
            seed = seeds[0].read_bytes()
            streams.append(
                ("pairs", partial(pair_stream, seed, variant, grammar, args.candidates, rng))
            )
        case: dict[str, object] = {
            "tokens": tokens,
            "baseline_errors": syntax.baseline_errors,
            "test_ms": round(test * 1000, 1),
        }
        for name, stream in streams:
            timings = stream()
            row = timings.row()
            case[name] = row
            print(
                f"{folder.name} {tokens} {syntax.baseline_errors} {test * 1000:.0f} {name}"
                f" {row['candidates']} {row['full_ms_mean']:.2f} {row['incremental_ms_mean']:.2f}"
                f" {mean(timings.full) / test:.1%} {mean(timings.incremental) / test:.1%}"
                f" {row['fallback_share']:.0%}",
                flush=True,
            )
        results["cases"][folder.name] = case
    results["load_after"] = os.getloadavg()
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
