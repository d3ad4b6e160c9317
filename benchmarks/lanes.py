"""How much faster a case's own test runs in two lanes than in one: what `--jobs 2` can gain.

    .venv/bin/python benchmarks/lanes.py [--rounds R] [--runs N] CASE_DIR...

For each case (a directory with `test.sh` and a `variant.*`), its test runs
N times one after another (one lane), then the same N runs split over two
lanes side by side, alternated R times, on the case's variant and on C-Vise's
result for it (`benchmarks/baselines/cvise-CASE.*`, when there is one): a
reduction tests large candidates first and small ones for most of its
tests. Printed per case and input: seconds per test alone, per test side by
side, and the throughput ratio (one lane's wall time over two lanes' for the
same runs), per round and as the median of the rounds.

No git-reduce runs here: a ratio below 2 is the machine's (two processors
that slow each other down: a shared physical core, a power budget, a
neighbour on the host), and bounds what any reducer gains from a second job
on these tests, before its own overhead. Compare it with the j1/j2 ratio of
`run.py`'s reductions measured in the same sitting.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

BASELINES = Path(__file__).resolve().parent / "baselines"


def _run_tests(test: Path, input_file: Path, runs: int) -> None:
    for _ in range(runs):
        subprocess.run(
            [str(test), str(input_file)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=False,
        )


def _one_lane(test: Path, input_file: Path, runs: int) -> float:
    started = time.monotonic()
    _run_tests(test, input_file, runs)
    return time.monotonic() - started


def _two_lanes(test: Path, input_file: Path, runs: int) -> float:
    started = time.monotonic()
    with ThreadPoolExecutor(2) as lanes:
        halves = [lanes.submit(_run_tests, test, input_file, share) for share in (runs // 2,) * 2]
        for half in halves:
            half.result()
    return time.monotonic() - started


def _inputs(case: Path) -> list[Path]:
    variants = sorted(case.glob("variant.*"))
    found = variants[:1]
    found.extend(sorted(BASELINES.glob(f"cvise-{case.name}.*"))[:1])
    return [path for path in found if path.suffix != ".json"]


def measure(case: Path, rounds: int, runs: int) -> list[str]:
    """The report lines for one case."""
    test = case / "test.sh"
    lines = []
    for input_file in _inputs(case):
        ratios, alone, beside = [], [], []
        for _ in range(rounds):
            one = _one_lane(test, input_file, runs)
            two = _two_lanes(test, input_file, runs)
            ratios.append(one / two)
            alone.append(one / runs)
            beside.append(2 * two / runs)
        lines.append(
            f"{case.name} {input_file.name} ({input_file.stat().st_size} bytes): "
            f"{statistics.median(alone):.3f} s a test alone, "
            f"{statistics.median(beside):.3f} s side by side; two lanes over one: "
            f"median {statistics.median(ratios):.2f} ({', '.join(f'{r:.2f}' for r in ratios)})"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="+", type=Path)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=20, help="tests per lane set (even)")
    options = parser.parse_args(argv)
    if options.runs < 2 or options.runs % 2:
        parser.error("--runs must be an even number, 2 or more")
    for case in options.cases:
        if not (case / "test.sh").is_file():
            parser.error(f"{case}: no test.sh")
        for line in measure(case, options.rounds, options.runs):
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
