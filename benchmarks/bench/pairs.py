"""Pairwise mode (``--pairs``): git-reduce's algorithms on a seed and a variant.

Job: on cases that hold ``seed.EXT``, ``variant.EXT`` and ``test.sh``, run
git-reduce's pairwise mode once per ``--algorithms`` entry (ppr, dd, dd-empty)
on copies outside any git repository, check the reduced pair independently
(test.sh on both, tokens.py recounts), and report it against the stored C-Vise
baselines; or re-render the report of an earlier run (``--pairs-report``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shlex
import shutil
import sys
import tempfile
from dataclasses import fields
from pathlib import Path
from typing import Any

from bench.cases import (
    PairCase,
    discover_pair_cases,
    language_group,
    run_test,
    safe,
    usable_cases,
)
from bench.measure import (
    MACHINE_NOTE,
    LoadSampler,
    count_pair,
    inside_git_work_tree,
    loadavg,
    parse_json_output,
    run_group,
)
from bench.report import arrow, checks_cell, fmt, pair_notes, write_pair_report
from bench.results import DD_BASELINES, PairResult, Result
from bench.tools.cvise import cvise_from_baseline
from bench.tools.gitreduce import gitreduce_version, resolve_gitreduce, tool_environment


def _int_pair(value: Any) -> list[int | None]:
    if isinstance(value, list) and len(value) == 2 and all(isinstance(x, int) for x in value):
        return list(value)
    return [None, None]


def run_pair(case: PairCase, algorithm: str, scratch: Path, args: argparse.Namespace) -> PairResult:
    """``git-reduce --seed --variant --algorithm A`` on copies, then re-check the result."""
    res = PairResult(
        case=case.name, algorithm=algorithm, language=language_group(case.ext), origin=case.origin
    )
    if args.gitreduce_argv is None:
        res.error = "git-reduce not found (use --gitreduce-cmd)"
        return res
    work = scratch / "work"
    outdir = scratch / "out"
    cache = scratch / "xdg-cache"  # fresh verdict cache: nothing reused between runs
    for d in (work, outdir, cache):
        d.mkdir()
    if inside_git_work_tree(work):
        res.error = f"scratch dir {work} is inside a git work tree (set TMPDIR elsewhere)"
        return res
    seed = work / f"seed{case.ext}"
    variant = work / f"variant{case.ext}"
    shutil.copyfile(case.seed, seed)
    shutil.copyfile(case.variant, variant)
    test_cmd = f"{shlex.quote(str(case.test_sh))} {{}}"
    cmd = [
        *args.gitreduce_argv,
        "--seed",
        seed.name,
        "--variant",
        variant.name,
        "--test",
        test_cmd,
        "--jobs",
        str(args.jobs),
        "--algorithm",
        algorithm,
        "--output",
        str(outdir),
        "--json",
    ]
    env = tool_environment(cache)
    timeout = args.dd_timeout if algorithm in DD_BASELINES else args.timeout_per_case
    res.timeout_seconds = timeout
    log = args.out / "logs" / f"{safe(case.name)}-pairs-{algorithm}.log"
    stdout = scratch / "stdout.json"
    res.log_file, res.command = str(log), shlex.join(cmd)
    res.loadavg_before = loadavg()
    with LoadSampler() as sampler:
        rc, wall, _, _, timed_out = run_group(cmd, work, log, timeout, stdout=stdout, env=env)
    res.loadavg_after = loadavg()
    res.loadavg_during = sampler.summary()
    res.exit_status, res.wall_seconds, res.timed_out = rc, round(wall, 2), timed_out
    data = parse_json_output(stdout.read_text(errors="replace")) if stdout.is_file() else None
    if data is None:
        res.error = f"no JSON summary on stdout (exit {rc}{', timed out' if timed_out else ''})"
        return res
    res.stats = {k: v for k, v in data.items() if k not in ("commits",)}
    res.seed_tokens = _int_pair(data.get("seed_tokens"))
    res.variant_tokens = _int_pair(data.get("variant_tokens"))
    res.diff_tokens = _int_pair(data.get("diff_tokens"))
    for key in ("tests_run", "cache_hits"):
        if isinstance(data.get(key), int):
            setattr(res, key, data[key])
    res.interrupted = bool(data.get("interrupted"))
    tw, ov = data.get("wall_seconds"), data.get("overhead_seconds")
    if isinstance(tw, int | float):
        res.stats_wall_seconds = round(float(tw), 3)
    if isinstance(ov, int | float):
        res.overhead_seconds = round(float(ov), 3)
        if isinstance(tw, int | float) and tw > 0:
            res.overhead_percent = round(100.0 * float(ov) / float(tw), 1)

    # the reduced pair: where git-reduce says it wrote it (relative to its cwd)
    outs: list[Path | None] = []
    for key in ("seed_output", "variant_output"):
        value = data.get(key)
        outs.append((work / value).resolve() if isinstance(value, str) and value else None)
    seed_out, variant_out = outs
    if (
        seed_out is None
        or variant_out is None
        or not seed_out.is_file()
        or not variant_out.is_file()
    ):
        res.error = "git-reduce reported no (existing) seed_output/variant_output"
        return res
    kept = args.out / "results"
    kept.mkdir(parents=True, exist_ok=True)
    keep_seed = kept / f"{safe(case.name)}-{algorithm}.seed{case.ext}"
    keep_variant = kept / f"{safe(case.name)}-{algorithm}.variant{case.ext}"
    shutil.copyfile(seed_out, keep_seed)
    shutil.copyfile(variant_out, keep_variant)
    res.seed_result, res.variant_result = str(keep_seed), str(keep_variant)

    # independent checks: test.sh on both results, tokens.py on the originals and results
    res.seed_test_sh_exit = run_test(case, keep_seed)
    res.variant_test_sh_exit = run_test(case, keep_variant)
    res.seed_good = res.seed_test_sh_exit == 0
    res.variant_bad = res.variant_test_sh_exit == 1
    before = count_pair(case.seed, case.variant, args.tokens_py)
    after = count_pair(keep_seed, keep_variant, args.tokens_py)
    for i, counted in ((0, before), (1, after)):
        if counted is None:
            res.count_mismatches.append(f"tokens.py failed on the {('inputs', 'results')[i]}")
            continue
        for name, value in zip(("seed", "variant", "diff"), counted, strict=True):
            getattr(res, f"recount_{name}_tokens")[i] = value
            reported = getattr(res, f"{name}_tokens")[i]
            if reported != value:
                when = ("before", "after")[i]
                res.count_mismatches.append(
                    f"{name} {when}: git-reduce {fmt(reported)} != tokens.py {value}"
                )
    res.checks_ok = res.seed_good and res.variant_bad and not res.count_mismatches
    if rc not in (0, None) and not res.error:
        res.error = f"git-reduce exited with {rc}" + (" (interrupted)" if res.interrupted else "")
    return res


def _from_dict(cls: type, data: dict[str, Any]) -> Any:
    names = {f.name for f in fields(cls)}
    return cls(**{k: v for k, v in data.items() if k in names})


def rerender_pairs(args: argparse.Namespace) -> int:
    """``--pairs-report FILE``: rewrite pairs.md/pairs.json from an earlier pairs.json."""
    src = args.pairs_report.resolve()
    payload = json.loads(src.read_text())
    meta = payload["meta"]
    origins = {c["name"]: c.get("origin", "custom") for c in meta.get("cases", [])}
    results: list[PairResult] = []
    for data in payload["results"]:
        res = _from_dict(PairResult, data)
        if "origin" not in data:
            res.origin = origins.get(res.case, "custom")
        results.append(res)
    cvise = {k: (_from_dict(Result, v) if v else None) for k, v in payload["cvise"].items()}
    old_notes = meta.get("notes", [])
    case_notes = [n for n in old_notes if any(n.startswith((f"{c}:", f"{c} ")) for c in origins)]
    now = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    extra_notes = [str(n) for n in meta.get("extra_notes", [])]  # added by hand, kept
    meta["notes"] = [
        *pair_notes(bool(meta.get("bytecode_cached"))),
        *case_notes,
        *(n for n in extra_notes if n not in case_notes),
        f"Rendered {now} by run.py --pairs-report from the run's pairs.json (nothing re-run).",
    ]
    meta["rendered"] = now
    version = str(meta.get("gitreduce_version", ""))
    if (not version or version.startswith("error")) and meta.get("gitreduce_cmd"):
        # older runs asked ``git-reduce --version``, which the CLI lacks
        meta["gitreduce_version"] = gitreduce_version(meta["gitreduce_cmd"]) + " (when rendered)"
    write_pair_report(args, results, cvise, meta)
    return 0


def main_pairs(args: argparse.Namespace) -> int:
    if args.pairs_report is not None:
        return rerender_pairs(args)
    cases = discover_pair_cases(args.cases)
    if not cases:
        print("no pair cases (seed.EXT + variant.EXT + test.sh) found", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    args.gitreduce_argv = resolve_gitreduce(args.gitreduce_cmd)
    if args.gitreduce_argv is None:
        print("git-reduce not found (see --gitreduce-cmd)", file=sys.stderr)
        return 2
    notes = pair_notes(bytecode_cached=True)
    cases = usable_cases(cases, notes)
    meta: dict[str, Any] = {
        "mode": "pairs",
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": MACHINE_NOTE,
        "cpu_count": os.cpu_count(),
        "jobs": args.jobs,
        "timeout_per_case": args.timeout_per_case,
        "dd_timeout": args.dd_timeout,
        "algorithms": args.algorithm_list,
        "baseline_dir": str(args.baseline_dir),
        "gitreduce_cmd": args.gitreduce_argv,
        "gitreduce_version": gitreduce_version(args.gitreduce_argv),
        "bytecode_cached": True,
        "cases": [
            {"name": c.name, "path": str(c.path), "origin": c.origin, "language": c.ext}
            for c in cases
        ],
        "loadavg_start": loadavg(),
        "notes": notes,
    }
    cvise: dict[str, Result | None] = {}
    for case in cases:
        cvise[case.name] = cvise_from_baseline(case, args)
        if cvise[case.name] is None:
            notes.append(f"{case.name}: no C-Vise baseline in {args.baseline_dir}: no ratios.")
    results: list[PairResult] = []
    for case in cases:
        for alg in args.algorithm_list:
            stamp = f"{dt.datetime.now():%H:%M:%S}"
            print(
                f"[{stamp}] {case.name}: {alg} (load {loadavg()}) ...", file=sys.stderr, flush=True
            )
            with tempfile.TemporaryDirectory(prefix=f"pairs-{safe(case.name)}-{alg}-") as tmp:
                res = run_pair(case, alg, Path(tmp), args)
            print(
                f"    -> seed {arrow(res.seed_tokens)}, variant {arrow(res.variant_tokens)}, "
                f"diff {arrow(res.diff_tokens)}, {fmt(res.wall_seconds)} s"
                + (" (timed out)" if res.timed_out else "")
                + f", {fmt(res.tests_run)} tests, checks: {checks_cell(res)}"
                + (f", error: {res.error}" if res.error else ""),
                file=sys.stderr,
                flush=True,
            )
            if res.timed_out:
                notes.append(
                    f"{case.name}: {alg} hit the {fmt(res.timeout_seconds, 0)} s limit; "
                    "reported is the best pair when it was stopped."
                )
            results.append(res)
    meta["loadavg_end"] = loadavg()
    write_pair_report(args, results, cvise, meta)
    return 0
