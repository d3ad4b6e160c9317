"""The before/after table of two pairwise runs: sizes compared case by case, nothing run."""

import json
from pathlib import Path
from typing import Any

from compare_pairs import compare, main


def report(seed: int, wall: float, passes: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    result = {
        "case": "toy",
        "algorithm": "ppr",
        "seed_tokens": [100, seed],
        "variant_tokens": [110, 12],
        "diff_tokens": [20, 2],
        "tests_run": 50,
        "wall_seconds": wall,
        "overhead_seconds": 1.0,
        "checks_ok": True,
        "stats": {"passes": passes or []},
    }
    meta = {"gitreduce_version": "v", "gitreduce_cmd": ["git-reduce"], "date": "d", "jobs": 2}
    return {"meta": meta, "results": [result]}


def test_a_result_that_grew_on_any_side_is_flagged() -> None:
    assert compare(report(10, 9.0), report(10, 5.0), None)[0]["no_larger"]
    assert not compare(report(10, 9.0), report(11, 5.0), None)[0]["no_larger"]


def test_the_table_shows_the_chosen_pass_of_the_later_run(tmp_path: Path) -> None:
    coarse = {"pass": "coarse", "tests": 7, "seconds": 1.25, "tokens_removed": 80}
    paths = []
    for name, data in (("before", report(10, 9.0)), ("after", report(9, 4.5, [coarse]))):
        paths.append(tmp_path / f"{name}.json")
        paths[-1].write_text(json.dumps(data))
    out = tmp_path / "compared"
    assert main([*map(str, paths), "--out", str(out), "--pass-label", "coarse"]) == 0
    table = out.with_suffix(".md").read_text()
    assert "| toy | ppr | 10 → 9 | 12 → 12 | 2 → 2 | yes | 50 → 50 | 9.0 → 4.5 |" in table
    assert table.rstrip().endswith("median wall ratio after/before 0.50.")
    assert "| 7 / 1.2 / 80 |" in table
    assert json.loads(out.with_suffix(".json").read_text())["rows"][0]["pass"]["tests"] == 7
