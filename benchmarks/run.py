#!/usr/bin/env python3
"""Benchmark git-reduce against C-Vise (and shrinkray, when installed).

usage: python benchmarks/run.py [--cases DIR ...] [--tools gitreduce,cvise,shrinkray]
                                [--jobs 2] [--timeout-per-case S] [--out benchmarks/out]
                                [--use-baselines] [--record-baselines]
                                [--baseline-dir benchmarks/baselines] [--gitreduce-cmd CMD]
       python benchmarks/run.py --pairs [--algorithms ppr,dd,dd-empty] [--dd-timeout S]
                                [--cases ...]

A case is a folder holding ``variant.EXT`` and ``test.sh`` (git-bisect-run convention:
0 good, 1 bad = bug present, 125 unusable) and usually ``interesting.sh`` (exit 0 iff
the bug is present; generated on the fly when missing).  Every tool runs on a copy of
the variant in a fresh scratch dir, cases and tools strictly one after another.  Sizes
are counted only with ``benchmarks/tools/tokens.py``.  Every final file is checked
with the case's ``test.sh`` (it must exit 1).

``--pairs [--algorithms ppr,dd,dd-empty] [--dd-timeout S]`` runs git-reduce's pairwise mode
instead, on cases holding ``seed.EXT``, ``variant.EXT`` and ``test.sh``: each
algorithm on copies in a fresh scratch dir outside any git repository with a fresh
``XDG_CACHE_HOME``; the reduced seed must make ``test.sh`` exit 0 and the reduced
variant exit 1, and ``tokens.py SEED VARIANT`` must agree with the sizes git-reduce
reports.  PPR is compared with the stored C-Vise baselines and with DD
(``pairs.md`` / ``pairs.json`` in ``--out``).

This script only reads the options; the ``bench`` package beside it does the work.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bench.pairs import main_pairs
from bench.paths import BASELINE_DIR, BENCHMARKS, TOKENS_PY, VENV_GITREDUCE
from bench.results import PAIR_ALGORITHMS
from bench.single import main_single
from bench.tools import ALL_TOOLS


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description="Benchmark git-reduce against C-Vise / shrinkray on reduction cases."
    )
    ap.add_argument(
        "--cases",
        nargs="+",
        type=Path,
        metavar="DIR",
        help="case dirs, or dirs of case dirs (default: benchmarks/cases and fixtures/)",
    )
    ap.add_argument(
        "--tools",
        default=",".join(ALL_TOOLS),
        help="comma-separated subset of gitreduce,cvise,shrinkray",
    )
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument(
        "--timeout-per-case",
        type=float,
        default=2400.0,
        metavar="S",
        help="wall-clock limit per case and tool, seconds (default 2400)",
    )
    ap.add_argument("--out", type=Path, default=BENCHMARKS / "out")
    ap.add_argument(
        "--use-baselines",
        action="store_true",
        help="for cvise, read cvise-<case>.json from the baseline dir instead of "
        "running it (runs it when no baseline exists)",
    )
    ap.add_argument(
        "--record-baselines",
        action="store_true",
        help="after each live cvise run, write cvise-<case>.json and the reduced file "
        "into the baseline dir (with --use-baselines: only for cases that had none)",
    )
    ap.add_argument(
        "--baseline-dir",
        type=Path,
        default=BASELINE_DIR,
        metavar="DIR",
        help="where C-Vise baselines are read and recorded (default: benchmarks/baselines)",
    )
    ap.add_argument(
        "--gitreduce-cmd",
        default=None,
        help=f"git-reduce executable/command (default: git-reduce on PATH, else {VENV_GITREDUCE})",
    )
    ap.add_argument(
        "--count-wrapper",
        action="store_true",
        help="always wrap test.sh for git-reduce to count runs/overhead "
        "independently (default: only when --json-stats is unsupported)",
    )
    ap.add_argument(
        "--shrinkray-no-restart", action="store_true", help="pass --no-restart to shrinkray"
    )
    ap.add_argument("--tokens-py", type=Path, default=TOKENS_PY)
    ap.add_argument(
        "--pairs",
        action="store_true",
        help="pairwise mode: run git-reduce --seed/--variant on cases with seed.EXT, "
        "variant.EXT and test.sh; writes pairs.md / pairs.json (--tools is ignored)",
    )
    ap.add_argument(
        "--algorithms",
        default=",".join(PAIR_ALGORITHMS),
        help="with --pairs: comma-separated subset of ppr,dd,dd-empty (default all three)",
    )
    ap.add_argument(
        "--dd-timeout",
        type=float,
        default=None,
        metavar="S",
        help="with --pairs: wall-clock limit of a dd run, seconds (default: --timeout-per-case)",
    )
    ap.add_argument(
        "--pairs-report",
        type=Path,
        default=None,
        metavar="PAIRS_JSON",
        help="with --pairs: only re-render pairs.md / pairs.json into --out from an "
        "earlier run's pairs.json (runs nothing)",
    )
    args = ap.parse_args(argv)
    algorithms = [a.strip() for a in args.algorithms.split(",") if a.strip()]
    bad_alg = [a for a in algorithms if a not in PAIR_ALGORITHMS]
    if bad_alg:
        ap.error(f"unknown algorithm(s): {', '.join(bad_alg)}")
    if not algorithms:
        ap.error("--algorithms is empty")
    args.algorithm_list = algorithms
    if args.dd_timeout is None:
        args.dd_timeout = args.timeout_per_case
    if args.pairs_report is not None and not args.pairs:
        ap.error("--pairs-report needs --pairs")
    if args.pairs and args.record_baselines:
        ap.error("--record-baselines does not apply to --pairs")
    tools = [t.strip() for t in args.tools.split(",") if t.strip()]
    bad = [t for t in tools if t not in ALL_TOOLS]
    if bad:
        ap.error(f"unknown tool(s): {', '.join(bad)}")
    if args.record_baselines and "cvise" not in tools:
        ap.error("--record-baselines needs cvise in --tools")
    args.tool_list = tools
    args.out = args.out.resolve()
    args.baseline_dir = args.baseline_dir.resolve()
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.pairs:
        return main_pairs(args)
    return main_single(args)


if __name__ == "__main__":
    sys.exit(main())
