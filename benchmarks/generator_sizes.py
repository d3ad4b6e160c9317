"""Generator mode against syntax-guided reduction on the shipped C generator fixture.

Issue 6's acceptance figure: for seeds whose program shows the bug, the size
(tokens, counted by benchmarks/tools/tokens.py) of `git reduce generate gen_c.py
--seed N` against that of `git reduce generated.c` on the program the same
seed generates, with the tests each ran. Generator mode runs twice: with
`--no-polish` (the paper's GReduce alone: an input the generator writes) and
by default (then polished syntax-guided). Seeds are the first N from 0 whose
program test.sh calls bad, so the sample is fixed and not chosen by result.
Every run gets a fresh verdict cache, so no figure is a cache replay.

    python benchmarks/generator_sizes.py                        # 10 seeds, tree
    python benchmarks/generator_sizes.py --seeds 3 --strategy tree sequence
    python benchmarks/generator_sizes.py --reuse-text out.json  # text runs from before

The syntax-guided runs take most of the time (about a minute each), and do
not depend on generator mode; `--reuse-text` takes their figures from an
earlier `--json` of this script.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "fixtures" / "generator"
GEN_C = FIXTURE / "gen_c.py"
TEST_SH = FIXTURE / "test.sh"
TOKENS = ROOT / "benchmarks" / "tools" / "tokens.py"
CLI = "import sys; from gitreduce.cli.app import main; sys.exit(main())"


def bad_seeds(count: int) -> list[int]:
    """The first `count` seeds whose generated program test.sh calls bad (exit 1)."""
    found: list[int] = []
    seed = 0
    with tempfile.TemporaryDirectory() as scratch:
        program = Path(scratch) / "generated.c"
        while len(found) < count:
            program.write_bytes(generate(seed))
            if subprocess.run([str(TEST_SH), str(program)], capture_output=True).returncode == 1:
                found.append(seed)
            seed += 1
    return found


def generate(seed: int) -> bytes:
    return subprocess.run(
        [sys.executable, str(GEN_C), str(seed)], capture_output=True, check=True
    ).stdout


def tokens(path: Path) -> int:
    result = subprocess.run(
        [sys.executable, str(TOKENS), str(path)], capture_output=True, text=True, check=True
    )
    return int(result.stdout.split()[0])


def reduce(args: list[str], workdir: Path, output: Path) -> dict[str, Any]:
    """One `git reduce` run in `workdir` with a cache of its own; its figures, checked."""
    environment = {**os.environ, "XDG_CACHE_HOME": str(workdir / f"cache-{output.stem}")}
    result = subprocess.run(
        [sys.executable, "-c", CLI, *args, "--output", str(output), "--json", "-q"],
        cwd=workdir,
        env=environment,
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise SystemExit(f"git reduce {' '.join(args)} failed: {result.stderr.strip()}")
    summary = json.loads(result.stdout)
    reproduces = subprocess.run([str(TEST_SH), str(output)], capture_output=True).returncode == 1
    return {
        "tokens": tokens(output),
        "bytes": len(output.read_bytes()),
        "tests": summary["tests_run"],
        "seconds": summary["wall_seconds"],
        "reproduces": reproduces,
    }


def measure(
    seed: int, strategies: list[str], jobs: int, text: dict[str, Any] | None, keep: Path | None
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as scratch:
        workdir = Path(scratch) if keep is None else keep / f"seed-{seed}"
        workdir.mkdir(parents=True, exist_ok=True)
        generated = workdir / "generated.c"
        generated.write_bytes(generate(seed))
        row: dict[str, Any] = {"seed": seed, "tokens": tokens(generated)}
        row["text"] = text or reduce(
            [str(generated), "--test", str(TEST_SH), "-j", str(jobs)], workdir, workdir / "text.c"
        )
        for strategy in strategies:
            args = ["generate", str(GEN_C), "--seed", str(seed), "--test", str(TEST_SH)]
            args += ["--strategy", strategy, "-j", str(jobs)]
            for column, more in ((f"{strategy} alone", ["--no-polish"]), (strategy, [])):
                found = reduce(args + more, workdir, workdir / f"{column.replace(' ', '-')}.c")
                found["ratio"] = found["tokens"] / row["text"]["tokens"]
                row[column] = found
        return row


def table(rows: list[dict[str, Any]], strategies: list[str]) -> str:
    strategies = [column for strategy in strategies for column in (f"{strategy} alone", strategy)]
    head = "| seed | tokens | syntax-guided: tokens, tests, s |"
    rule = "|---:|---:|---|"
    for strategy in strategies:
        head += f" {strategy}: tokens, tests, s | ratio |"
        rule += "---|---:|"
    lines = [head, rule]
    for row in rows:
        text = row["text"]
        line = f"| {row['seed']} | {row['tokens']} | {text['tokens']}, {text['tests']}, "
        line += f"{text['seconds']:.0f} |"
        for strategy in strategies:
            found = row[strategy]
            mark = "" if found["reproduces"] else " (does not reproduce!)"
            line += f" {found['tokens']}, {found['tests']}, {found['seconds']:.1f}{mark} |"
            line += f" {100 * found['ratio']:.1f}% |"
        lines.append(line)
    for strategy in strategies:
        ratios = [row[strategy]["ratio"] for row in rows]
        tests = [row[strategy]["tests"] for row in rows]
        lines.append(
            f"\n{strategy}: median ratio {100 * statistics.median(ratios):.1f}% "
            f"(min {100 * min(ratios):.1f}%, max {100 * max(ratios):.1f}%), "
            f"median tests {statistics.median(tests):g} against "
            f"{statistics.median(row['text']['tests'] for row in rows):g} syntax-guided"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10, help="how many bad seeds (default 10)")
    parser.add_argument("--seed", type=int, action="append", help="these seeds instead")
    parser.add_argument("--strategy", nargs="+", default=["tree"], choices=["tree", "sequence"])
    parser.add_argument("-j", "--jobs", type=int, default=1, help="jobs per run (default 1)")
    parser.add_argument("--reuse-text", type=Path, help="syntax-guided figures from this JSON")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    parser.add_argument("--keep", type=Path, help="keep each seed's files in KEEP/seed-N")
    options = parser.parse_args()
    seeds = options.seed or bad_seeds(options.seeds)
    earlier: dict[int, dict[str, Any]] = {}
    if options.reuse_text is not None:
        earlier = {row["seed"]: row["text"] for row in json.loads(options.reuse_text.read_text())}
    rows = []
    for seed in seeds:
        rows.append(measure(seed, options.strategy, options.jobs, earlier.get(seed), options.keep))
        print(f"seed {seed} done", file=sys.stderr, flush=True)
    if options.json is not None:
        options.json.write_text(json.dumps(rows, indent=2) + "\n")
    print(table(rows, options.strategy))


if __name__ == "__main__":
    main()
