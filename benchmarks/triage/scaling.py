"""Triage throughput on a Dask cluster of K single-threaded workers on loopback.

    .venv/bin/python benchmarks/triage/scaling.py [--workers 1,2,4,8] [--findings 24]
        [--sleep 0.2] [--compare-local] [--dask-defaults] [--out benchmarks/results/NAME]

For each K, on a fresh findings repository (build_findings_repo.py, its test sleeping
--sleep seconds before gcc, so the oracle is dominated by waiting and a 2-core machine
can stand in for K cores): starts `dask scheduler` and K `dask worker --nthreads 1
--no-nanny` on 127.0.0.1 (with `LEAN_DASK_CONFIG`, unless --dask-defaults), runs
`git reduce triage --all --executor dask://... --workers K --jobs 1 --json` (K
reductions, one test in flight each) with an empty cache, and stops them.
Reports findings/hour, tests/s, wall, and the parallel efficiency
throughput(K) / (K * throughput(first K)) in findings/hour; with --compare-local the
same triage with `--executor local` too, and the Dask path's cost per test. Writes
NAME.json and NAME.md (default benchmarks/results/DATE-triage-scaling). CPU ms/test
(everything the run started: triage, reductions, Dask processes, the tests) and the
1-minute load average before and after each run tell a busy machine from a slow path;
the CPU ceiling is the tests/s the machine's CPUs could give at that CPU per test.
Run it with a virtualenv whose gitreduce has the Dask executor: its git-reduce and
dask are used.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date
from pathlib import Path
from typing import Any

from distributed import Client

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
BIN = Path(sys.executable).parent
# Dask's own housekeeping, made rare: on defaults each idle worker (nanny included) takes
# about 6 % of a core here (a 10 ms sampling profiler, 20 ms event-loop ticks, a system
# monitor every 0.5 s): half a core for 8 workers, on a 2-core machine that stands in for
# 8 machines. Tasks that run a test need none of it (docs/cluster.md).
LEAN_DASK_CONFIG = {
    "DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED": "False",
    "DASK_DISTRIBUTED__ADMIN__TICK__INTERVAL": "1s",
    "DASK_DISTRIBUTED__ADMIN__SYSTEM_MONITOR__INTERVAL": "2s",
}


def tool(name: str) -> str:
    found = BIN / name if (BIN / name).exists() else shutil.which(name)
    if found is None:
        sys.exit(f"scaling: {name} not found (install gitreduce and distributed in this venv)")
    return str(found)


def stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the process group this script started (a nanny and its worker), then KILL."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def start(command: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(command, stdout=out, stderr=out, env=env, start_new_session=True)


def scheduler_address(scheduler: subprocess.Popen[bytes], file: Path, log: Path) -> str:
    """The address the scheduler chose (`--port 0`), once its scheduler file is written."""
    deadline = time.monotonic() + 60
    while True:
        with contextlib.suppress(FileNotFoundError, json.JSONDecodeError, KeyError):
            return str(json.loads(file.read_text())["address"])
        if scheduler.poll() is not None or time.monotonic() > deadline:
            sys.exit(f"scaling: the dask scheduler did not start, see {log}")
        time.sleep(0.1)


@contextmanager
def cluster(workers: int, logs: Path, lean: bool) -> Iterator[str]:
    """A scheduler and `workers` one-thread workers on loopback, until the block ends;
    `lean`: without nannies, with `LEAN_DASK_CONFIG`."""
    dask = tool("dask")
    env = {**os.environ, **(LEAN_DASK_CONFIG if lean else {})}
    loopback = ["--host", "127.0.0.1", "--no-dashboard"]
    file, log = logs / f"scheduler-{workers}.json", logs / f"dask-{workers}-0.log"
    scheduler = [dask, "scheduler", *loopback, "--port", "0", "--scheduler-file", str(file)]
    processes = [start(scheduler, log, env)]
    try:
        address = scheduler_address(processes[0], file, log)
        for number in range(1, workers + 1):
            worker = [dask, "worker", address, *loopback, "--nthreads", "1"]
            worker += ["--no-nanny"] if lean else []
            processes.append(start(worker, logs / f"dask-{workers}-{number}.log", env))
        with Client(address, timeout=30) as client:
            client.wait_for_workers(workers, timeout=60)
        yield address
    finally:
        for process in reversed(processes):
            stop(process)


def triage(repo: Path, executor: str, workers: int, logs: Path) -> dict[str, Any]:
    """One triage of every finding with an empty verdict cache; its JSON, with the wall time."""
    name = f"triage-{'local' if executor == 'local' else 'dask'}-{workers}.log"
    with tempfile.TemporaryDirectory() as cache, (logs / name).open("w") as log:
        command = [tool("git-reduce"), "triage", "--all", "--executor", executor]
        command += ["--workers", str(workers), "--jobs", "1", "--json"]
        load = os.getloadavg()[0]
        start = time.monotonic()
        done = subprocess.run(
            command,
            cwd=repo,
            env={**os.environ, "XDG_CACHE_HOME": cache},
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
            check=False,
        )
        wall = time.monotonic() - start
    if done.returncode != 0:
        sys.exit(f"scaling: triage exited {done.returncode}, see {log.name}")
    result: dict[str, Any] = json.loads(done.stdout)
    return {**result, "measured_wall_seconds": wall, "load_before": load}


def build(dest: Path, args: argparse.Namespace) -> None:
    builder = [sys.executable, str(HERE / "build_findings_repo.py"), str(dest)]
    options = ["--findings", str(args.findings), "--seed", str(args.seed), "--sleep", args.sleep]
    subprocess.run([*builder, *options], check=True, stdout=subprocess.DEVNULL)


def cpu_seconds() -> float:
    """CPU time of this script's finished descendants: triage, its reductions, Dask, gcc."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def row(kind: str, workers: int, result: dict[str, Any]) -> dict[str, Any]:
    wall = result["measured_wall_seconds"]
    reduced = result["counts"]["reduced"]
    return {
        "executor": kind,
        "workers": workers,
        "reduced": reduced,
        "buckets": len(result["buckets"]),
        "tests": result["tests_run"],
        "wall_seconds": round(wall, 2),
        "findings_per_hour": round(reduced * 3600 / wall, 1),
        "tests_per_second": round(result["tests_run"] / wall, 2),
        "cpu_ms_per_test": round(result["cpu_seconds"] * 1000 / result["tests_run"], 1),
        "cpu_ceiling_tests_per_second": round(
            (os.cpu_count() or 1) * result["tests_run"] / result["cpu_seconds"], 1
        ),
        "load_before": round(result["load_before"], 2),
        "load_after": round(os.getloadavg()[0], 2),
        "diffs": {finding["id"]: finding["diff"] for finding in result["findings"]},
    }


def markdown(rows: list[dict[str, Any]], setup: dict[str, Any]) -> str:
    lines = [
        f"# Triage scaling, {setup['date']}",
        "",
        f"{setup['findings']} findings (seed {setup['seed']}), test: sleep {setup['sleep']} s then "
        f"gcc; {setup['cpus']} CPUs, {setup['gcc']}; gitreduce {setup['commit']}.",
        f"Dask workers: {setup['dask_config']}.",
        f"Command: `{setup['command']}`",
        "",
        "| executor | workers | reduced | buckets | tests | wall s | findings/h | tests/s "
        "| efficiency | same results as first row | CPU ms/test | CPU ceiling tests/s "
        "| load before, after |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        lines.append(
            f"| {r['executor']} | {r['workers']} | {r['reduced']} | {r['buckets']} | {r['tests']} "
            f"| {r['wall_seconds']} | {r['findings_per_hour']} | {r['tests_per_second']} "
            f"| {r['efficiency']} | {r['same_results']} | {r['cpu_ms_per_test']} "
            f"| {r['cpu_ceiling_tests_per_second']} | {r['load_before']}, {r['load_after']} |"
        )
    lines += ["", *setup["overheads"]]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", default="1,2,4,8", help="worker counts (default 1,2,4,8)")
    parser.add_argument("--findings", type=int, default=24)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sleep", default="0.2", help="seconds the test sleeps (default 0.2)")
    parser.add_argument("--compare-local", action="store_true", help="also --executor local")
    parser.add_argument(
        "--dask-defaults", action="store_true", help="workers with nannies and Dask's defaults"
    )
    default_out = ROOT / "benchmarks" / "results" / f"{date.today()}-triage-scaling"
    parser.add_argument("--out", type=Path, default=default_out, help="NAME of NAME.json/.md")
    args = parser.parse_args(argv)
    counts = [int(k) for k in args.workers.split(",")]
    rows: list[dict[str, Any]] = []
    logs = Path(tempfile.mkdtemp(prefix="triage-scaling-logs-"))
    print(f"logs of the triages and the dask processes: {logs}", flush=True)
    kinds = ["dask", "local"] if args.compare_local else ["dask"]
    with tempfile.TemporaryDirectory(prefix="triage-scaling-") as scratch:
        for workers in counts:
            for kind in kinds:
                repo = Path(scratch) / f"repo-{kind}-{workers}"
                build(repo, args)
                before = cpu_seconds()
                if kind == "local":
                    result = triage(repo, "local", workers, logs)
                else:
                    with cluster(workers, logs, lean=not args.dask_defaults) as address:
                        result = triage(repo, address.replace("tcp://", "dask://"), workers, logs)
                result["cpu_seconds"] = cpu_seconds() - before
                rows.append(row(kind, workers, result))
                print(
                    f"{kind:5s} K={workers}: {rows[-1]['reduced']} reduced, {rows[-1]['tests']} "
                    f"tests in {rows[-1]['wall_seconds']} s",
                    flush=True,
                )
    overheads = []
    for r in rows:
        base = next(b for b in rows if b["executor"] == r["executor"])
        speedup = r["findings_per_hour"] / base["findings_per_hour"]
        r["efficiency"] = round(speedup * base["workers"] / r["workers"], 3)
        r["same_results"] = r["diffs"] == rows[0]["diffs"]
        local = [b for b in rows if b["executor"] == "local" and b["workers"] == r["workers"]]
        if r["executor"] == "dask" and local:
            extra = (r["wall_seconds"] - local[0]["wall_seconds"]) * r["workers"] / r["tests"]
            overheads.append(
                f"- K={r['workers']}: the Dask path costs {extra * 1000:.1f} ms per test "
                "over local threads, all included (wall difference x K / tests)"
            )
    gcc = subprocess.run(["gcc", "--version"], capture_output=True, text=True).stdout
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    setup = {
        "date": str(date.today()),
        "findings": args.findings,
        "seed": args.seed,
        "sleep": args.sleep,
        "dask_config": "defaults, with nannies" if args.dask_defaults else LEAN_DASK_CONFIG,
        "cpus": os.cpu_count(),
        "gcc": gcc.splitlines()[0] if gcc else "gcc missing",
        "python": platform.python_version(),
        "commit": commit,
        "command": " ".join(["benchmarks/triage/scaling.py", *(argv or sys.argv[1:])]),
        "overheads": overheads,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    for r in rows:
        del r["diffs"]
    args.out.with_suffix(".json").write_text(
        json.dumps({"setup": setup, "rows": rows}, indent=2) + "\n"
    )
    args.out.with_suffix(".md").write_text(markdown(rows, setup))
    print(markdown(rows, setup))
    return 0


if __name__ == "__main__":
    sys.exit(main())
