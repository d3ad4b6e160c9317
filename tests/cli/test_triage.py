"""`git reduce triage` end to end: real repositories, real gcc, real child reductions."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from importlib import resources
from pathlib import Path

import jsonschema
import pytest
from hook_support import note_of, reductions_in, run_git
from support import eventually
from triage_support import (
    SIGNATURES,
    commit_set_finding,
    file_at,
    findings_repo,
    reduce_cmd,
    set_test,
    triage,
)

from gitreduce.cli.triage import status_line
from gitreduce.cli.triage_html import render_index
from gitreduce.sessions.triage_state import FindingResult, TriageState

SCHEMA = json.loads(resources.files("gitreduce").joinpath("schema.json").read_text())


def _summary(result: subprocess.CompletedProcess[str]) -> dict[str, object]:
    """The `--json` object, checked against the shipped schema."""
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    jsonschema.validate(summary, SCHEMA)
    assert "findings" in summary  # the triage shape
    return summary


def test_triage_reduces_every_finding_into_buckets_and_a_rerun_runs_nothing(
    tmp_path: Path,
) -> None:
    repo, env, shas = findings_repo(tmp_path, ["div", "shift", "div"])
    index = tmp_path / "triage.html"
    first = _summary(triage(repo, env, "--json", "--html", str(index), "--workers", "2"))
    findings = {finding["commit"]: finding for finding in first["findings"]}
    assert set(findings) == set(shas)
    assert all(finding["status"] == "reduced" for finding in findings.values())
    buckets = first["buckets"]
    assert sorted(bucket["signature"] for bucket in buckets) == sorted(SIGNATURES.values())
    by_signature = {bucket["signature"]: bucket for bucket in buckets}
    assert by_signature[SIGNATURES["div"]]["count"] == 2
    assert by_signature[SIGNATURES["shift"]]["findings"] == [shas[1][:7]]
    script = tmp_path / "gcc-test.sh"
    for sha in shas:
        finding = findings[sha]
        branch = finding["branch"]
        assert branch == f"reduce/{sha[:7]}"
        assert finding["diff_tokens"][1] <= 3, finding["diff"]
        # The reduced seed passes, the reduced variant fails with its bucket's signature.
        for rev, expected in ((f"{branch}^", 0), (branch, 1)):
            program = tmp_path / f"{sha[:7]}-{expected}.c"
            program.write_bytes(file_at(repo, env, rev))
            checked = subprocess.run([str(script), str(program)], capture_output=True, text=True)
            assert checked.returncode == expected, checked.stderr
        note = note_of(repo, env, sha)
        assert note is not None and f"Branch: {branch}" in note
    page = index.read_text()
    assert page.count('class="sig"') == 2 and "division by zero" in page
    for sha in shas:
        assert f'href="triage-reports/{sha[:7]}.html"' in page
        assert (tmp_path / "triage-reports" / f"{sha[:7]}.html").is_file()
    again = _summary(triage(repo, env, "--json"))
    assert again["tests_run"] == 0
    assert [f["status"] for f in again["findings"]] == ["reduced"] * 3
    assert len(again["buckets"]) == 2


def test_commits_changing_several_files_are_reduced_as_sets_without_reduce_path(
    tmp_path: Path,
) -> None:
    """A header and two .c files change; the bug needs the header and one of them. Another
    such finding deletes b.c. Both reduce to the few-token change and share the bucket of a
    one-file finding of the same bug, which is reduced as before."""
    repo, env, [single] = findings_repo(tmp_path, ["shift"])
    script = set_test(tmp_path, repo, env)
    changed = commit_set_finding(repo, env)
    deleting = commit_set_finding(repo, env, "sub", delete="b.c")
    index = tmp_path / "triage.html"
    summary = _summary(triage(repo, env, "--json", "--html", str(index), "--workers", "2"))
    findings = {finding["commit"]: finding for finding in summary["findings"]}
    assert findings[single]["paths"] == ["f1.c"] and findings[single]["path"] == "f1.c"
    assert findings[changed]["paths"] == ["a.c", "b.c", "defs.h"]
    assert findings[deleting]["paths"] == ["sub/a.c", "sub/b.c", "sub/defs.h"]
    [bucket] = summary["buckets"]
    assert bucket["signature"] == SIGNATURES["shift"] and bucket["count"] == 3
    for sha in (changed, deleting):
        finding = findings[sha]
        assert finding["status"] == "reduced" and finding["path"] is None
        assert finding["diff_tokens"][1] <= 3, finding["diff"]
        branch = finding["branch"]
        # The change is in the header and a.c only, and each side holds its verdict.
        touched = run_git(repo, env, "diff", "--name-only", f"{branch}^", branch).stdout.split()
        assert sorted(Path(name).name for name in touched) == ["a.c", "defs.h"]
        assert "+#define WIDTH 40" in finding["diff"] and "<<" in finding["diff"]
        for rev, expected in ((f"{branch}^", 0), (branch, 1)):
            where = tmp_path / f"{sha[:7]}-{expected}"
            run_git(repo, env, "worktree", "add", "-q", "--detach", str(where), rev)
            top = next(path.parent for path in where.rglob("defs.h"))
            checked = subprocess.run([str(script), str(top)], capture_output=True, text=True)
            assert checked.returncode == expected, checked.stderr
        note = note_of(repo, env, sha)
        assert note is not None and f"Branch: {branch}" in note and "+#define WIDTH 40" in note
    page = index.read_text()
    assert page.count('class="sig"') == 1
    assert f"{changed[:7]} a.c b.c defs.h" in page
    again = _summary(triage(repo, env, "--json"))
    assert again["tests_run"] == 0
    assert [f["status"] for f in again["findings"]] == ["reduced"] * 3


def test_a_bad_path_among_several_runs_nothing_and_says_why(tmp_path: Path) -> None:
    repo, env, _ = findings_repo(tmp_path, [])
    set_test(tmp_path, repo, env)
    (repo / "real.c").symlink_to("elsewhere.c")
    run_git(repo, env, "add", "real.c")
    sha = commit_set_finding(repo, env, trailers="Reduce-Test: gccset\nReduce-Path: real.c")
    outside = commit_set_finding(
        repo, env, "again", trailers="Reduce-Test: gccset\nReduce-Path: ../../etc/passwd"
    )
    summary = _summary(triage(repo, env, "--json"))
    assert summary["tests_run"] == 0
    reasons = {finding["commit"]: finding["reason"] for finding in summary["findings"]}
    assert reasons == {
        sha: "real.c is a symbolic link in its parent",
        outside: "'../../etc/passwd' is not a path inside the repository",
    }
    for commit, reason in reasons.items():
        note = note_of(repo, env, commit)
        assert note is not None and note.startswith(f"not run: {reason}\n")


def test_paths_a_commit_names_never_reach_the_reduction_as_options(tmp_path: Path) -> None:
    """A stranger's commit names files called `--any-failure` and `--patch=/somewhere`
    (they exist in it, so they are valid paths). Before: the child reduction took them as
    its options, accepted any failure, and wrote its patch over a file outside the
    repository. They are files of the set now, and nothing else."""
    repo, env, _ = findings_repo(tmp_path, [])
    set_test(tmp_path, repo, env)
    target = tmp_path / "outside" / "important.txt"
    target.parent.mkdir()
    target.write_text("the user's data\n")
    hostile = ["--any-failure", f"--patch={target}"]
    for name in hostile:
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text("not code\n")
    named = "".join(f"\nReduce-Path: {name}" for name in ["a.c", "b.c", "defs.h", *hostile])
    sha = commit_set_finding(repo, env, trailers=f"Reduce-Test: gccset{named}")
    summary = _summary(triage(repo, env, "--json"))
    [finding] = summary["findings"]
    assert finding["commit"] == sha and finding["status"] == "reduced", finding["reason"]
    assert finding["paths"] == ["a.c", "b.c", "defs.h", *hostile]
    assert finding["signature"] == SIGNATURES["shift"]  # not any failure
    assert target.read_text() == "the user's data\n"


def test_the_index_shows_a_set_findings_change_as_its_multi_file_diff(tmp_path: Path) -> None:
    diff = "diff --git a/a.c b/a.c\n-int a;\n+int a = 1 << 40;\n"
    finding = FindingResult(
        "k", "abc1234", "abc1234" * 5, None, "gccset", "t {}", paths=["a.c", "defs.h"]
    )
    finding.status, finding.signature, finding.diff, finding.diff_tokens = (
        "reduced",
        "exit 1: error: <b>",
        diff,
        [9, 3],
    )
    page = render_index(TriageState([finding]), tmp_path)
    assert '<pre class="diff">diff --git a/a.c b/a.c' in page
    assert "abc1234 a.c defs.h (3 tokens)" in page and "&lt;b&gt;" in page


def test_representatives_run_before_their_duplicates(tmp_path: Path) -> None:
    repo, env, shas = findings_repo(tmp_path, ["div", "div", "shift"])
    result = triage(repo, env, "--workers", "1")
    assert result.returncode == 0, result.stderr
    ended = [line.split()[0] for line in result.stderr.splitlines() if ": reduced" in line]
    assert ended == [shas[0][:7], shas[2][:7], shas[1][:7]]
    in_order = triage(repo, env, "--workers", "1", "--commit-order", "--retry")
    assert in_order.returncode == 0  # all settled: nothing runs, nothing reported as run


def test_findings_that_may_not_run_say_why_in_a_note(tmp_path: Path) -> None:
    repo, env, shas = findings_repo(tmp_path, ["div"])
    (repo / "g.c").write_text("int g;\n")
    run_git(repo, env, "add", "g.c")
    run_git(repo, env, "commit", "-q", "-m", "seed g")
    (repo / "g.c").write_text("int g = 1 / 0;\n")
    run_git(repo, env, "commit", "-q", "-a", "-m", "finding g\n\nReduce-Test: undefined-test")
    summary = _summary(triage(repo, env, "--json"))
    statuses = {finding["id"]: finding for finding in summary["findings"]}
    undefined = statuses[run_git(repo, env, "rev-parse", "--short=7", "HEAD").stdout.strip()]
    assert undefined["status"] == "not-run"
    assert "test 'undefined-test' is not defined here" in undefined["reason"]
    note = note_of(repo, env, "HEAD")
    assert note is not None and note.startswith("not run: test 'undefined-test'")
    assert statuses[shas[0][:7]]["status"] == "reduced"


def test_a_command_line_test_serves_commits_without_a_trailer(tmp_path: Path) -> None:
    repo, env, _ = findings_repo(tmp_path, [])
    (repo / "p.c").write_text("int p(int a) { int b = a + 1; return b; }\n")
    run_git(repo, env, "add", "p.c")
    run_git(repo, env, "commit", "-q", "-m", "seed")
    base = run_git(repo, env, "rev-parse", "HEAD").stdout.strip()
    (repo / "p.c").write_text("int p(int a) { int b = a / 0; return b; }\n")
    run_git(repo, env, "commit", "-q", "-a", "-m", "mutant")
    nothing = triage(repo, env, f"{base}..HEAD")
    assert nothing.returncode == 2 and "no findings" in nothing.stderr
    script = tmp_path / "gcc-test.sh"
    summary = _summary(triage(repo, env, f"{base}..HEAD", "--test", f"{script} {{}}", "--json"))
    [finding] = summary["findings"]
    assert finding["status"] == "reduced" and finding["test_name"] is None
    assert summary["buckets"][0]["signature"] == SIGNATURES["div"]


def test_variant_files_against_one_seed(tmp_path: Path) -> None:
    seed = tmp_path / "seed.c"
    seed.write_text("int f(int a) { int b = a + 1; return b; }\n")
    variants = tmp_path / "variants"
    variants.mkdir()
    (variants / "v1.c").write_text("int f(int a) { int b = a / 0; return b; }\n")
    (variants / "v2.c").write_text("int f(int a) { int b = a + 1; return b; }\n")
    script = tmp_path / "test.sh"
    script.write_text('#!/bin/sh\nexec gcc -c -Werror=div-by-zero -o /dev/null "$1"\n')
    script.chmod(0o755)
    command = ["triage", "--seed", str(seed), "--variants", str(variants), "--json"]
    result = subprocess.run(
        [*reduce_cmd(), *command, "--test", f"{script} {{}}"],
        cwd=tmp_path,
        env={**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")},
        capture_output=True,
        text=True,
        timeout=300,
    )
    summary = _summary(result)
    statuses = {finding["id"]: finding["status"] for finding in summary["findings"]}
    assert statuses == {"v1.c": "reduced", "v2.c": "not-run"}
    written = sorted(p.name for p in (tmp_path / "variants.reduced" / "v1.c").iterdir())
    assert len(written) == 2


def test_bad_input_is_one_line(tmp_path: Path) -> None:
    repo, env, _ = findings_repo(tmp_path, [])
    for args, message in (
        (["no-such-rev"], "unknown revision"),
        (["HEAD", "--all"], "not both"),
        (["--seed", "x.c"], "both --seed FILE and --variants DIR"),
        (["--executor", "carrier-pigeon"], "executor"),
    ):
        result = triage(repo, env, *args)
        assert result.returncode == 2, (args, result.stderr)
        assert message in result.stderr and "Traceback" not in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr


@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGKILL])
def test_an_interrupted_triage_resumes_from_the_cache(tmp_path: Path, how: int) -> None:
    repo, env, _ = findings_repo(tmp_path, ["div", "shift"])
    slow = {**env, "GITREDUCE_TEST_DELAY": "0.2"}
    process = subprocess.Popen(
        [*reduce_cmd(), "triage", "--workers", "2", "--jobs", "1", "--json"],
        cwd=repo,
        env=slow,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert eventually(lambda: len(reductions_in(repo)) == 2, within=60)
    time.sleep(3)  # some verdicts cached
    process.send_signal(how)
    _, err = process.communicate(timeout=120)
    if how == signal.SIGINT:
        assert process.returncode == 130, err
    assert eventually(lambda: not reductions_in(repo), within=60)
    rerun = _summary(triage(repo, env, "--json"))
    assert [finding["status"] for finding in rerun["findings"]] == ["reduced", "reduced"]
    # The interrupted reductions' verdicts were cached and are reused.
    assert sum(finding["cache_hits"] for finding in rerun["findings"]) > 0


def _reduced_pairs(summary: dict[str, object]) -> dict[str, str]:
    return {finding["path"]: finding["diff"] for finding in summary["findings"]}


def test_a_real_dask_cluster_gives_the_same_pairs_as_local_threads(
    tmp_path: Path, dask_address: str
) -> None:
    """The suite's `dask scheduler` and two `dask worker`s, and a LocalCluster started for
    the run: the same findings, in fresh repositories, reduce to byte-identical pairs."""
    bugs = ["div", "shift", "div"]
    results = {}
    for executor in ("local", dask_address, "dask-local"):
        where = tmp_path / executor.replace(":", "-").replace("/", "")
        where.mkdir()
        repo, env, _ = findings_repo(where, bugs)
        summary = _summary(triage(repo, env, "--json", "--executor", executor, "--workers", "2"))
        assert summary["executor"] == executor
        assert [f["status"] for f in summary["findings"]] == ["reduced"] * 3
        assert len(summary["buckets"]) == 2
        results[executor] = _reduced_pairs(summary)
    assert results["local"] == results[dask_address] == results["dask-local"]


def test_a_multi_file_finding_reduces_on_a_dask_cluster_as_it_does_locally(
    tmp_path: Path, dask_address: str
) -> None:
    """A finding that changes a header and two .c files: each test of a candidate set runs
    on the suite's `dask worker`s (the set travels packed, is unpacked at its paths there)
    and the reduced change is the one local threads find."""
    changes: dict[str, object] = {}
    for executor in ("local", dask_address):
        where = tmp_path / executor.replace(":", "-").replace("/", "")
        where.mkdir()
        repo, env, _ = findings_repo(where, [])
        set_test(where, repo, env)
        commit_set_finding(repo, env)
        summary = _summary(triage(repo, env, "--json", "--executor", executor, timeout=300))
        assert summary["executor"] == executor and summary["tests_run"] > 0
        [finding] = summary["findings"]
        assert finding["status"] == "reduced" and finding["paths"] == ["a.c", "b.c", "defs.h"]
        assert finding["diff_tokens"][1] <= 3, finding["diff"]
        branch = finding["branch"]
        touched = run_git(repo, env, "diff", "--name-only", f"{branch}^", branch).stdout.split()
        assert sorted(touched) == ["a.c", "defs.h"]
        changes[executor] = finding["diff"]
    assert changes["local"] == changes[dask_address]


def test_a_cluster_that_cannot_run_the_test_fails_in_one_line(
    tmp_path: Path, dask_address: str
) -> None:
    repo, env, _ = findings_repo(tmp_path, ["div"])
    run_git(repo, env, "config", "gitreduce.test.gcc.command", "/nonexistent/test.sh {}")
    result = triage(repo, env, "--executor", dask_address, timeout=120)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "/nonexistent/test.sh" in lines[0], result.stderr


def test_the_status_line_counts_findings_buckets_and_tests() -> None:
    done = FindingResult("a", "a1", "a" * 40, "f.c", "gcc", "cmd", status="reduced")
    done.signature, done.diff_tokens, done.wall_seconds = "exit 1: boom", [9, 2], 4.0
    waiting = FindingResult("b", "b1", "b" * 40, "g.c", "gcc", "cmd")
    state = TriageState([done, waiting], workers=2)
    state.tests_done = 12
    line = status_line(state)
    assert line.startswith("findings 1/2 done, 0 running, 1 queued  buckets 1  tests 12")
    assert "ETA 2s" in line  # one finding left, 4 s each, two at a time
