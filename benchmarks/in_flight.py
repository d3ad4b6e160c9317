"""How many tests were in flight, and for how long each job waited between two tests.

    .venv/bin/python benchmarks/in_flight.py [--by-pass] [--texts FILE] [--needed-by FILE] \
        -- GIT-REDUCE-ARGUMENTS...

runs git-reduce in this process with every test run of the oracle timed (its
start and end, per slot), then prints to stderr: the share of the run's time
with 0, 1, 2, ... tests in flight, and how many test runs there were and how
many of them were cut short (a speculation abandoned when an earlier candidate
won); per slot, the gaps between one test's end and the next one's start
(median, 75th and 90th percentile, and their sum below 50 ms); the tests' CPU
time (every child process reaped, from the kernel's accounting) over the sum of
their runs' wall times, beside this process's own CPU time: at two jobs on two
cores, a share well below one job's is time the tests waited for a processor
(this process's threads take some); with `--by-pass`, the time with fewer tests
in flight than `--jobs`, by the pass running then. The reduction itself is the
CLI's, with its usual output: run it from a scratch directory on a copy of the
case, as `run.py` does. The figures are for one run of a machine whose speed
varies: compare builds by alternating them, run by run.

What a second job's tests were worth: `--texts FILE` writes every test run
(start, end, the text's SHA-1, whether it was cut short) as JSON; given a
one-job run's file, `--needed-by FILE` sorts this run's test time into the
tests of texts the one-job run tested too (the work both had to do), repeats of
those (a test stopped for a bet and run again later), and tests of texts it
never tested, completed or cut short (speculation that lost). Results are the
same at any `--jobs`, so the one-job run's texts are exactly the ones the
answer needed; and the needed tests' time here against theirs there says how
much slower each test ran beside another.
"""

from __future__ import annotations

import argparse
import atexit
import hashlib
import json
import os
import resource
import statistics
import sys
import threading
import time
from collections import defaultdict
from dataclasses import asdict, dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

import gitreduce.core.pass_runner as pass_runner
import gitreduce.oracle.runner as runner
import gitreduce.pair.ppr as ppr
import gitreduce.passes.schedule as schedule

_runs: list[tuple[int, float, float]] = []  # (slot, start, end)
_cut_short: list[float] = []  # the durations of runs that ended by an exception (abandoned)


@dataclass(frozen=True)
class TimedRun:
    """One test run, for `--texts` and `--needed-by`: when, on which text, and whether it
    was cut short."""

    start: float
    end: float
    text: str  # the SHA-1 of the candidate's bytes
    cut: bool


_texts: list[TimedRun] = []
_passes: list[tuple[float, float, str]] = []  # (start, end, label)
_lock = threading.Lock()


def _timed_runs() -> None:
    run_in = runner.Oracle._run_in

    def timed(self: runner.Oracle, slot: Any, content: bytes) -> Any:
        started = time.monotonic()
        cut = True
        try:
            answer = run_in(self, slot, content)
            cut = False
            return answer
        finally:
            ended = time.monotonic()
            with _lock:
                if cut:
                    _cut_short.append(ended - started)
                _runs.append((id(slot), started, ended))
                _texts.append(TimedRun(started, ended, hashlib.sha1(content).hexdigest(), cut))

    runner.Oracle._run_in = timed  # type: ignore[method-assign]


def _timed_passes() -> None:
    run_pass = pass_runner.run_pass

    def timed(declared: Any, target: Any, on: Any) -> bool:
        started = time.monotonic()
        label = f"{on.label}/{declared.name}" if on.label else declared.name
        try:
            return run_pass(declared, target, on)
        finally:
            _passes.append((started, time.monotonic(), label))

    for module in (ppr, schedule):
        module.run_pass = timed  # type: ignore[attr-defined]


def _innermost_pass(moment: float) -> str:
    best: tuple[float, str] | None = None
    for start, end, label in _passes:
        if start <= moment <= end and (best is None or start >= best[0]):
            best = (start, label)
    return best[1] if best else "(outside the passes)"


def _report(jobs: int, by_pass: bool) -> None:
    if not _runs:
        print("in_flight: no test ran", file=sys.stderr)
        return
    events = sorted([(start, 1) for _, start, _ in _runs] + [(end, -1) for _, _, end in _runs])
    shares: dict[int, float] = defaultdict(float)
    short: dict[str, float] = defaultdict(float)
    count, last = 0, events[0][0]
    for moment, change in events:
        shares[count] += moment - last
        if by_pass and count < jobs and moment > last:
            short[_innermost_pass((moment + last) / 2)] += moment - last
        count, last = count + change, moment
    total = sum(shares.values())
    print(
        "in flight: "
        + ", ".join(f"{n}: {100 * seconds / total:.1f} %" for n, seconds in sorted(shares.items()))
        + f" of {total:.2f} s; {len(_runs)} test runs, {len(_cut_short)} of them cut short "
        f"(abandoned or stopped: {sum(_cut_short):.2f} s)",
        file=sys.stderr,
    )
    by_slot: dict[int, list[tuple[float, float]]] = defaultdict(list)
    for slot, start, end in sorted(_runs, key=lambda run: run[1]):
        by_slot[slot].append((start, end))
    gaps = sorted(
        later[0] - earlier[1] for runs in by_slot.values() for earlier, later in pairwise(runs)
    )
    if gaps:
        print(
            f"gaps between a slot's tests: median {1000 * statistics.median(gaps):.2f} ms, "
            f"75th {1000 * gaps[len(gaps) * 3 // 4]:.2f} ms, 90th "
            f"{1000 * gaps[len(gaps) * 9 // 10]:.2f} ms; "
            f"sum of those under 50 ms {sum(gap for gap in gaps if gap < 0.05):.2f} s",
            file=sys.stderr,
        )
    tests = resource.getrusage(resource.RUSAGE_CHILDREN)
    own = resource.getrusage(resource.RUSAGE_SELF)
    tests_cpu = tests.ru_utime + tests.ru_stime
    tests_wall = sum(end - start for _, start, end in _runs)
    print(
        f"tests' CPU {tests_cpu:.2f} s over {tests_wall:.2f} s of their runs "
        f"({100 * tests_cpu / tests_wall:.1f} %); git-reduce's own CPU "
        f"{own.ru_utime + own.ru_stime:.2f} s",
        file=sys.stderr,
    )
    for label, seconds in sorted(short.items(), key=lambda item: -item[1])[:15]:
        print(f"  fewer than {jobs} in flight: {seconds:7.3f} s  {label}", file=sys.stderr)


def spent(runs: list[TimedRun], needed: list[TimedRun]) -> dict[str, tuple[int, float]]:
    """How many test runs, and how many seconds of test time, went to each of: texts the
    `needed` run tested as well (`needed`: the first completed run of each), `again`
    (any further run of such a text, cut short or not), `unneeded` (a text it never
    tested, run to the end) and `unneeded, cut short`."""
    wanted = {run.text for run in needed}
    seen: set[str] = set()
    spent: dict[str, tuple[int, float]] = {
        kind: (0, 0.0) for kind in ("needed", "again", "unneeded", "unneeded, cut short")
    }
    for run in sorted(runs, key=lambda run: run.start):
        if run.text in wanted:
            kind = "again" if run.cut or run.text in seen else "needed"
            if not run.cut:
                seen.add(run.text)
        else:
            kind = "unneeded, cut short" if run.cut else "unneeded"
        count, seconds = spent[kind]
        spent[kind] = (count + 1, seconds + run.end - run.start)
    return spent


def slowdown(runs: list[TimedRun], needed: list[TimedRun]) -> float | None:
    """The needed texts' first completed runs here over the same texts' runs in `needed`,
    in total time: how much slower a test ran here (None: no text in common)."""
    there = {run.text: run.end - run.start for run in needed if not run.cut}
    here: dict[str, float] = {}
    for run in sorted(runs, key=lambda run: run.start):
        if not run.cut and run.text in there:
            here.setdefault(run.text, run.end - run.start)
    before = sum(there[text] for text in here)
    return sum(here.values()) / before if before else None


def _report_needed(path: Path) -> None:
    needed = [TimedRun(**run) for run in json.loads(path.read_text())]
    for kind, (count, seconds) in spent(_texts, needed).items():
        print(f"  tests of {kind + ':':22} {count:5d} runs, {seconds:7.2f} s", file=sys.stderr)
    ratio = slowdown(_texts, needed)
    if ratio is not None:
        print(f"  the needed tests ran {ratio:.3f} times as long as in {path}", file=sys.stderr)


def _finish(jobs: int, by_pass: bool, texts: Path | None, needed_by: Path | None) -> None:
    _report(jobs, by_pass)
    if texts is not None:
        texts.write_text(json.dumps([asdict(run) for run in _texts]))
    if needed_by is not None and _texts:
        _report_needed(needed_by)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--by-pass", action="store_true", help="time short of jobs, by pass")
    parser.add_argument("--texts", type=Path, help="write every test run here, as JSON")
    parser.add_argument(
        "--needed-by", type=Path, help="a one-job run's --texts: this run's test time by use"
    )
    parser.add_argument("arguments", nargs=argparse.REMAINDER, help="git-reduce's arguments")
    args = parser.parse_args()
    arguments = args.arguments[1:] if args.arguments[:1] == ["--"] else args.arguments
    jobs = len(os.sched_getaffinity(0))  # the CLI's default
    for flag in ("--jobs", "-j"):
        if flag in arguments[:-1]:
            jobs = int(arguments[arguments.index(flag) + 1])
    _timed_runs()
    if args.by_pass:
        _timed_passes()
    atexit.register(_finish, jobs, args.by_pass, args.texts, args.needed_by)
    sys.argv = ["git-reduce", *arguments]
    from gitreduce.cli import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
