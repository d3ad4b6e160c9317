"""Two pairwise benchmark runs side by side: the same cases, before and after a change.

`python benchmarks/compare_pairs.py BEFORE/pairs.json AFTER/pairs.json --out FILE`
reads two reports of `run.py --pairs` and writes FILE.md (a before/after table
per case and algorithm: final seed, variant and difference tokens, tests, wall
time, overhead, the tests and seconds of one pass if asked) and FILE.json (the
rows, and both runs' meta). It runs nothing.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any


def _rows(report: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(r["case"], r["algorithm"]): r for r in report["results"]}


def _after(pair: list[int] | None) -> int | None:
    return pair[1] if pair else None


def _pass(result: dict[str, Any], label: str) -> dict[str, Any] | None:
    for entry in (result.get("stats") or {}).get("passes") or []:
        if entry.get("pass") == label:
            return entry
    return None


def compare(before: dict[str, Any], after: dict[str, Any], label: str | None) -> list[dict]:
    old, new = _rows(before), _rows(after)
    rows = []
    for key in [key for key in old if key in new]:
        b, a = old[key], new[key]
        row: dict[str, Any] = {"case": key[0], "algorithm": key[1]}
        for field in ("seed_tokens", "variant_tokens", "diff_tokens"):
            row[field] = [_after(b[field]), _after(a[field])]
        for field in ("tests_run", "wall_seconds", "overhead_seconds"):
            row[field] = [b.get(field), a.get(field)]
        row["checks_ok"] = [b.get("checks_ok"), a.get("checks_ok")]
        sizes = [row[f] for f in ("seed_tokens", "variant_tokens", "diff_tokens")]
        row["no_larger"] = all(x is not None and y is not None and y <= x for x, y in sizes)
        if label is not None:
            found = _pass(a, label)
            row["pass"] = (
                {k: found.get(k) for k in ("tests", "seconds", "tokens_removed")} if found else None
            )
        rows.append(row)
    return rows


def _cell(pair: list[Any], digits: int = 0) -> str:
    x, y = pair
    if x is None or y is None:
        return f"{x} → {y}"
    return f"{x:.{digits}f} → {y:.{digits}f}" if digits else f"{x} → {y}"


def markdown(rows: list[dict], before: dict, after: dict, label: str | None) -> str:
    meta_b, meta_a = before["meta"], after["meta"]
    lines = [
        "# Pairwise benchmark: before → after",
        "",
        f"before: {meta_b.get('gitreduce_version')} · `{' '.join(meta_b.get('gitreduce_cmd', []))}`"
        f" · {meta_b.get('date')} · jobs={meta_b.get('jobs')}",
        "",
        f"after: {meta_a.get('gitreduce_version')} · `{' '.join(meta_a.get('gitreduce_cmd', []))}`"
        f" · {meta_a.get('date')} · jobs={meta_a.get('jobs')}",
        "",
    ]
    header = (
        "| case | alg | seed | variant | diff | no larger | tests | wall s | overhead s | checks |"
    )
    rule = "|---|---|---:|---:|---:|---|---:|---:|---:|---|"
    if label is not None:
        header += f" {label}: tests / s / tokens removed |"
        rule += "---:|"
    lines += [header, rule]
    for row in rows:
        cells = [
            row["case"],
            row["algorithm"],
            _cell(row["seed_tokens"]),
            _cell(row["variant_tokens"]),
            _cell(row["diff_tokens"]),
            "yes" if row["no_larger"] else "**no**",
            _cell(row["tests_run"]),
            _cell(row["wall_seconds"], 1),
            _cell(row["overhead_seconds"], 1),
            " / ".join("ok" if ok else "FAILED" for ok in row["checks_ok"]),
        ]
        if label is not None:
            found = row.get("pass")
            cells.append(
                f"{found['tests']} / {found['seconds']:.1f} / {found['tokens_removed']}"
                if found
                else "-"
            )
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    walls = [r["wall_seconds"] for r in rows if None not in r["wall_seconds"]]
    tests = [r["tests_run"] for r in rows if None not in r["tests_run"]]
    if walls:
        lines += [
            "",
            f"Totals: wall {sum(w[0] for w in walls):.1f} → {sum(w[1] for w in walls):.1f} s,"
            f" tests {sum(t[0] for t in tests)} → {sum(t[1] for t in tests)};"
            f" median wall ratio after/before"
            f" {statistics.median(w[1] / w[0] for w in walls):.2f}.",
        ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path, help="pairs.json of the run before the change")
    parser.add_argument("after", type=Path, help="pairs.json of the run after it")
    parser.add_argument("--out", type=Path, required=True, help="FILE: writes FILE.md, FILE.json")
    parser.add_argument("--pass-label", default=None, help="a pass whose cost to show (after)")
    args = parser.parse_args(argv)
    before = json.loads(args.before.read_text())
    after = json.loads(args.after.read_text())
    rows = compare(before, after, args.pass_label)
    text = markdown(rows, before, after, args.pass_label)
    args.out.with_suffix(".md").write_text(text)
    record = {"before": before["meta"], "after": after["meta"], "rows": rows}
    args.out.with_suffix(".json").write_text(json.dumps(record, indent=1) + "\n")
    print(text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
