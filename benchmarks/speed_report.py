"""Pairwise against single-program, and --jobs 2 against --jobs 1, from four benchmark runs.

    python benchmarks/speed_report.py SINGLE_J1.json SINGLE_J2.json PAIRS_J2.json \\
        [--pairs-j1 PAIRS_J1.json] --out FILE

reads the reports of `run.py --jobs 1`, `run.py --jobs 2`, `run.py --pairs
--algorithms ppr --jobs 2` and, if given, `--jobs 1` (same cases; C-Vise from
whichever report has it), and writes FILE.md and FILE.json: per case the wall times, the pair's
wall over the single-program wall on its variant and over C-Vise's, the
speed-up of two jobs over one for both, the tool's overhead, and whether the
results of one and two jobs are identical. It runs nothing.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any


def _by_case(report: dict[str, Any], tool: str | None) -> dict[str, dict[str, Any]]:
    rows = {}
    for row in report["results"]:
        if tool is not None and row.get("tool") != tool:
            continue
        if row.get("algorithm", "ppr") != "ppr":
            continue
        rows[row["case"]] = row
    return rows


def _cvise(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    rows = _by_case(report, "cvise")
    rows.update({case: row for case, row in (report.get("cvise") or {}).items() if row})
    return rows


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 2) if a and b else None


def _same(a: str | None, b: str | None) -> bool | None:
    if not a or not b or not Path(a).exists() or not Path(b).exists():
        return None
    return Path(a).read_bytes() == Path(b).read_bytes()


def rows(single1: dict, single2: dict, pairs2: dict, pairs1: dict | None) -> list[dict[str, Any]]:
    s1, s2 = _by_case(single1, "gitreduce"), _by_case(single2, "gitreduce")
    p1, p2 = _by_case(pairs1, None) if pairs1 else {}, _by_case(pairs2, None)
    cvise = {**_cvise(single1), **_cvise(single2), **_cvise(pairs2)}
    table = []
    for case in s2:
        row: dict[str, Any] = {"case": case}
        single, pair = s2[case], p2.get(case)
        row["single_j1_s"] = s1.get(case, {}).get("wall_seconds")
        row["single_j2_s"] = single["wall_seconds"]
        row["single_tokens"] = single.get("final_tokens")
        row["single_overhead_pct"] = single.get("overhead_percent")
        row["single_j2_over_j1"] = _ratio(row["single_j1_s"], row["single_j2_s"])
        row["single_same_j1_j2"] = _same(
            s1.get(case, {}).get("result_file"), single.get("result_file")
        )
        row["cvise_s"] = cvise.get(case, {}).get("wall_seconds")
        row["cvise_tokens"] = cvise.get(case, {}).get("final_tokens")
        if pair is not None:
            row["pair_j1_s"] = p1.get(case, {}).get("wall_seconds")
            row["pair_j2_s"] = pair["wall_seconds"]
            row["pair_tests"] = pair.get("tests_run")
            row["pair_sizes"] = [pair.get(k) for k in ("seed_tokens", "variant_tokens")]
            row["pair_diff"] = pair.get("diff_tokens")
            row["pair_checks_ok"] = pair.get("checks_ok")
            row["pair_overhead_pct"] = pair.get("overhead_percent")
            row["pair_over_single"] = _ratio(row["pair_j2_s"], row["single_j2_s"])
            row["pair_over_cvise"] = _ratio(row["pair_j2_s"], row["cvise_s"])
            row["pair_j2_over_j1"] = _ratio(row["pair_j1_s"], row["pair_j2_s"])
            if case in p1:
                row["pair_same_j1_j2"] = all(
                    _same(p1[case].get(k), pair.get(k)) for k in ("seed_result", "variant_result")
                )
        table.append(row)
    return table


def _median(table: list[dict[str, Any]], key: str) -> float | None:
    values = [row[key] for row in table if row.get(key) is not None]
    return round(statistics.median(values), 2) if values else None


COLUMNS = [
    ("case", "case"),
    ("single_j1_s", "single j1 s"),
    ("single_j2_s", "single j2 s"),
    ("single_j2_over_j1", "single j1/j2"),
    ("single_same_j1_j2", "same"),
    ("single_overhead_pct", "single overhead %"),
    ("cvise_s", "C-Vise s"),
    ("pair_j1_s", "pair j1 s"),
    ("pair_j2_s", "pair j2 s"),
    ("pair_j2_over_j1", "pair j1/j2"),
    ("pair_same_j1_j2", "same"),
    ("pair_overhead_pct", "pair overhead %"),
    ("pair_over_single", "pair/single"),
    ("pair_over_cvise", "pair/C-Vise"),
    ("pair_diff", "pair diff tokens"),
    ("pair_checks_ok", "checks"),
]


def markdown(table: list[dict[str, Any]], sources: list[str]) -> str:
    lines = [
        "# Pairwise vs single-program, two jobs vs one",
        "",
        "Sources: " + ", ".join(f"`{s}`" for s in sources),
        "",
        "| " + " | ".join(title for _, title in COLUMNS) + " |",
        "| " + " | ".join("---" for _ in COLUMNS) + " |",
    ]
    for row in table:
        lines.append("| " + " | ".join(str(row.get(key, "")) for key, _ in COLUMNS) + " |")
    lines.append("")
    for key in ("single_j2_over_j1", "pair_j2_over_j1", "pair_over_single", "pair_over_cvise"):
        lines.append(f"- median {key}: {_median(table, key)}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for name in ("single_j1", "single_j2", "pairs_j2"):
        parser.add_argument(name, type=Path)
    parser.add_argument("--pairs-j1", type=Path, help="a pairwise run with --jobs 1")
    parser.add_argument("--out", type=Path, required=True, help="NAME of NAME.md/.json")
    args = parser.parse_args(argv)
    paths = [args.single_j1, args.single_j2, args.pairs_j2]
    reports = [json.loads(path.read_text()) for path in paths]
    pairs1 = json.loads(args.pairs_j1.read_text()) if args.pairs_j1 else None
    table = rows(*reports, pairs1)
    args.out.with_suffix(".json").write_text(json.dumps(table, indent=2) + "\n")
    text = markdown(table, [str(p) for p in [*paths, *([args.pairs_j1] if pairs1 else [])]])
    args.out.with_suffix(".md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
