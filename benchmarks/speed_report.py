"""Pairwise against single-program, and --jobs 2 against --jobs 1, from benchmark runs.

    python benchmarks/speed_report.py --single-j1 S1.json... --single-j2 S2.json... \\
        --pairs-j2 P2.json... [--pairs-j1 P1.json...] --out FILE

reads the reports of `run.py --jobs 1`, `run.py --jobs 2`, `run.py --pairs
--algorithms ppr --jobs 2` and, if given, `--jobs 1` (C-Vise from whichever
report has it), and writes FILE.md and FILE.json: per case the wall times, the
pair's wall over the single-program wall on its variant and over C-Vise's, the
speed-up of two jobs over one for both, the tool's overhead, and whether the
results of one and two jobs are identical. It runs nothing.

Each option takes any number of reports (one per case, or one for many): a case
found in several reports of one configuration counts as several runs, and its
wall is their median. The machine this was built on moves by 5-8 % from run to
run, so a ratio of two single runs is uncertain by about 10 %: alternate the
configurations (one job, two jobs, one job, ...) and give every run. Medians are
given over all cases and over the public ones (those under `benchmarks/cases/`).
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any


def _by_case(reports: list[dict[str, Any]], tool: str | None) -> dict[str, dict[str, Any]]:
    """Each case's row, its wall the median of its runs (`walls` lists them, `runs` holds
    every run's row); `public` when the case's directory is under benchmarks/cases/."""
    runs: dict[str, list[dict[str, Any]]] = {}
    public: set[str] = set()
    for report in reports:
        for case in report.get("meta", {}).get("cases", []):
            if "/benchmarks/cases/" in f"/{case.get('path', '')}/":
                public.add(case["name"])
        for row in report["results"]:
            if tool is not None and row.get("tool") != tool:
                continue
            if row.get("algorithm", "ppr") != "ppr":
                continue
            runs.setdefault(row["case"], []).append(row)
    merged = {}
    for case, rows in runs.items():
        walls = [row["wall_seconds"] for row in rows if row.get("wall_seconds") is not None]
        merged[case] = {
            **rows[0],
            "wall_seconds": round(statistics.median(walls), 2) if walls else None,
            "walls": walls,
            "runs": rows,
            "public": case in public,
        }
    return merged


def _cvise(reports: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    rows = _by_case(reports, "cvise")
    for report in reports:
        rows.update({case: row for case, row in (report.get("cvise") or {}).items() if row})
    return rows


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 2) if a and b else None


def _same(runs: list[dict[str, Any]], keys: tuple[str, ...]) -> bool | None:
    """Whether every run's results (the files under `keys`) are byte-identical; None when
    a file is missing."""
    contents = []
    for run in runs:
        paths = [run.get(key) for key in keys]
        if not all(path and Path(path).exists() for path in paths):
            return None
        contents.append(tuple(Path(path).read_bytes() for path in paths))
    return len(set(contents)) == 1


def rows(
    single1: list[dict[str, Any]],
    single2: list[dict[str, Any]],
    pairs2: list[dict[str, Any]],
    pairs1: list[dict[str, Any]],
) -> list[dict[str, Any]]:
    s1, s2 = _by_case(single1, "gitreduce"), _by_case(single2, "gitreduce")
    p1, p2 = _by_case(pairs1, None), _by_case(pairs2, None)
    cvise = _cvise([*single1, *single2, *pairs2])
    table = []
    for case in s2:
        row: dict[str, Any] = {"case": case, "public": s2[case]["public"]}
        single, pair = s2[case], p2.get(case)
        row["single_j1_s"] = s1.get(case, {}).get("wall_seconds")
        row["single_j2_s"] = single["wall_seconds"]
        row["single_j1_walls"] = s1.get(case, {}).get("walls")
        row["single_j2_walls"] = single["walls"]
        row["single_tokens"] = single.get("final_tokens")
        row["single_overhead_pct"] = [run.get("overhead_percent") for run in single["runs"]]
        row["single_j2_over_j1"] = _ratio(row["single_j1_s"], row["single_j2_s"])
        if case in s1:
            row["single_same_j1_j2"] = _same([*s1[case]["runs"], *single["runs"]], ("result_file",))
        row["cvise_s"] = cvise.get(case, {}).get("wall_seconds")
        row["cvise_tokens"] = cvise.get(case, {}).get("final_tokens")
        if pair is not None:
            row["pair_j1_s"] = p1.get(case, {}).get("wall_seconds")
            row["pair_j2_s"] = pair["wall_seconds"]
            row["pair_j1_walls"] = p1.get(case, {}).get("walls")
            row["pair_j2_walls"] = pair["walls"]
            row["pair_tests"] = pair.get("tests_run")
            row["pair_sizes"] = [pair.get(k) for k in ("seed_tokens", "variant_tokens")]
            row["pair_diff"] = pair.get("diff_tokens")
            row["pair_checks_ok"] = all(run.get("checks_ok") for run in pair["runs"])
            row["pair_overhead_pct"] = [run.get("overhead_percent") for run in pair["runs"]]
            row["pair_over_single"] = _ratio(row["pair_j2_s"], row["single_j2_s"])
            row["pair_over_cvise"] = _ratio(row["pair_j2_s"], row["cvise_s"])
            row["pair_j2_over_j1"] = _ratio(row["pair_j1_s"], row["pair_j2_s"])
            if case in p1:
                row["pair_same_j1_j2"] = _same(
                    [*p1[case]["runs"], *pair["runs"]], ("seed_result", "variant_result")
                )
        table.append(row)
    return table


def _median(table: list[dict[str, Any]], key: str, *, public: bool = False) -> float | None:
    values = [
        row[key] for row in table if row.get(key) is not None and (row["public"] or not public)
    ]
    return round(statistics.median(values), 2) if values else None


COLUMNS = [
    ("case", "case"),
    ("single_j1_s", "single j1 s"),
    ("single_j2_s", "single j2 s"),
    ("single_j2_over_j1", "single j1/j2"),
    ("single_same_j1_j2", "same"),
    ("single_overhead_pct", "single overhead % (j2 runs)"),
    ("cvise_s", "C-Vise s"),
    ("pair_j1_s", "pair j1 s"),
    ("pair_j2_s", "pair j2 s"),
    ("pair_j2_over_j1", "pair j1/j2"),
    ("pair_same_j1_j2", "same"),
    ("pair_overhead_pct", "pair overhead % (j2 runs)"),
    ("pair_over_single", "pair/single"),
    ("pair_over_cvise", "pair/C-Vise"),
    ("pair_diff", "pair diff tokens"),
    ("pair_checks_ok", "checks"),
]


WALLS = ("single_j1_walls", "single_j2_walls", "pair_j1_walls", "pair_j2_walls")


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
        lines.append(
            f"- median {key}: {_median(table, key)} over all cases, "
            f"{_median(table, key, public=True)} over the public ones"
        )
    runs = sorted({len(row.get(key) or []) for row in table for key in WALLS} - {0})
    lines.append(f"- runs per case and configuration: {', '.join(map(str, runs))}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--single-j1", type=Path, nargs="+", required=True, metavar="JSON")
    parser.add_argument("--single-j2", type=Path, nargs="+", required=True, metavar="JSON")
    parser.add_argument("--pairs-j2", type=Path, nargs="+", required=True, metavar="JSON")
    parser.add_argument("--pairs-j1", type=Path, nargs="+", default=[], metavar="JSON")
    parser.add_argument("--out", type=Path, required=True, help="NAME of NAME.md/.json")
    args = parser.parse_args(argv)
    groups = [args.single_j1, args.single_j2, args.pairs_j2, args.pairs_j1]
    reports = [[json.loads(path.read_text()) for path in paths] for paths in groups]
    table = rows(*reports)
    args.out.with_suffix(".json").write_text(json.dumps(table, indent=2) + "\n")
    text = markdown(table, [str(path) for paths in groups for path in paths])
    args.out.with_suffix(".md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
