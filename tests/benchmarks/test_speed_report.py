"""The speed report over several runs of each configuration (benchmarks/speed_report.py)."""

import json
from pathlib import Path
from typing import Any

import speed_report

PUBLIC = {"name": "real", "path": "/x/benchmarks/cases/real", "origin": "custom"}
FIXTURE = {"name": "toy", "path": "/x/fixtures/toy", "origin": "custom"}


def single(tmp_path: Path, case: dict[str, str], wall: float, result: bytes) -> dict[str, Any]:
    out = tmp_path / f"{case['name']}-{len(list(tmp_path.iterdir()))}.c"
    out.write_bytes(result)
    row = {
        "case": case["name"],
        "tool": "gitreduce",
        "wall_seconds": wall,
        "final_tokens": 5,
        "overhead_percent": wall / 10,
        "result_file": str(out),
    }
    return {"meta": {"cases": [case]}, "results": [row]}


def pair(tmp_path: Path, case: dict[str, str], wall: float, result: bytes) -> dict[str, Any]:
    files = {}
    run = len(list(tmp_path.iterdir()))
    for side in ("seed", "variant"):
        files[side] = tmp_path / f"{case['name']}-{run}.{side}.c"
        files[side].write_bytes(result)
    row = {
        "case": case["name"],
        "algorithm": "ppr",
        "wall_seconds": wall,
        "checks_ok": True,
        "seed_result": str(files["seed"]),
        "variant_result": str(files["variant"]),
    }
    return {"meta": {"cases": [case]}, "results": [row]}


def write(tmp_path: Path, name: str, report: dict[str, Any]) -> str:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(report))
    return str(path)


def test_several_runs_give_the_median_wall_and_public_medians(tmp_path: Path) -> None:
    args: dict[str, list[str]] = {"single-j1": [], "single-j2": [], "pairs-j1": [], "pairs-j2": []}
    walls = {  # case: (single j1 runs, single j2 runs, pair j1 runs, pair j2 runs)
        "real": ([20.0, 22.0, 30.0], [10.0, 11.0, 10.5], [40.0, 44.0, 42.0], [20.0, 30.0, 21.0]),
        "toy": ([3.0, 3.2, 3.1], [3.0, 3.0, 3.0], [6.0, 6.0, 6.0], [6.0, 6.0, 6.0]),
    }
    for case in (PUBLIC, FIXTURE):
        s1, s2, p1, p2 = walls[case["name"]]
        for index, wall in enumerate(s1):
            args["single-j1"].append(
                write(tmp_path, f"s1-{case['name']}-{index}", single(tmp_path, case, wall, b"a"))
            )
        for index, wall in enumerate(s2):
            args["single-j2"].append(
                write(tmp_path, f"s2-{case['name']}-{index}", single(tmp_path, case, wall, b"a"))
            )
        for index, wall in enumerate(p1):
            args["pairs-j1"].append(
                write(tmp_path, f"p1-{case['name']}-{index}", pair(tmp_path, case, wall, b"b"))
            )
        for index, wall in enumerate(p2):
            # the fixture's last two-job pair differs from the others
            result = b"c" if case is FIXTURE and index == 2 else b"b"
            args["pairs-j2"].append(
                write(tmp_path, f"p2-{case['name']}-{index}", pair(tmp_path, case, wall, result))
            )
    out = tmp_path / "speed"
    argv = [part for key, paths in args.items() for part in (f"--{key}", *paths)]
    assert speed_report.main([*argv, "--out", str(out)]) == 0
    table = {row["case"]: row for row in json.loads(out.with_suffix(".json").read_text())}
    real, toy = table["real"], table["toy"]
    assert real["public"] and not toy["public"]
    assert real["single_j1_s"] == 22.0 and real["single_j2_s"] == 10.5
    assert real["single_j2_over_j1"] == 2.1
    assert real["pair_j2_over_j1"] == round(42.0 / 21.0, 2)
    assert real["single_same_j1_j2"] and real["pair_same_j1_j2"]
    assert toy["single_same_j1_j2"] and toy["pair_same_j1_j2"] is False
    assert real["single_j1_walls"] == [20.0, 22.0, 30.0]
    assert real["single_overhead_pct"] == [1.0, 1.1, 1.05]  # every two-job run's
    text = out.with_suffix(".md").read_text()
    assert "- median single_j2_over_j1: 1.56 over all cases, 2.1 over the public ones" in text
    assert "- runs per case and configuration: 3" in text
