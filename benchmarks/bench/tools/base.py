"""What every tool adapter shares: the `Tool` interface, and measuring a final file.

Job: the hooks through which the single-program runner drives a tool, the
check of a tool's final file (tokens, the case's test.sh, a kept copy), test
runs counted by a timing wrapper, and the run of a C-Vise-style reducer that
takes an interestingness script and reduces the variant in place.
"""

from __future__ import annotations

import argparse
import shlex
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench.cases import Case, run_test, safe
from bench.measure import (
    busy_seconds,
    count_tokens,
    loadavg,
    read_timing_log,
    run_group,
    write_timing_wrapper,
)
from bench.results import Result


@dataclass(frozen=True)
class Tool:
    """A compared reducer, as the single-program runner drives it (all hooks but `run` optional).

    `run` reduces a copy of the case's variant in a fresh scratch dir, then
    measures and checks the result. Before any case, `prepare` finds the tool,
    keeps on the arguments what `run` needs and adds notes on what is missing;
    `available` says whether to run it at all; `version` is the line recorded
    in results.json (None: none). With ``--use-baselines``, `baseline` gives a
    stored result instead of a run (None when there is none); with
    ``--record-baselines``, `record` stores a live run's result and says where.
    """

    run: Callable[[Case, Path, argparse.Namespace], Result]
    prepare: Callable[[argparse.Namespace, list[str]], None] | None = None
    available: Callable[[argparse.Namespace], bool] | None = None
    version: Callable[[argparse.Namespace], str | None] | None = None
    baseline: Callable[[Case, argparse.Namespace], Result | None] | None = None
    record: Callable[[Case, Result, argparse.Namespace], Path | None] | None = None


def write_interesting_adapter(path: Path, case: Case) -> None:
    """C-Vise-style adapter (exit 0 iff test.sh exits 1) for cases without interesting.sh."""
    path.write_text(
        "#!/bin/bash\n"
        f"f=${{1:-{shlex.quote(case.variant.name)}}}\n"
        f'{shlex.quote(str(case.test_sh))} "$f"\n'
        "[ $? -eq 1 ]\n"
    )
    path.chmod(0o755)


def finish(
    res: Result,
    case: Case,
    final: Path,
    args: argparse.Namespace,
    keep_as: Path,
) -> None:
    """Count tokens of the final file, check it with test.sh, keep a copy."""
    res.initial_tokens = count_tokens(case.variant, args.tokens_py)
    res.final_tokens = count_tokens(final, args.tokens_py)
    res.final_test_sh_exit = run_test(case, final)
    res.reproduces = res.final_test_sh_exit == 1
    if final.is_file():
        keep_as.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(final, keep_as)
        res.result_file = str(keep_as)


def apply_wrapper_counts(
    res: Result, timing_log: Path, t0: float, t1: float, set_overhead: bool
) -> None:
    """Test runs, and with `set_overhead` the overhead, from the timing wrapper's log."""
    spans = read_timing_log(timing_log)
    res.tests_counted = len(spans)
    if res.tests_run is None:
        res.tests_run = len(spans)
    busy = busy_seconds(spans, t0, t1)
    res.extra["wrapper_busy_seconds"] = round(busy, 3)
    if spans:
        res.extra["wrapper_test_seconds_sum"] = round(sum(e - s for s, e in spans), 3)
    if set_overhead and res.wall_seconds:
        res.overhead_seconds = round(max(0.0, res.wall_seconds - busy), 3)
        res.overhead_percent = round(100.0 * res.overhead_seconds / res.wall_seconds, 1)
        res.overhead_source = "wrapper"


def _interesting_script(case: Case, scratch: Path) -> Path:
    script = case.path / "interesting.sh"
    if script.is_file():
        return script
    adapter = scratch / "interesting-adapter.sh"
    write_interesting_adapter(adapter, case)
    return adapter


def run_on_interesting(
    res: Result, case: Case, scratch: Path, args: argparse.Namespace, argv: list[str]
) -> Result:
    """Run ``argv + [<counting wrapper of interesting.sh>, variant.EXT]`` in ``scratch``.

    Shared by the C-Vise-style tools (they reduce the copy of the variant in place):
    the run is timed in its own process group, test runs and overhead are taken from
    the wrapper, and the final file is measured, checked and kept (``finish``).
    """
    work = scratch / case.variant.name
    shutil.copyfile(case.variant, work)
    timing_log = scratch / "test-runs.log"
    wrapper = scratch / "counting-interesting.sh"
    write_timing_wrapper(wrapper, timing_log, _interesting_script(case, scratch))
    cmd = [*argv, str(wrapper), work.name]
    log = args.out / "logs" / f"{safe(case.name)}-{res.tool}.log"
    res.log_file, res.command = str(log), shlex.join(cmd)
    load0 = loadavg()
    rc, wall, t0, t1, timed_out = run_group(cmd, scratch, log, args.timeout_per_case)
    res.exit_status, res.wall_seconds, res.timed_out = rc, round(wall, 2), timed_out
    res.extra.update(loadavg_before=load0, loadavg_after=loadavg())
    apply_wrapper_counts(res, timing_log, t0, t1, set_overhead=True)
    keep_as = args.out / "results" / f"{safe(case.name)}-{res.tool}{case.ext}"
    finish(res, case, work, args, keep_as)
    if rc not in (0, None):
        res.error = f"{res.tool} exited with {rc}"
    return res
