"""`--json` output of the real CLI validates against gitreduce/schema.json, which
docs/json-schema.md documents key by key."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from gitreduce.api import known_passes

jsonschema = pytest.importorskip("jsonschema")

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "fixtures" / "sequence-point"
GIT_REDUCE = Path(sys.executable).parent / "git-reduce"
TEST = "./test.sh {}"


def load_schema() -> dict[str, Any]:
    return json.loads(resources.files("gitreduce").joinpath("schema.json").read_text())


def validator() -> Any:
    return jsonschema.Draft202012Validator(load_schema())


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    base = tmp_path_factory.mktemp("env")
    for name in ("home", "cache", "tmp"):
        (base / name).mkdir()
    clean = {key: value for key, value in os.environ.items() if not key.startswith("GIT_")}
    return clean | {
        "HOME": str(base / "home"),
        "XDG_CACHE_HOME": str(base / "cache"),
        "TMPDIR": str(base / "tmp"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CEILING_DIRECTORIES": str(base.parent),
        "GIT_AUTHOR_NAME": "Fuzzer",
        "GIT_AUTHOR_EMAIL": "fuzzer@example.com",
        "GIT_COMMITTER_NAME": "Fuzzer",
        "GIT_COMMITTER_EMAIL": "fuzzer@example.com",
    }


def git_reduce(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(GIT_REDUCE), *args, "--json", "--quiet", "--jobs", "2"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def texts() -> tuple[str, str]:
    variant = (FIXTURE / "variant.c").read_text()
    return variant.replace("count = count++ + step;", "count = count + step;"), variant


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Plain files outside any repository."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed")
    work = tmp_path_factory.mktemp("plain")
    shutil.copy(FIXTURE / "test.sh", work / "test.sh")
    seed, variant = texts()
    (work / "seed.c").write_text(seed)
    (work / "variant.c").write_text(variant)
    return work


def run_json(cwd: Path, env: dict[str, str], *args: str) -> dict[str, Any]:
    done = git_reduce(cwd, env, *args)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def pass_labels(record: dict[str, Any]) -> list[str]:
    """The labels of `passes`, once its figures are checked against the totals: every
    test counts for exactly one label, so the tests add up to `tests_run`, and
    `tests_by_pass` is the same figures without the passes that ran no test. A pass
    of the schedules ran at least once; tests outside them (`comments`) have no runs."""
    passes = record["passes"]
    labels = [row["pass"] for row in passes]
    assert len(labels) == len(set(labels))
    assert sum(row["tests"] for row in passes) == record["tests_run"]
    assert {row["pass"]: row["tests"] for row in passes if row["tests"]} == record["tests_by_pass"]
    known = set(known_passes())
    assert all((row["runs"] >= 1) == (row["pass"] in known) for row in passes)
    return labels


def test_the_schema_is_valid_draft_2020_12() -> None:
    jsonschema.Draft202012Validator.check_schema(load_schema())


def test_single_file_run(plain: Path, env: dict[str, str]) -> None:
    record = run_json(plain, env, "variant.c", "--test", TEST)
    validator().validate(record)
    assert record["input"] == "variant.c" and record["branch"] is None
    assert record["tokens_after"] < record["tokens_before"]
    assert len(record["commits"]) == 1
    labels = pass_labels(record)
    assert labels[0] == "tree" and {"tokens", "windows", "tidy"} <= set(labels)


def test_file_set_run(tmp_path: Path, env: dict[str, str]) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "main.py").write_text("import util\nprint(util.answer())\n")
    (project / "util.py").write_text("def answer():\n    return 42\n")
    (project / "unused.py").write_text("x = 1\n")
    record = run_json(
        tmp_path, env, "proj", "--interesting", "grep -q 42 util.py && grep -q import main.py"
    )
    validator().validate(record)
    assert record["files"] == ["main.py", "util.py"] and record["files_before"] == 3
    assert record["output"] == str(tmp_path / "proj.reduced")
    assert "files" in pass_labels(record)


def test_pairwise_run_on_plain_files(plain: Path, env: dict[str, str]) -> None:
    patch = plain / "change.patch"
    record = run_json(
        plain,
        env,
        "--seed",
        "seed.c",
        "--variant",
        "variant.c",
        "--test",
        TEST,
        "--patch",
        str(patch),
    )
    validator().validate(record)
    assert record["algorithm"] == "ppr" and record["diff_tokens"][1] == 1
    assert record["first_bad_commit"] is None
    assert Path(record["variant_output"]).is_file() and patch.is_file()
    assert len(record["commits"]) == 2
    labels = pass_labels(record)
    assert labels[:5] == [
        "variant-first",
        "coarse-commonality",
        "min-tdiff",
        "min-ldiff",
        "min-commonality",
    ]
    assert "min-commonality/tree" in labels


def test_pairwise_run_over_file_sets(tmp_path: Path, env: dict[str, str]) -> None:
    for name, answer in (("seed", "41"), ("variant", "42")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "main.py").write_text("import util\nprint(util.answer())\n")
        (tmp_path / name / "util.py").write_text(f"def answer():\n    return {answer}\n")
        (tmp_path / name / "unused.py").write_text("x = 1\n")
    (tmp_path / "variant" / "new.py").write_text("y = 2\n")
    test = "grep -q import main.py || exit 125; grep -q 42 util.py && exit 1; exit 0"
    patch = tmp_path / "change.patch"
    record = run_json(
        tmp_path,
        env,
        "--seed",
        "seed",
        "--variant",
        "variant",
        "--test",
        test,
        "--output",
        "out",
        "--patch",
        str(patch),
    )
    validator().validate(record)
    assert record["changed_files"] == ["util.py"] and record["diff_tokens"][1] <= 2
    assert record["seed_file_count"] == [3, 2] and record["variant_file_count"] == [4, 2]
    assert record["output"] == "out" and (tmp_path / "out" / "variant" / "util.py").is_file()
    assert len(record["commits"]) == 2 and patch.is_file()
    labels = pass_labels(record)
    assert labels[:3] == ["set-tdiff", "set-ldiff", "set-commonality"]


def test_bisected_pair_of_sets_from_commits(tmp_path: Path, env: dict[str, str]) -> None:
    repo = tmp_path / "repo"
    (repo / "app").mkdir(parents=True)

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True
        ).stdout.strip()

    git("init", "-q")
    (repo / "app" / "main.py").write_text("import util\nprint(util.answer())\n")
    (repo / "app" / "util.py").write_text("def answer():\n    return 41\n")
    git("add", ".")
    git("commit", "-q", "-m", "good")
    (repo / "app" / "notes.py").write_text("NOTE = 1\n")
    git("add", ".")
    git("commit", "-q", "-m", "still good")
    (repo / "app" / "util.py").write_text("def answer():\n    return 42\n")
    git("commit", "-q", "-am", "the bug")
    bug = git("rev-parse", "HEAD")
    (repo / "app" / "notes.py").write_text("NOTE = 2\n")
    git("commit", "-q", "-am", "later")
    test = "grep -q import main.py || exit 125; grep -q 42 util.py && exit 1; exit 0"
    record = run_json(repo, env, "HEAD~3..HEAD", "--", "app/", "--test", test)
    validator().validate(record)
    assert record["first_bad_commit"] == bug and record["changed_files"] == ["util.py"]
    assert git("rev-parse", record["branch"]) == record["commits"][-1]
    assert "bisect" not in pass_labels(record)


def test_bisected_revision_range(tmp_path: Path, env: dict[str, str]) -> None:
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed")
    repo = tmp_path / "repo"
    repo.mkdir()

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True
        ).stdout.strip()

    git("init", "-q")
    shutil.copy(FIXTURE / "test.sh", repo / "test.sh")
    seed, variant = texts()
    (repo / "prog.c").write_text(seed)
    git("add", ".")
    git("commit", "-q", "-m", "seed")
    (repo / "prog.c").write_text(seed.replace("int step = 2;", "int step = 3;"))
    git("commit", "-q", "-am", "still good")
    (repo / "prog.c").write_text(variant.replace("int step = 2;", "int step = 3;"))
    git("commit", "-q", "-am", "the bug")
    bad = git("rev-parse", "HEAD")
    (repo / "README").write_text("later\n")
    git("add", "README")
    git("commit", "-q", "-m", "unrelated")
    record = run_json(repo, env, "HEAD~3..HEAD", "--", "prog.c", "--test", TEST)
    validator().validate(record)
    assert record["first_bad_commit"] == bad
    assert record["branch"] and record["branch"].startswith("reduce/")
    assert git("rev-parse", record["branch"]) == record["commits"][-1]
    assert record["seed_output"] is None and record["variant_output"] is None
    assert "bisect" not in pass_labels(record)  # the bisect's tests are not the reduction's


def test_a_failed_run_prints_nothing_on_stdout(plain: Path, env: dict[str, str]) -> None:
    done = git_reduce(plain, env, "missing.c", "--test", TEST)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("error:")


def test_the_schema_rejects_what_it_should() -> None:
    check = validator()
    good = {
        "input": "x.c",
        "output": None,
        "language": None,
        "tokens_before": 3,
        "tokens_after": 1,
        "bytes_before": 9,
        "bytes_after": 3,
        "tests_run": 0,
        "cache_hits": 0,
        "syntax_rejected": 0,
        "tests_by_pass": {},
        "passes": [],
        "wall_seconds": 0.1,
        "oracle_seconds": 0.0,
        "overhead_seconds": 0.1,
        "test_seconds": 0.0,
        "success_bets": 0,
        "preempted_for_bets": 0,
        "interrupted": False,
        "verified": True,
        "foreign_verdicts_used": 0,
        "confirmations": 0,
        "contradicted": 0,
        "warnings": [],
        "branch": None,
        "commits": [],
        "test": "./t.sh",
        "signature": "exit 1: error: boom",
        "patch": None,
        "html": "r.html",
    }
    check.validate(good)
    with pytest.raises(jsonschema.ValidationError):
        check.validate({key: value for key, value in good.items() if key != "test"})
    for bad in (
        good | {"undocumented": 1},
        {key: value for key, value in good.items() if key != "commits"},
        good | {"commits": ["abc"]},
        good | {"tokens_after": -1},
        good | {"first_bad_commit": None},  # a pair key in a single-file record
        {key: value for key, value in good.items() if key != "passes"},
        good | {"passes": [{"pass": "tree", "runs": 1, "tests": 2}]},
        good | {"passes": [ROW | {"seconds": -1.0}]},
        good | {"passes": [ROW | {"undocumented": 1}]},
    ):
        assert not check.is_valid(bad), bad
    check.validate(good | {"passes": [ROW, ROW | {"pass": "min-commonality/tree"}]})


ROW = {
    "pass": "tree",
    "runs": 2,
    "tests": 132,
    "cache_hits": 87,
    "syntax_rejected": 37,
    "successes": 16,
    "tokens_removed": 249,
    "seconds": 3.41,
}


def test_the_documented_examples_validate() -> None:
    """docs/json-schema.md's examples are real output: valid, their passes adding up."""
    page = (ROOT / "docs" / "json-schema.md").read_text()
    examples = [json.loads(block) for block in re.findall(r"```json\n(.*?)```", page, re.S)]
    assert len(examples) == 2
    for example in examples:
        validator().validate(example)
        pass_labels(example)


def test_every_key_is_documented() -> None:
    schema = load_schema()
    keys = set()
    for shape in ("single", "file_set", "pair", "set_pair", "triage", "finding", "bucket"):
        keys |= set(schema["$defs"][shape]["properties"])
    documented = set(
        re.findall(r"^\| `([a-z_]+)`", (ROOT / "docs" / "json-schema.md").read_text(), re.M)
    )
    documented |= set(
        re.findall(
            r"^\| `[a-z_]+`, `([a-z_]+)`", (ROOT / "docs" / "json-schema.md").read_text(), re.M
        )
    )
    assert keys == documented
