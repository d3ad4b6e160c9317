"""Rendering the reports: from small results, and again from the stored runs' JSON."""

import argparse
import json
from dataclasses import fields
from pathlib import Path
from typing import Any

from bench.pairs import rerender_pairs
from bench.paths import BENCHMARKS
from bench.report import (
    arrow,
    checks_cell,
    compute_ratios,
    fmt,
    markdown,
    pass_profile_lines,
    pass_profiles,
    summarize,
    write_report,
)
from bench.results import PairResult, Result

STORED = BENCHMARKS / "results"
META = {"date": "2026-01-01T00:00:00+00:00", "machine": "m", "jobs": 2, "timeout_per_case": 60}


def results(**gitreduce: Any) -> list[Result]:
    return [
        Result("toy", "gitreduce", 100, 10, 20.0, 50, reproduces=True, **gitreduce),
        Result("toy", "cvise", 100, 20, 80.0, 400, reproduces=True, source="baseline"),
        Result("other", "gitreduce", 50, 5, 10.0, reproduces=False, error="git-reduce exited 2"),
    ]


def test_ratios_need_both_results_to_reproduce():
    ratios = compute_ratios(results())
    assert ratios == {"toy": {"tokens": 0.5, "wall": 0.25}}
    assert summarize(ratios) == {
        "median_tokens_ratio": 0.5,
        "n_tokens_ratio": 1,
        "median_wall_ratio": 0.25,
        "n_wall_ratio": 1,
    }
    assert compute_ratios(results(timed_out=True)) == ratios
    failed = results()
    failed[1].reproduces = False
    assert compute_ratios(failed) == {"toy": {"tokens": None, "wall": None}}


def test_markdown_table_of_a_small_run():
    rs = results(overhead_percent=12.5)
    ratios = compute_ratios(rs)
    md = markdown(rs, ratios, summarize(ratios), {**META, "notes": ["a note"]})
    assert md.split("\n") == [
        "# git-reduce benchmark results",
        "",
        "2026-01-01T00:00:00+00:00 · m · jobs=2 · timeout/case=60 s",
        "",
        "| case | tool | initial tokens | final tokens | wall s | tests run | overhead % | "
        "reproduces | tokens gr/cv | wall gr/cv |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        "| toy | gitreduce | 100 | 10 | 20.0 | 50 | 12.5 | yes | 0.50 | 0.25 |",
        "| toy | cvise | 100 | 20 | 80.0 (baseline) | 400 |  | yes |  |  |",
        "| other | gitreduce (git-reduce exited 2) | 50 | 5 | 10.0 | - | - | no |  |  |",
        "",
        "**Summary:** median gitreduce/cvise ratio: final tokens 0.50 (over 1 cases), wall "
        "0.25 (over 1 cases). Ratios < 1 favour git-reduce; ratios are only computed when "
        "both final files reproduce.",
        "",
        "Notes:",
        "",
        "- a note",
        "",
    ]


def profile(label: str, tests: int, removed: int, seconds: float) -> dict[str, Any]:
    return {
        "pass": label,
        "runs": 1,
        "tests": tests,
        "cache_hits": 0,
        "syntax_rejected": 2,
        "successes": 1,
        "tokens_removed": removed,
        "seconds": seconds,
    }


def test_the_per_pass_profile_sums_the_runs_and_lists_each():
    one = {"passes": [profile("tree", 30, 90, 1.5), profile("tidy", 10, 0, 0.25)]}
    two = {"passes": [profile("tree", 60, 5, 2.0)]}
    profiles = pass_profiles([("a", one), ("b", two), ("c", {}), ("d", None)])
    assert [run for run, _ in profiles] == ["a", "b"]
    lines = pass_profile_lines(profiles)
    assert "| tree | 2 | 90 | 90.0 % | 0 | 4 | 2 | 95 | 3.5 |" in lines
    assert "| tidy | 1 | 10 | 10.0 % | 0 | 2 | 1 | 0 | 0.2 |" in lines
    assert "| b | tree | 1 | 60 | 0 | 2 | 1 | 5 | 2.0 |" in lines
    assert pass_profile_lines([]) == []


def test_a_single_program_report_shows_git_reduces_per_pass_profile():
    rs = results(extra={"stats": {"passes": [profile("tree", 40, 90, 1.0)]}})
    md = markdown(rs, compute_ratios(rs), summarize(compute_ratios(rs)), META)
    assert "## Per-pass profile (git-reduce)" in md
    assert "| toy | tree | 1 | 40 | 0 | 2 | 1 | 90 | 1.0 |" in md


def test_write_report_writes_the_json_it_rendered(tmp_path, capsys):
    rs = results()
    write_report(argparse.Namespace(out=tmp_path), rs, META)
    payload = json.loads((tmp_path / "results.json").read_text())
    assert list(payload) == ["meta", "results", "ratios", "summary"]
    assert [r["tool"] for r in payload["results"]] == ["gitreduce", "cvise", "gitreduce"]
    assert list(payload["results"][0]) == [f.name for f in fields(Result)]
    assert capsys.readouterr().out == (tmp_path / "results.md").read_text() + "\n"


def test_a_stored_single_program_run_renders_as_it_was_stored():
    payload = json.loads((STORED / "2026-11-22-single-session2.json").read_text())
    names = {f.name for f in fields(Result)}
    rs = [Result(**{k: v for k, v in r.items() if k in names}) for r in payload["results"]]
    ratios = compute_ratios(rs)
    summary = summarize(ratios)
    assert (ratios, summary) == (payload["ratios"], payload["summary"])
    stored = (STORED / "2026-11-22-single-session2.md").read_text()
    assert markdown(rs, ratios, summary, payload["meta"]) == stored


def test_pair_cells():
    result = PairResult("p", "ppr", "c/c++", seed_tokens=[10, 2], variant_tokens=[12, None])
    assert (arrow(result.seed_tokens), arrow(result.variant_tokens)) == ("10 → 2", "12 → -")
    assert checks_cell(result) == "seed test.sh → - (want 0); variant test.sh → - (want 1)"
    result.error = "no JSON summary on stdout (exit 2)"
    assert checks_cell(result) == "error: no JSON summary on stdout (exit 2)"
    result.seed_good = result.variant_bad = True
    result.seed_result = "kept"
    assert checks_cell(result) == "ok"
    assert (fmt(None), fmt(True), fmt(2.345, 2), fmt(7)) == ("-", "yes", "2.35", "7")


def without_rendering_date(text: str) -> list[str]:
    return [line for line in text.split("\n") if "by run.py --pairs-report" not in line]


def test_a_stored_pairs_run_re_renders_as_it_was_stored(tmp_path: Path, capsys):
    source = STORED / "2026-11-23-pairs-session4.json"
    args = argparse.Namespace(pairs_report=source, out=tmp_path)
    assert rerender_pairs(args) == 0
    stored_md = (STORED / "2026-11-23-pairs-session4.md").read_text()
    rendered_md = (tmp_path / "pairs.md").read_text()
    assert without_rendering_date(rendered_md) == without_rendering_date(stored_md)
    assert capsys.readouterr().out == rendered_md + "\n"
    stored, rendered = (json.loads(p.read_text()) for p in (source, tmp_path / "pairs.json"))
    for payload in (stored, rendered):
        payload["meta"].pop("rendered")
        payload["meta"]["notes"] = without_rendering_date("\n".join(payload["meta"]["notes"]))
    assert rendered == stored
