"""Case discovery and checking on real folders, and the public cases the repository ships."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from bench.cases import (
    discover_cases,
    discover_pair_cases,
    language_group,
    run_test,
    safe,
    usable_cases,
)
from bench.paths import CASES_ROOT, FIXTURES_ROOT, TOKENS_PY

PUBLIC = ["gcc12-pr109392", "gxx12-pr109804", "rustc195-105238", "toy-gcc-pattern"]


def make_case(folder: Path, *files: str, exits: int = 1) -> Path:
    """A case folder with the given files and a test.sh that always exits `exits`."""
    folder.mkdir(parents=True)
    for name in files:
        (folder / name).write_text("int main(void) { return 0; }\n")
    test = folder / "test.sh"
    test.write_text(f"#!/bin/sh\nexit {exits}\n")
    test.chmod(0o755)
    return folder


def test_a_folder_of_cases_yields_each_case_in_name_order(tmp_path):
    make_case(tmp_path / "b-case", "variant.c")
    make_case(tmp_path / "a-case", "variant.rs", "seed.rs")
    (tmp_path / "not-a-case").mkdir()
    (tmp_path / "README.md").write_text("cases\n")
    cases = discover_cases([tmp_path])
    assert [(c.name, c.variant.name, c.ext, c.origin) for c in cases] == [
        ("a-case", "variant.rs", ".rs", "custom"),
        ("b-case", "variant.c", ".c", "custom"),
    ]
    assert cases[0].test_sh == (tmp_path / "a-case" / "test.sh").resolve()


def test_a_case_folder_is_a_case_by_itself(tmp_path):
    folder = make_case(tmp_path / "only", "variant.cpp")
    assert [c.name for c in discover_cases([folder])] == ["only"]


def test_an_ambiguous_case_is_skipped_with_the_reason(tmp_path, capsys):
    make_case(tmp_path / "two", "variant.c", "variant.cpp")
    make_case(tmp_path / "one", "variant.c")
    assert [c.name for c in discover_cases([tmp_path])] == ["one"]
    assert "expected exactly one variant.* file, found 2" in capsys.readouterr().err


def test_names_stay_unique_across_folders(tmp_path):
    make_case(tmp_path / "first" / "same", "variant.c")
    make_case(tmp_path / "second" / "same", "variant.c")
    cases = discover_cases([tmp_path / "first", tmp_path / "second"])
    assert [c.name for c in cases] == ["same", "custom/same"]
    assert safe(cases[1].name) == "custom__same"


def test_a_missing_case_folder_stops_the_run(tmp_path):
    with pytest.raises(SystemExit, match="no such case dir"):
        discover_cases([tmp_path / "nowhere"])


def test_pair_cases_need_a_seed_and_variant_of_one_language(tmp_path, capsys):
    make_case(tmp_path / "pair", "seed.c", "variant.c")
    make_case(tmp_path / "mixed", "seed.c", "variant.cpp")
    make_case(tmp_path / "single", "variant.c")
    cases = discover_pair_cases([tmp_path])
    assert [(c.name, c.seed.name, c.variant.name) for c in cases] == [
        ("pair", "seed.c", "variant.c")
    ]
    assert "seed and variant extensions differ: seed.c, variant.cpp" in capsys.readouterr().err


def test_language_groups():
    assert [language_group(ext) for ext in (".c", ".cpp", ".rs", ".js", "")] == [
        "c/c++",
        "c/c++",
        "rust",
        "js",
        "?",
    ]


def test_run_test_reports_the_exit_status(tmp_path):
    case = discover_cases([make_case(tmp_path / "c", "variant.c", exits=125)])[0]
    assert run_test(case, case.variant) == 125
    assert run_test(case, tmp_path / "absent.c") is None


def test_a_case_whose_test_misjudges_its_originals_is_set_aside(tmp_path):
    good = make_case(tmp_path / "good", "variant.c", exits=1)
    bad = make_case(tmp_path / "bad", "variant.c", "seed.c", exits=1)  # the seed must exit 0
    (bad / "case.json").write_text(json.dumps({"requires": {"debian": []}}))
    notes: list[str] = []
    usable = usable_cases(discover_cases([good.parent]), notes)
    assert [c.name for c in usable] == ["good"]
    assert notes == ["bad: skipped, test.sh seed.c exits 1, not 0."]


def test_the_default_cases_are_the_shipped_public_cases_then_the_fixtures():
    cases = discover_cases(None)
    public = [c.name for c in cases if c.origin == "shared"]
    assert public == PUBLIC
    assert all(c.path.parent == CASES_ROOT for c in cases if c.origin == "shared")
    assert {c.origin for c in cases} == {"shared", "fixtures"}
    assert [c.name for c in discover_pair_cases(None) if c.origin == "shared"] == PUBLIC


@pytest.mark.parametrize(
    "folder",
    [CASES_ROOT / name for name in PUBLIC] + [FIXTURES_ROOT / "csmith-23k"],
    ids=lambda folder: folder.name,
)
def test_shipped_case_sizes_are_what_the_reference_counter_counts(folder):
    case = discover_pair_cases([folder])[0]
    record = json.loads((case.path / "case.json").read_text())
    counted = subprocess.run(
        [sys.executable, str(TOKENS_PY), str(case.seed), str(case.variant)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert [int(n) for n in counted] == [
        record["seed_tokens"],
        record["variant_tokens"],
        record["diff_tokens"],
    ]
