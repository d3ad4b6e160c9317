"""The reports: Markdown tables and JSON payloads, ratios and their medians.

Job: render what the runs measured, in single-program mode (results.md and
results.json: every tool on every case, git-reduce / C-Vise ratios) and in
pairwise mode (pairs.md and pairs.json: each algorithm on every pair, PPR's
ratios against C-Vise and the DD baselines, medians against their targets).
Rendering runs nothing, so a pairs report can be re-rendered from its JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
from dataclasses import asdict
from typing import Any

from bench.results import DD_BASELINES, PAIR_ALGORITHMS, PairResult, Result

# the acceptance targets of issue 4 (shown next to the medians)
PAIR_TARGETS: dict[str, Any] = {
    "diff_median_c_cpp_max": 10,
    "diff_rust_max": 4,
    "variant_vs_cvise_max": 1.1,
    "wall_vs_cvise_max": 1.0,
    "diff_ppr_vs_dd_max": 0.5,
    "size_dd_vs_ppr_min": 10.0,
}


def ratio(a: float | int | None, b: float | int | None) -> float | None:
    if a is None or b is None or b == 0:
        return None
    return a / b


def fmt(v: Any, digits: int = 1) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)


def compute_ratios(results: list[Result]) -> dict[str, dict[str, float | None]]:
    """Per case: gitreduce/cvise ratios of final tokens and wall seconds."""
    by: dict[tuple[str, str], Result] = {(r.case, r.tool): r for r in results}
    out: dict[str, dict[str, float | None]] = {}
    for case in dict.fromkeys(r.case for r in results):
        g, c = by.get((case, "gitreduce")), by.get((case, "cvise"))
        if g is None or c is None:
            continue
        usable = g.reproduces and c.reproduces
        out[case] = {
            "tokens": ratio(g.final_tokens, c.final_tokens) if usable else None,
            "wall": ratio(g.wall_seconds, c.wall_seconds) if usable else None,
        }
    return out


def summarize(ratios: dict[str, dict[str, float | None]]) -> dict[str, Any]:
    summary: dict[str, Any] = {}
    for key in ("tokens", "wall"):
        vals = [r[key] for r in ratios.values() if r[key] is not None]
        summary[f"median_{key}_ratio"] = statistics.median(vals) if vals else None
        summary[f"n_{key}_ratio"] = len(vals)
    return summary


def markdown(
    results: list[Result],
    ratios: dict[str, dict[str, float | None]],
    summary: dict[str, Any],
    meta: dict[str, Any],
) -> str:
    head = [
        "case",
        "tool",
        "initial tokens",
        "final tokens",
        "wall s",
        "tests run",
        "overhead %",
        "reproduces",
        "tokens gr/cv",
        "wall gr/cv",
    ]
    lines = [
        "# git-reduce benchmark results",
        "",
        f"{meta['date']} · {meta['machine']} · jobs={meta['jobs']} · "
        f"timeout/case={meta['timeout_per_case']} s",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "|".join(["---"] * 2 + ["---:"] * 6 + ["---:"] * 2) + "|",
    ]
    for r in results:
        wall = fmt(r.wall_seconds)
        if r.timed_out:
            wall += " (timeout)"
        if r.source == "baseline":
            wall += " (baseline)"
        rr = ratios.get(r.case, {}) if r.tool == "gitreduce" else {}
        tool = f"{r.tool} ({r.error})" if r.error else r.tool
        lines.append(
            "| "
            + " | ".join(
                [
                    r.case,
                    tool,
                    fmt(r.initial_tokens),
                    fmt(r.final_tokens),
                    wall,
                    fmt(r.tests_run),
                    fmt(r.overhead_percent) if r.tool == "gitreduce" else "",
                    fmt(r.reproduces),
                    fmt(rr.get("tokens"), 2) if rr else "",
                    fmt(rr.get("wall"), 2) if rr else "",
                ]
            )
            + " |"
        )
    lines += [
        "",
        "**Summary:** median gitreduce/cvise ratio: final tokens "
        f"{fmt(summary.get('median_tokens_ratio'), 2)} "
        f"(over {summary.get('n_tokens_ratio', 0)} cases), wall "
        f"{fmt(summary.get('median_wall_ratio'), 2)} "
        f"(over {summary.get('n_wall_ratio', 0)} cases). Ratios < 1 favour git-reduce; "
        "ratios are only computed when both final files reproduce.",
        "",
    ]
    lines += pass_profile_lines(
        pass_profiles([(r.case, r.extra.get("stats")) for r in results if r.tool == "gitreduce"])
    )
    notes = [f"- {n}" for n in meta.get("notes", [])]
    if notes:
        lines += ["Notes:", "", *notes, ""]
    return "\n".join(lines)


PROFILE_FIGURES = ("runs", "tests", "cache_hits", "syntax_rejected", "successes")


def pass_profiles(rows: list[tuple[str, Any]]) -> list[tuple[str, list[dict[str, Any]]]]:
    """(run, its per-pass profile) for each run whose stats (`--json`) carry one."""
    found = []
    for run, stats in rows:
        passes = stats.get("passes") if isinstance(stats, dict) else None
        if isinstance(passes, list) and passes:
            found.append((run, [p for p in passes if isinstance(p, dict) and "pass" in p]))
    return found


def pass_profile_lines(profiles: list[tuple[str, list[dict[str, Any]]]]) -> list[str]:
    """What each pass cost and gained, summed over the runs, then run by run: the
    `--stats` table of every git-reduce run in the report. Nested labels
    (`min-commonality/tree`) count their seconds in their outer pass's too, so
    the seconds column is not a sum."""
    if not profiles:
        return []
    totals: dict[str, dict[str, float]] = {}
    for _, passes in profiles:
        for entry in passes:
            total = totals.setdefault(str(entry["pass"]), {"in": 0.0})
            total["in"] += 1
            for key in (*PROFILE_FIGURES, "tokens_removed", "seconds"):
                value = entry.get(key)
                if isinstance(value, int | float):
                    total[key] = total.get(key, 0.0) + value
    all_tests = sum(t.get("tests", 0.0) for t in totals.values()) or 1.0
    head = "| pass | runs in | tests | share of tests | cached | syntax-rejected | successes "
    head += "| tokens removed | s |"
    lines = [
        "## Per-pass profile (git-reduce)",
        "",
        f"Summed over the {len(profiles)} git-reduce runs above (each run's own table below; "
        "`tokens removed` counts what the best text lost while the pass ran; a nested "
        "label's seconds are part of its outer pass's).",
        "",
        head,
        "|---|" + "---:|" * 8,
    ]
    for label, total in sorted(totals.items(), key=lambda item: -item[1].get("tests", 0.0)):
        lines.append(
            f"| {label} | {int(total['in'])} | {int(total.get('tests', 0))} | "
            f"{100.0 * total.get('tests', 0.0) / all_tests:.1f} % | "
            f"{int(total.get('cache_hits', 0))} | {int(total.get('syntax_rejected', 0))} | "
            f"{int(total.get('successes', 0))} | {int(total.get('tokens_removed', 0))} | "
            f"{total.get('seconds', 0.0):.1f} |"
        )
    lines += ["", "<details><summary>run by run</summary>", ""]
    lines += [
        "| run | pass | runs | tests | cached | syntax-rejected | successes | tokens removed | s |",
        "|---|---|" + "---:|" * 7,
    ]
    for run, passes in profiles:
        for entry in passes:
            figures = [fmt(entry.get(key)) for key in (*PROFILE_FIGURES, "tokens_removed")]
            lines.append(
                f"| {run} | {entry['pass']} | " + " | ".join(figures) + " | "
                f"{fmt(entry.get('seconds'))} |"
            )
    return [*lines, "", "</details>", ""]


def write_report(args: argparse.Namespace, results: list[Result], meta: dict[str, Any]) -> None:
    """results.md (also on stdout) and results.json in ``--out``."""
    ratios = compute_ratios(results)
    summary = summarize(ratios)
    md = markdown(results, ratios, summary, meta)
    payload = {
        "meta": meta,
        "results": [asdict(r) for r in results],
        "ratios": ratios,
        "summary": summary,
    }
    (args.out / "results.json").write_text(json.dumps(payload, indent=2) + "\n")
    (args.out / "results.md").write_text(md)
    print(md)


def compute_pair_ratios(
    results: list[PairResult], cvise: dict[str, Result | None]
) -> dict[str, dict[str, float | None]]:
    """Per case, PPR's ratios (issue 4): vs C-Vise's single-program run and vs DD.

    Sizes are the runner's tokens.py counts; a ratio is only computed when the pairs
    involved passed their checks and the C-Vise result reproduces (the wall ratio also
    needs a PPR run that finished).
    """
    by = {(r.case, r.algorithm): r for r in results}
    out: dict[str, dict[str, float | None]] = {}
    for case in dict.fromkeys(r.case for r in results):
        p, c = by.get((case, "ppr")), cvise.get(case)
        if p is None:
            continue
        p_ok = p.checks_ok
        c_ok = c is not None and c.reproduces
        p_var, p_diff, p_size = p.recount_variant_tokens[1], p.recount_diff_tokens[1], p.size_after
        out[case] = {
            "variant_vs_cvise": ratio(p_var, c.final_tokens) if p_ok and c_ok and c else None,
            # a stopped run's wall is only a lower bound: no ratio
            "wall_vs_cvise": (
                ratio(p.wall_seconds, c.wall_seconds)
                if p_ok and c_ok and c and not (p.timed_out or p.interrupted)
                else None
            ),
        }
        for algorithm, key in DD_BASELINES.items():
            d = by.get((case, algorithm))
            both = p_ok and d is not None and d.checks_ok
            out[case][f"diff_ppr_vs_{key}"] = (
                ratio(p_diff, d.recount_diff_tokens[1]) if both and d else None
            )
            out[case][f"size_{key}_vs_ppr"] = ratio(d.size_after, p_size) if both and d else None
    return out


def _median(values: list[float | int | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return statistics.median(vals) if vals else None


def summarize_pairs(
    results: list[PairResult], ratios: dict[str, dict[str, float | None]]
) -> dict[str, Any]:
    """Medians per algorithm over results that passed their checks.

    Only the public cases (benchmarks/cases) count when there are any: the
    fixtures are small known-answer pairs, reported but kept out of the medians.
    """
    public = [r for r in results if r.origin == "shared"]
    pool = public or results
    counted = list(dict.fromkeys(r.case for r in pool))
    summary: dict[str, Any] = {
        "targets": PAIR_TARGETS,
        "cases_counted": counted,
        "cases_not_counted": [
            c for c in dict.fromkeys(r.case for r in results) if c not in counted
        ],
    }
    for alg in dict.fromkeys(r.algorithm for r in pool):
        ok = [r for r in pool if r.algorithm == alg and r.checks_ok]
        c_cpp = [r.recount_diff_tokens[1] for r in ok if r.language == "c/c++"]
        rust = [r.recount_diff_tokens[1] for r in ok if r.language == "rust"]
        summary[alg] = {
            "median_diff_c_cpp": _median(c_cpp),
            "n_c_cpp": len(c_cpp),
            "diff_rust": _median(rust),  # the Rust case's diff (median if several)
            "n_rust": len(rust),
            "median_variant_tokens": _median([r.recount_variant_tokens[1] for r in ok]),
            "median_wall_seconds": _median([r.wall_seconds for r in ok]),
            "not_verified": [r.case for r in pool if r.algorithm == alg and not r.checks_ok],
            "timed_out": [r.case for r in pool if r.algorithm == alg and r.timed_out],
        }
    ratio_keys = ["variant_vs_cvise", "wall_vs_cvise"]
    for key in DD_BASELINES.values():
        ratio_keys += [f"diff_ppr_vs_{key}", f"size_{key}_vs_ppr"]
    for key in ratio_keys:
        vals = [r[key] for c, r in ratios.items() if c in counted and r[key] is not None]
        summary[f"median_{key}"] = statistics.median(vals) if vals else None
        summary[f"n_{key}"] = len(vals)
    return summary


def arrow(pair: list[int | None]) -> str:
    return f"{fmt(pair[0])} → {fmt(pair[1])}"


def checks_cell(r: PairResult) -> str:
    if r.error and r.seed_result is None:
        return f"error: {r.error}"
    problems: list[str] = []
    if not r.seed_good:
        problems.append(f"seed test.sh → {fmt(r.seed_test_sh_exit)} (want 0)")
    if not r.variant_bad:
        problems.append(f"variant test.sh → {fmt(r.variant_test_sh_exit)} (want 1)")
    problems += r.count_mismatches
    return "; ".join(problems) if problems else "ok"


def _load_cell(r: PairResult) -> str:
    b = r.loadavg_before[0] if r.loadavg_before else None
    a = r.loadavg_after[0] if r.loadavg_after else None
    cell = f"{fmt(b, 2)} / {fmt(a, 2)}"
    during = r.loadavg_during
    if during.get("max") is not None:
        cell += f" (median {fmt(during.get('median'), 1)}, max {fmt(during['max'], 1)})"
    return cell


def pair_markdown(
    results: list[PairResult],
    ratios: dict[str, dict[str, float | None]],
    summary: dict[str, Any],
    cvise: dict[str, Result | None],
    meta: dict[str, Any],
) -> str:
    head = [
        "case",
        "algorithm",
        "seed tokens",
        "variant tokens",
        "diff tokens",
        "tests",
        "wall s",
        "overhead %",
        "checks",
        "variant / C-Vise",
        "wall / C-Vise",
        "diff PPR/DD",
        "size DD/PPR",
        "diff PPR/DD-empty",
        "size DD-empty/PPR",
        "load 1m before / after (during)",
    ]
    lines = [
        "# git-reduce pairwise benchmark (seed + variant)",
        "",
        f"{meta['date']} · {meta['machine']} · jobs={meta['jobs']} · "
        f"timeout/case={fmt(meta['timeout_per_case'], 0)} s (dd: "
        f"{fmt(meta['dd_timeout'], 0)} s) · git-reduce {meta.get('gitreduce_version', '?')}",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "|".join(["---"] * 2 + ["---:"] * 6 + ["---"] + ["---:"] * 7) + "|",
    ]
    for r in results:
        wall = fmt(r.wall_seconds)
        if r.timed_out:
            wall += " (timed out)"
        elif r.interrupted:
            wall += " (interrupted)"
        rr = ratios.get(r.case, {}) if r.algorithm == "ppr" else {}
        lines.append(
            "| "
            + " | ".join(
                [
                    r.case,
                    r.algorithm,
                    arrow(r.seed_tokens),
                    arrow(r.variant_tokens),
                    arrow(r.diff_tokens),
                    fmt(r.tests_run),
                    wall,
                    fmt(r.overhead_percent),
                    checks_cell(r),
                    fmt(rr.get("variant_vs_cvise"), 2) if rr else "",
                    fmt(rr.get("wall_vs_cvise"), 2) if rr else "",
                    fmt(rr.get("diff_ppr_vs_dd"), 2) if rr else "",
                    fmt(rr.get("size_dd_vs_ppr"), 1) if rr else "",
                    fmt(rr.get("diff_ppr_vs_dd_empty"), 2) if rr else "",
                    fmt(rr.get("size_dd_empty_vs_ppr"), 1) if rr else "",
                    _load_cell(r),
                ]
            )
            + " |"
        )
    lines += ["", "C-Vise single-program reference (same variant):", ""]
    lines += [
        "| case | C-Vise final tokens | C-Vise wall s | source | reproduces |",
        "|---|---:|---:|---|---:|",
    ]
    for case, c in cvise.items():
        if c is None:
            lines.append(f"| {case} | - | - | no baseline | - |")
        else:
            src = "baseline" if c.source == "baseline" else "live run"
            lines.append(
                f"| {case} | {fmt(c.final_tokens)} | {fmt(c.wall_seconds)} | {src} | "
                f"{fmt(c.reproduces)} |"
            )
    t = PAIR_TARGETS
    parts = []
    for alg in (a for a in PAIR_ALGORITHMS if a in summary):
        s = summary[alg]
        parts.append(
            f"{alg.upper()}: median diff over C/C++ cases {fmt(s['median_diff_c_cpp'])} "
            f"(n={s['n_c_cpp']}), Rust diff {fmt(s['diff_rust'])}"
        )
    ratio_part = (
        f"PPR medians: variant / C-Vise {fmt(summary.get('median_variant_vs_cvise'), 2)} "
        f"(target ≤ {t['variant_vs_cvise_max']}), wall / C-Vise "
        f"{fmt(summary.get('median_wall_vs_cvise'), 2)} (≤ {t['wall_vs_cvise_max']}), "
        f"diff PPR/DD {fmt(summary.get('median_diff_ppr_vs_dd'), 2)} "
        f"(≤ {t['diff_ppr_vs_dd_max']}), size DD/PPR "
        f"{fmt(summary.get('median_size_dd_vs_ppr'), 1)} (≥ {t['size_dd_vs_ppr_min']}); "
        f"against DD-empty (the paper's baseline): diff PPR/DD-empty "
        f"{fmt(summary.get('median_diff_ppr_vs_dd_empty'), 2)}, size DD-empty/PPR "
        f"{fmt(summary.get('median_size_dd_empty_vs_ppr'), 1)}."
    )
    scope = f"over {', '.join(summary.get('cases_counted', [])) or 'no cases'}"
    if summary.get("cases_not_counted"):
        scope += f"; not counted: {', '.join(summary['cases_not_counted'])}"
    lines += [
        "",
        f"**Summary** ({scope}): "
        + "; ".join(parts)
        + f" (targets: ≤ {t['diff_median_c_cpp_max']} C/C++, ≤ {t['diff_rust_max']} Rust). "
        + ratio_part,
        "",
    ]
    lines += pass_profile_lines(
        pass_profiles([(f"{r.case} {r.algorithm}", r.stats) for r in results])
    )
    notes = [f"- {n}" for n in meta.get("notes", [])]
    if notes:
        lines += ["Notes:", "", *notes, ""]
    return "\n".join(lines)


def pair_notes(bytecode_cached: bool) -> list[str]:
    """The standing notes of pairs.md (per-case notes are appended after them);
    `bytecode_cached`: git-reduce ran with Python's bytecode cache allowed (runs since
    2026-11-28)."""
    return [
        "Tokens: git-reduce's own report (--json), before → after; checks re-count the "
        "inputs and results with tokens.py SEED VARIANT and flag any difference.",
        "checks: ok = test.sh on the reduced seed exits 0, on the reduced variant exits 1, "
        "and tokens.py's seed/variant/diff counts equal git-reduce's.",
        "Each run: copies seed.EXT/variant.EXT in a fresh scratch dir outside any git "
        "repository, XDG_CACHE_HOME a fresh empty dir (no verdicts reused between runs)"
        + (
            ", Python's bytecode cache allowed (no PYTHONDONTWRITEBYTECODE), as installed."
            if bytecode_cached
            else "."
        ),
        "wall s: the runner's clock around the whole git-reduce process; overhead %: "
        "git-reduce's overhead_seconds / its own wall_seconds.",
        "Ratios (PPR rows, tokens.py counts, only when the pairs pass their checks): "
        "variant / C-Vise = reduced variant / C-Vise's final tokens on the same variant; "
        "wall / C-Vise = PPR wall / C-Vise wall; diff PPR/DD = PPR diff / DD diff; "
        "size DD/PPR = (DD seed + variant) / (PPR seed + variant).",
        "Medians count only the public cases (when any ran) and only results that pass "
        "their checks; a timed-out run counts with the best pair it had when stopped "
        "(git-reduce writes it on SIGTERM).",
        "load 1m: 1-minute load average before / after the run and, in brackets, its "
        "median and max over samples taken during the run (2 cores; a value above the "
        "jobs count means other work shared the CPU).",
    ]


def write_pair_report(
    args: argparse.Namespace,
    results: list[PairResult],
    cvise: dict[str, Result | None],
    meta: dict[str, Any],
) -> None:
    ratios = compute_pair_ratios(results, cvise)
    summary = summarize_pairs(results, ratios)
    md = pair_markdown(results, ratios, summary, cvise, meta)
    payload = {
        "meta": meta,
        "results": [asdict(r) | {"size_after": r.size_after} for r in results],
        "cvise": {k: (asdict(v) if v is not None else None) for k, v in cvise.items()},
        "ratios": ratios,
        "summary": summary,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "pairs.json").write_text(json.dumps(payload, indent=2) + "\n")
    (args.out / "pairs.md").write_text(md)
    print(md)
