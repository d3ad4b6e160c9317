"""End to end: the installed `git-reduce` executable, real shell scripts, real gcc.

The fixture in fixtures/sequence-point is a small C program whose `tally()`
modifies `count` twice without a sequence point; its test script calls the
program bad (exit 1) while gcc warns "operation on ... may be undefined",
unusable (125) when gcc rejects it, good (0) otherwise.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support import git, increments_itself

from gitreduce.api import known_passes

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "sequence-point"
VARIANT = FIXTURES / "variant.c"
TEST_SH = FIXTURES / "test.sh"
INTERESTING_SH = FIXTURES / "interesting.sh"
GIT_REDUCE = Path(sys.executable).parent / "git-reduce"

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")


def environment(tmpdir: Path, *, wide: bool = True) -> dict[str, str]:
    """The child's environment: scratch dirs go to `tmpdir`.

    `wide` sets COLUMNS so that nothing could wrap; without it the child gets what a
    user piping stderr gets (errors must stay one line either way).
    """
    env = dict(os.environ)
    env.pop("COLUMNS", None)
    if wide:
        env["COLUMNS"] = "1000"
    env["TMPDIR"] = str(tmpdir)
    # A private verdict cache per test: runs must not recall each other's verdicts.
    env["XDG_CACHE_HOME"] = str(tmpdir / "xdg-cache")
    return env


def run_cli(
    *args: str | Path, cwd: Path, timeout: float = 60, wide: bool = True
) -> subprocess.CompletedProcess[str]:
    scratch = cwd / "tmp"
    scratch.mkdir(exist_ok=True)
    return subprocess.run(
        [str(GIT_REDUCE), *map(str, args)],
        cwd=cwd,
        env=environment(scratch, wide=wide),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def reproduces(path: Path) -> bool:
    return subprocess.run([str(TEST_SH), str(path)], capture_output=True).returncode == 1


def scratch_dirs(tmpdir: Path) -> list[Path]:
    return sorted(tmpdir.glob("gitreduce-*"))


def workdir(base: Path) -> Path:
    base.mkdir(parents=True, exist_ok=True)
    shutil.copy(VARIANT, base / "variant.c")
    return base


def test_fixture_is_bad_and_small():
    assert GIT_REDUCE.exists(), GIT_REDUCE
    assert reproduces(VARIANT)
    assert len(VARIANT.read_text().splitlines()) < 200


# --- a successful reduction --------------------------------------------------------------


@pytest.fixture(scope="module")
def reduced(tmp_path_factory):
    """The fixture reduced with --jobs 1 --json and with --jobs 2 (default output names)."""
    results = {}
    for jobs in (1, 2):
        cwd = workdir(tmp_path_factory.mktemp(f"jobs{jobs}"))
        process = run_cli("variant.c", "--test", TEST_SH, "--jobs", jobs, "--json", cwd=cwd)
        results[jobs] = (cwd, process)
    return results


@pytest.mark.parametrize("jobs", [1, 2])
def test_reduction_succeeds_and_still_reproduces(reduced, jobs):
    cwd, process = reduced[jobs]
    assert process.returncode == 0, process.stderr
    assert "Traceback" not in process.stderr
    output = cwd / "variant.reduced.c"
    assert output.exists()
    assert reproduces(output)
    assert (cwd / "variant.c").read_bytes() == VARIANT.read_bytes()  # input untouched
    text = output.read_bytes()
    assert len(text) * 5 < len(VARIANT.read_bytes())
    assert increments_itself(text)
    assert scratch_dirs(cwd / "tmp") == []


def test_json_summary(reduced):
    cwd, process = reduced[1]
    summary = json.loads(process.stdout)
    assert summary["tokens_before"] > 200
    assert 0 < summary["tokens_after"] < summary["tokens_before"] / 5
    assert summary["tests_run"] > 0
    assert summary["bytes_after"] == len((cwd / "variant.reduced.c").read_bytes())
    assert summary["bytes_before"] == len(VARIANT.read_bytes())
    assert summary["language"] == "c"
    assert summary["interrupted"] is False
    assert Path(summary["output"]).name == "variant.reduced.c"


def test_jobs_do_not_change_the_result(reduced):
    one = (reduced[1][0] / "variant.reduced.c").read_bytes()
    two = (reduced[2][0] / "variant.reduced.c").read_bytes()
    assert one == two


def test_second_run_reaches_the_same_result(tmp_path, reduced):
    """Reducing the reduced file again changes nothing."""
    cwd = tmp_path
    shutil.copy(reduced[1][0] / "variant.reduced.c", cwd / "small.c")
    process = run_cli("small.c", "--test", TEST_SH, "--output", "again.c", "--jobs", 2, cwd=cwd)
    assert process.returncode == 0, process.stderr
    assert (cwd / "again.c").read_bytes() == (cwd / "small.c").read_bytes()


def test_interesting_polarity_with_a_cvise_style_script(tmp_path, reduced):
    cwd = workdir(tmp_path)
    for script in (TEST_SH, INTERESTING_SH):
        shutil.copy(script, cwd / script.name)
    # relative script path, no argument: the script finds the one *.c in its cwd
    process = run_cli(
        "variant.c", "--interesting", "./interesting.sh", "-o", "out.c", "--jobs", 2, cwd=cwd
    )
    assert process.returncode == 0, process.stderr
    output = cwd / "out.c"
    assert reproduces(output)
    assert output.read_bytes() == (reduced[1][0] / "variant.reduced.c").read_bytes()


def test_test_gets_the_candidate_as_placeholder(tmp_path):
    cwd = workdir(tmp_path)
    process = run_cli(
        "variant.c", "--test", f"{TEST_SH} {{}}", "--output", "out.c", "--jobs", 2, cwd=cwd
    )
    assert process.returncode == 0, process.stderr
    assert reproduces(cwd / "out.c")


def argument_only_test(directory: Path) -> Path:
    """A test in the style of bench cases' `test.sh FILE`: no argument, no verdict."""
    script = directory / "needs-argument.sh"
    script.write_text(
        f'#!/bin/sh\n[ -n "$1" ] || exit 125\nunset GITREDUCE_FILE\nexec {TEST_SH} "$1"\n'
    )
    script.chmod(0o755)
    return script


def test_a_test_that_needs_the_file_as_argument_gets_it(tmp_path):
    cwd = workdir(tmp_path)
    argument_only_test(cwd)
    process = run_cli(
        "variant.c", "--test", "./needs-argument.sh", "--output", "out.c", "--json", cwd=cwd
    )
    assert process.returncode == 0, process.stderr
    assert reproduces(cwd / "out.c")
    summary = json.loads(process.stdout)
    assert summary["test"] == "./needs-argument.sh {}"
    assert summary["tokens_after"] < summary["tokens_before"]
    assert any("only with the file as its argument" in w for w in summary["warnings"])


def test_a_test_wrong_with_and_without_the_argument_reports_the_plain_run(tmp_path):
    (tmp_path / "fine.c").write_text("int main(void) {\n    return 0;\n}\n")
    argument_only_test(tmp_path)
    process = run_cli("fine.c", "--test", "./needs-argument.sh", cwd=tmp_path)
    check_one_line_error(process, "not bad", "exit 125")


def test_a_test_that_fails_whatever_the_file_leaves_an_empty_result_and_says_why(tmp_path):
    """A bench-style `test.sh FILE` whose usage error exits 1, run without `{}`: every
    candidate is bad, the result is empty, and the user is told where to look."""
    cwd = workdir(tmp_path)
    script(
        cwd / "usage-error.sh", "f=${1:?usage: usage-error.sh FILE}\nexec " + f'{TEST_SH} "$f"\n'
    )
    process = run_cli("variant.c", "--test", "./usage-error.sh", "--json", cwd=cwd)
    assert process.returncode == 0, process.stderr
    summary = json.loads(process.stdout)
    assert summary["tokens_after"] == 0
    warning = next(w for w in summary["warnings"] if w.startswith("the result is empty"))
    assert "runs as `./usage-error.sh`" in warning and "`{}`" in warning
    rerun = run_cli(
        "variant.c", "--test", "./usage-error.sh {}", "--output", "out.c", "--json", cwd=cwd
    )
    assert rerun.returncode == 0, rerun.stderr
    assert json.loads(rerun.stdout)["tokens_after"] > 0
    assert not any("empty" in w for w in json.loads(rerun.stdout)["warnings"])


def test_a_set_reduced_to_no_files_is_written_as_an_empty_directory_and_says_why(tmp_path):
    """Two files given to a `test.sh FILE` whose usage error exits 1: they are a set, the
    test runs without a file, every set is bad. The user gets the empty directory the
    summary names, and a warning pointing at the test."""
    (tmp_path / "a.c").write_text("int a;\n")
    (tmp_path / "b.c").write_text("int b;\n")
    script(tmp_path / "usage-error.sh", "f=${1:?usage: usage-error.sh FILE}\nexit 0\n")
    process = run_cli("a.c", "b.c", "--test", "./usage-error.sh", "--json", cwd=tmp_path)
    assert process.returncode == 0, process.stderr
    summary = json.loads(process.stdout)
    assert summary["files"] == []
    assert Path(summary["output"]).is_dir() and not any(Path(summary["output"]).iterdir())
    warning = next(w for w in summary["warnings"] if w.startswith("the result is empty"))
    assert "`./usage-error.sh`" in warning and "`{}`" in warning


def test_plain_text_without_grammar_warns(tmp_path):
    (tmp_path / "notes.txt").write_text("alpha beta\ngamma NEEDLE delta\nepsilon\n")
    script = tmp_path / "has-needle.sh"
    script.write_text('#!/bin/sh\ngrep -q NEEDLE "$GITREDUCE_FILE" && exit 1\nexit 0\n')
    script.chmod(0o755)
    process = run_cli("notes.txt", "--test", script, "--jobs", 1, "--json", cwd=tmp_path)
    assert process.returncode == 0, process.stderr
    assert (tmp_path / "notes.reduced.txt").read_text().split() == ["NEEDLE"]
    summary = json.loads(process.stdout)
    assert summary["language"] is None
    assert any("no grammar" in warning for warning in summary["warnings"])
    assert "warning:" in process.stderr


# --- bad input ---------------------------------------------------------------------------


def script(path: Path, body: str, mode: int = 0o755) -> Path:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(mode)
    return path


def check_one_line_error(process: subprocess.CompletedProcess[str], *expected: str) -> None:
    assert process.returncode == 2, (process.returncode, process.stderr)
    assert "Traceback" not in process.stderr
    lines = process.stderr.strip().splitlines()
    assert len(lines) == 1, process.stderr
    assert lines[0].startswith("error:"), lines
    for fragment in expected:
        assert fragment in lines[0], lines


def test_no_output_may_be_an_input_and_the_refusal_comes_before_any_test(tmp_path):
    """A seed named like the pair's default output (`variant.seed.c` beside `variant.c`),
    `--output` naming the file reduced, and a set written into its own directory: each
    would overwrite (or, for the set, remove) what the user gave. A counting test shows
    none of them ran it."""
    cwd = workdir(tmp_path)
    shutil.copy(cwd / "variant.c", cwd / "variant.seed.c")
    (cwd / "set").mkdir()
    shutil.copy(cwd / "variant.c", cwd / "set" / "variant.c")
    before = {path: path.read_bytes() for path in cwd.rglob("*.c")}
    log = cwd / "runs"
    counting = script(cwd / "counting.sh", f'echo run >> {log}\nexec {TEST_SH} "$@"\n')
    for arguments, given in (
        (["--seed", "variant.seed.c", "--variant", "variant.c"], "variant.seed.c"),
        (["variant.c", "--output", "./variant.c"], "variant.c"),
        (["set", "--output", "set"], "set"),
    ):
        process = run_cli(*arguments, "--test", f"{counting} {{}}", cwd=cwd)
        check_one_line_error(process, "would overwrite the input", given, "--output")
    assert not log.exists()
    assert {path: path.read_bytes() for path in cwd.rglob("*.c")} == before


def test_missing_file(tmp_path):
    process = run_cli("nowhere.c", "--test", TEST_SH, cwd=tmp_path)
    check_one_line_error(process, "nowhere.c")


def test_empty_directory(tmp_path):
    """A directory is a file set (see tests/sessions/test_fileset.py); an empty one is an
    error."""
    (tmp_path / "src").mkdir()
    process = run_cli("src", "--test", TEST_SH, cwd=tmp_path)
    check_one_line_error(process, "no files to reduce under src")


def test_binary_file(tmp_path):
    (tmp_path / "blob.c").write_bytes(b"int main(void) { return 0; }\n\0\x01\x02")
    process = run_cli("blob.c", "--test", TEST_SH, cwd=tmp_path)
    check_one_line_error(process, "binary")


@pytest.mark.parametrize("content", [b"", b"\n  \n\t\n"], ids=["empty", "blank"])
def test_empty_file(tmp_path, content):
    (tmp_path / "empty.c").write_bytes(content)
    process = run_cli("empty.c", "--test", TEST_SH, cwd=tmp_path)
    check_one_line_error(process, "empty")


def test_test_script_not_executable(tmp_path):
    cwd = workdir(tmp_path)
    shutil.copy(TEST_SH, cwd / "test.sh")
    (cwd / "test.sh").chmod(0o644)
    process = run_cli("variant.c", "--test", "./test.sh", cwd=cwd)
    check_one_line_error(process, "not executable")


def test_test_command_not_found(tmp_path):
    cwd = workdir(tmp_path)
    process = run_cli("variant.c", "--test", "./no-such-test.sh", cwd=cwd)
    check_one_line_error(process, "could not run", "not found")


@pytest.mark.parametrize("command", ["", "   "])
def test_an_empty_test_command_is_refused(tmp_path, command):
    cwd = workdir(tmp_path)
    process = run_cli("variant.c", "--test", command, cwd=cwd)
    check_one_line_error(process, "the test command is empty")


def test_original_is_good(tmp_path):
    (tmp_path / "fine.c").write_text("int main(void) {\n    return 0;\n}\n")
    process = run_cli("fine.c", "--test", TEST_SH, cwd=tmp_path)
    check_one_line_error(process, "not bad")


def test_original_is_good_under_interesting(tmp_path):
    (tmp_path / "fine.c").write_text("int main(void) {\n    return 0;\n}\n")
    process = run_cli("fine.c", "--interesting", INTERESTING_SH, cwd=tmp_path)
    check_one_line_error(process)


def test_flaky_test(tmp_path):
    cwd = workdir(tmp_path)
    process = run_cli(*flaky_case(tmp_path), cwd=cwd)
    check_one_line_error(process, "flaky")


def test_unknown_language(tmp_path):
    cwd = workdir(tmp_path)
    process = run_cli("variant.c", "--test", TEST_SH, "--language", "cobol", cwd=cwd)
    check_one_line_error(process, "unknown language 'cobol'", "python")


def flaky_case(tmp_path: Path) -> list[str | Path]:
    counter = tmp_path / "counter"
    flaky = script(
        tmp_path / "flaky.sh",
        f'n=$(cat "{counter}" 2>/dev/null || echo 0)\n'
        f'echo $((n + 1)) > "{counter}"\n'
        "exit $((n % 2))\n",
    )
    return ["variant.c", "--test", flaky, "--jobs", 1]


@pytest.mark.parametrize(
    "case",
    [
        lambda tmp_path: ["variant.c", "--test", TEST_SH, "--language", "cobol"],
        flaky_case,
        lambda tmp_path: [
            tmp_path / ("a-rather-long-directory-name-" * 2) / "missing.c",
            "--test",
            TEST_SH,
        ],
    ],
    ids=["unknown-language", "flaky", "long-path"],
)
def test_errors_are_one_line_at_the_default_width(tmp_path, case):
    cwd = workdir(tmp_path)
    process = run_cli(*case(tmp_path), cwd=cwd, wide=False)
    check_one_line_error(process)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["variant.c", "--keep", "variant.c"], "--keep is for a file set"),
        ([".", "--html", "report.html"], "--html is for one file or a pair"),
        ([".", "--language", "c"], "--language is for one file"),
        (["variant.c", "missing.c"], "missing.c: no such file or directory"),
    ],
    ids=["keep-one-file", "html-set", "language-set", "missing-member"],
)
def test_file_set_misuse_is_one_error_line(tmp_path, args, expected):
    cwd = workdir(tmp_path)
    process = run_cli(*args, "--test", TEST_SH, cwd=cwd)
    check_one_line_error(process, expected)


def test_a_change_to_several_files_from_commits(tmp_path):
    work = tmp_path / "work"
    (work / "app").mkdir(parents=True)
    git(work, "init", "-q", "-b", "main")
    (work / "app" / "a.py").write_text("x = 0\n")
    (work / "app" / "b.py").write_text("y = 0\n")
    git(work, "add", ".")
    git(work, "commit", "-q", "-m", "good")
    (work / "app" / "a.py").write_text("x = 1\nz = 2\n")
    (work / "app" / "b.py").write_text("y = 1\n")
    (work / "app" / "c.py").write_text("w = 3\n")
    git(work, "add", ".")
    git(work, "commit", "-q", "-m", "bad")
    bad = git(work, "rev-parse", "--short=7", "HEAD").stdout.strip()
    test = "grep -q 'x = 1' a.py"
    process = run_cli("HEAD~1..HEAD", "--", "app/", "--interesting", test, cwd=work)
    assert process.returncode == 0, process.stderr
    assert "files: seed 2 → 1, variant 3 → 1, 1 differ" in process.stderr
    assert "warning" not in process.stderr  # pairwise: nothing left undone to warn about
    assert git(work, "show", f"reduce/app-{bad}:app/a.py").stdout == "x = 1\n"
    assert git(work, "show", f"reduce/app-{bad}~1:app/a.py").stdout != "x = 1\n"


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--seed", "seeds", "--variant", "variant.c"], "give both --seed and --variant as"),
        (["--seed", "seeds", "--variant", "variants", "--html", "r.html"], "--html is for"),
        (["--seed", "seeds", "--variant", "variants", "--algorithm", "dd"], "ppr only"),
        (["--seed", "seeds", "--variant", "variants", "--language", "c"], "--language is for"),
        (["--seed", "seeds", "--variant", "seeds"], "identical"),
    ],
    ids=["file-and-directory", "html", "algorithm", "language", "identical"],
)
def test_set_pair_misuse_is_one_error_line(tmp_path, args, expected):
    cwd = workdir(tmp_path)
    for name in ("seeds", "variants"):
        (cwd / name).mkdir()
        shutil.copy(VARIANT, cwd / name / "prog.c")
    (cwd / "variants" / "more.c").write_text("int more;\n")
    process = run_cli(*args, "--test", TEST_SH, cwd=cwd)
    check_one_line_error(process, expected)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["variant.c", "--algorithm", "dd"], "--algorithm is for a pair"),
        (["variant.c", "--no-bisect"], "--no-bisect is for GOOD..BAD"),
        (["--seed", "variant.c", "--variant", "variant.c", "--no-bisect"], "--no-bisect is for"),
    ],
    ids=["algorithm-single", "no-bisect-single", "no-bisect-pair"],
)
def test_an_option_the_mode_would_ignore_is_one_error_line(tmp_path, args, expected):
    """A careless `--algorithm dd` or `--no-bisect` on a run they do not apply to used to
    be dropped without a word; now the run does not start."""
    process = run_cli(*args, "--test", TEST_SH, cwd=workdir(tmp_path))
    check_one_line_error(process, expected)


def test_test_and_interesting_together(tmp_path):
    cwd = workdir(tmp_path)
    process = run_cli("variant.c", "--test", TEST_SH, "--interesting", INTERESTING_SH, cwd=cwd)
    check_one_line_error(process, "--test", "--interesting")


def test_neither_test_nor_interesting(tmp_path):
    cwd = workdir(tmp_path)
    process = run_cli("variant.c", cwd=cwd)
    check_one_line_error(process)


def test_signature_and_any_failure_together(tmp_path):
    cwd = workdir(tmp_path)
    process = run_cli("variant.c", "--test", TEST_SH, "--signature", "x", "--any-failure", cwd=cwd)
    check_one_line_error(process)


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [("(", "invalid signature pattern"), ("no such text", "matches nothing")],
)
def test_unusable_signature_pattern(tmp_path, pattern, expected):
    cwd = workdir(tmp_path)
    process = run_cli("variant.c", "--test", TEST_SH, "--signature", pattern, cwd=cwd)
    check_one_line_error(process, expected)


def test_output_in_a_missing_directory(tmp_path):
    cwd = workdir(tmp_path)
    process = run_cli("variant.c", "--test", TEST_SH, "--output", "no/such/dir/out.c", cwd=cwd)
    check_one_line_error(process, "no/such/dir")


@pytest.mark.parametrize(
    ("option", "expected"),
    [
        (["--timeout", "-1"], "positive number of seconds, not -1"),
        (["--timeout", "0"], "positive number of seconds, not 0"),
        (["--timeout", "nan"], "positive number of seconds, not nan"),
        (["--timeout", "inf"], "positive number of seconds, not inf"),
        (["--jobs", "0"], "--jobs"),
        (["--branch", "a..b"], "'a..b' is not a valid branch name"),
        (["--patch", "no/such/dir/bug.patch"], "no/such/dir"),
        (["--patch", "."], "is a directory"),
        (["--html", "no/such/dir/report.html"], "no/such/dir"),
        (["--output", "."], "is a directory; give the file to write"),
    ],
    ids=lambda value: " ".join(value) if isinstance(value, list) else None,
)
def test_option_values_that_cannot_work_are_refused_before_any_test(tmp_path, option, expected):
    """Each of these used to run the whole reduction (a timeout of -1 or 0 timed nothing,
    nan and inf crashed; the branch, patch and report failed only after it)."""
    cwd = workdir(tmp_path)
    runs = tmp_path / "runs"
    counting = script(tmp_path / "counting.sh", f'echo run >> "{runs}"\nexec "{TEST_SH}" "$1"\n')
    process = run_cli("variant.c", "--test", f"{counting} {{}}", *option, cwd=cwd)
    check_one_line_error(process, expected)
    assert not runs.exists()


def test_hanging_test_with_timeout(tmp_path):
    cwd = workdir(tmp_path)
    pids = tmp_path / "pids"
    hang = script(
        tmp_path / "hang.sh", f'echo $$ >> "{pids}"\nsleep 60 &\necho $! >> "{pids}"\nwait\n'
    )
    start = time.monotonic()
    process = run_cli("variant.c", "--test", hang, "--timeout", "1", cwd=cwd, timeout=30)
    assert time.monotonic() - start < 10
    check_one_line_error(process, "timed out")
    for pid in map(int, pids.read_text().split()):
        assert wait_dead(pid), f"test process {pid} survived"
    assert scratch_dirs(cwd / "tmp") == []


def test_a_result_ends_with_a_newline_when_the_original_did(tmp_path):
    """R's grammar makes a statement's newline a token, which the token pass deletes: the
    reduced file used to end without one."""
    (tmp_path / "crash.R").write_bytes(b"y <- 2\nx <- 1/0\n")
    divides = script(tmp_path / "divides.sh", "grep -q '1/0' \"$1\" && exit 1; exit 0\n")
    process = run_cli("crash.R", "--test", f"{divides} {{}}", "-o", "out.R", cwd=tmp_path)
    assert process.returncode == 0, process.stderr
    assert (tmp_path / "out.R").read_bytes() == b"1/0\n"


def test_a_test_that_hangs_on_the_original_is_announced_before_its_timeout(tmp_path):
    """It used to be minutes of silence (the default timeout is 300 s) and then the error."""
    cwd = workdir(tmp_path)
    hang = script(tmp_path / "hang.sh", "sleep 60\n")
    start = time.monotonic()
    process = run_cli("variant.c", "--test", hang, "--timeout", "5", cwd=cwd, timeout=60)
    assert time.monotonic() - start < 30
    assert process.returncode == 2, process.stderr
    assert process.stderr.splitlines() == [
        "waiting for the test on the original (timeout 5 s)",
        "error: the test timed out on the original after 5 s",
    ]


def test_quiet_still_reports_errors(tmp_path):
    process = run_cli("nowhere.c", "--test", TEST_SH, "--quiet", cwd=tmp_path)
    check_one_line_error(process, "nowhere.c")


def test_quiet_success_prints_nothing(tmp_path):
    cwd = workdir(tmp_path)
    process = run_cli("variant.c", "--test", TEST_SH, "--quiet", "-o", "q.c", cwd=cwd)
    assert process.returncode == 0
    assert process.stderr == "" and process.stdout == ""
    assert reproduces(cwd / "q.c")


# --- subcommands, the pass profile, passes switched off ----------------------------------


def test_help_lists_the_subcommands(tmp_path):
    process = run_cli("--help", cwd=tmp_path)
    assert process.returncode == 0, process.stderr
    assert "generate" in process.stdout and "hooks" in process.stdout
    assert "--skip-pass" in process.stdout  # and the default command's own options
    for subcommand, expected in (("hooks", "uninstall"), ("generate", "--seed")):
        process = run_cli(subcommand, "--help", cwd=tmp_path)
        assert process.returncode == 0, process.stderr
        assert f"git reduce {subcommand}" in process.stdout and expected in process.stdout


def test_hooks_install_and_uninstall_through_the_one_app(tmp_path):
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    hook = repo / ".git" / "hooks" / "post-commit"
    process = run_cli("hooks", "install", cwd=repo)
    assert process.returncode == 0, process.stderr
    assert "installed" in process.stderr and hook.is_file()
    process = run_cli("hooks", "uninstall", cwd=repo)
    assert process.returncode == 0, process.stderr
    assert "removed" in process.stderr and not hook.exists()
    check_one_line_error(run_cli("hooks", "bogus", cwd=repo), "bogus")


def test_a_file_named_like_a_subcommand_is_reduced(tmp_path):
    shutil.copy(VARIANT, tmp_path / "hooks")
    process = run_cli(
        "hooks", "--test", f"{TEST_SH} {{}}", "--language", "c", "-o", "small.c", cwd=tmp_path
    )
    assert process.returncode == 0, process.stderr
    assert reproduces(tmp_path / "small.c")
    assert len((tmp_path / "small.c").read_bytes()) * 5 < len(VARIANT.read_bytes())


def profile_rows(stdout: str) -> dict[str, list[int]]:
    """The `--stats` table's rows: pass label -> runs, tests, cached, rejected, successes."""
    rows = {}
    for line in stdout.splitlines():
        fields = line.split()
        if len(fields) == 8 and fields[1].isdigit():
            rows[fields[0]] = [int(field) for field in fields[1:6]]
    return rows


def test_stats_prints_the_pass_profile_and_skip_pass_switches_one_off(tmp_path):
    cwd = workdir(tmp_path)
    process = run_cli("variant.c", "--test", TEST_SH, "--stats", "--jobs", 2, cwd=cwd)
    assert process.returncode == 0, process.stderr
    assert process.stdout.startswith("passes")
    rows = profile_rows(process.stdout)
    assert next(iter(rows)) == "tree" and {"tokens", "windows", "tidy"} <= set(rows)
    tests = int(re.search(r"; (\d+) tests,", process.stderr)[1])
    assert sum(row[1] for row in rows.values()) == tests
    # the verdicts are cached now: the same reduction again, windows switched off
    process = run_cli(
        "variant.c", "--test", TEST_SH, "--skip-pass", "windows", "--stats", "--json", cwd=cwd
    )
    assert process.returncode == 0, process.stderr
    labels = [row["pass"] for row in json.loads(process.stdout)["passes"]]  # no table: JSON
    assert "windows" not in labels and {"tree", "tokens", "tidy"} <= set(labels)
    assert reproduces(cwd / "variant.reduced.c")
    assert "rename" in labels  # on by default: the result's names get short
    assert b"count" not in (cwd / "variant.reduced.c").read_bytes()
    # --no-rename switches it off: the result keeps the original's names
    process = run_cli("variant.c", "--test", TEST_SH, "--no-rename", "--json", cwd=cwd)
    assert process.returncode == 0, process.stderr
    labels = [row["pass"] for row in json.loads(process.stdout)["passes"]]
    assert "rename" not in labels and "tidy" in labels
    assert b"count" in (cwd / "variant.reduced.c").read_bytes()
    assert reproduces(cwd / "variant.reduced.c")


def test_json_pass_profile_adds_up(reduced):
    summary = json.loads(reduced[1][1].stdout)
    passes = summary["passes"]
    assert passes[0]["pass"] == "tree"
    assert sum(row["tests"] for row in passes) == summary["tests_run"]
    assert {row["pass"]: row["tests"] for row in passes if row["tests"]} == summary["tests_by_pass"]


def test_an_unknown_pass_is_one_error_line(tmp_path):
    cwd = workdir(tmp_path)
    process = run_cli("variant.c", "--test", TEST_SH, "--skip-pass", "bogus", cwd=cwd, wide=False)
    check_one_line_error(process, "unknown pass 'bogus'", "windows", "min-commonality/tree")


def test_list_passes_names_every_pass(tmp_path):
    process = run_cli("--list-passes", cwd=tmp_path)
    assert process.returncode == 0 and process.stderr == ""
    listed = [line.split()[0] for line in process.stdout.splitlines() if line.startswith("  ")]
    assert listed == [name for name in known_passes() if "/" not in name]
    assert "single program" in process.stdout and "pairwise (PPR" in process.stdout


# --- interruption ------------------------------------------------------------------------


def alive(pid: int) -> bool:
    """Zombies count as dead: an orphan's reaper may be slow (or absent in containers)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state != "Z"


def wait_dead(pid: int, within: float = 3.0) -> bool:
    deadline = time.monotonic() + within
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def default_sigint() -> None:
    # a shell without job control starts background jobs with SIGINT ignored, and
    # Python keeps an inherited SIG_IGN; the user's interactive git-reduce would not
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class SlowRun:
    """git-reduce in its own session on a test that sleeps `seconds` (in a child) per run.

    Every run appends the pids of its shell and of its sleep to `pids`.
    """

    def __init__(self, tmp_path: Path, seconds: float, jobs: int) -> None:
        self.cwd = workdir(tmp_path / "work")
        self.scratch = tmp_path / "scratch"
        self.scratch.mkdir()
        self.pids = tmp_path / "pids"
        self.slow = slow = script(
            tmp_path / "slow.sh",
            f'echo $$ >> "{self.pids}"\n'
            f"sleep {seconds} &\n"
            f'echo $! >> "{self.pids}"\n'
            "wait $!\n"
            f'exec "{TEST_SH}" "$GITREDUCE_FILE"\n',
        )
        command = ["variant.c", "--test", slow, "--jobs", jobs, "-o", "out.c"]
        self.process = subprocess.Popen(
            [str(GIT_REDUCE), *map(str, command)],
            cwd=self.cwd,
            env=environment(self.scratch),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
            preexec_fn=default_sigint,
        )
        self.stderr = ""

    def recorded(self) -> list[int]:
        return [int(pid) for pid in self.pids.read_text().split()] if self.pids.exists() else []

    def wait_for_runs(self, runs: int, within: float = 30) -> None:
        deadline = time.monotonic() + within
        while len(self.recorded()) < 2 * runs:
            assert self.process.poll() is None, self.process.communicate()
            assert time.monotonic() < deadline, "the test never ran"
            time.sleep(0.02)

    def interrupt(self, signum: int, within: float) -> float:
        """Send `signum`, wait for the exit; seconds taken (a failure after `within`)."""
        start = time.monotonic()
        self.process.send_signal(signum)
        try:
            _, self.stderr = self.process.communicate(timeout=within)
        except subprocess.TimeoutExpired:
            pytest.fail(f"git-reduce still running {within} s after {signum.name}")
        return time.monotonic() - start

    def cleanup(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.communicate()
        for pid in self.recorded():  # each run is its own process group, led by `sh -c`
            with contextlib.suppress(OSError):
                group = os.getpgid(pid)
                if str(self.slow).encode() in Path(f"/proc/{group}/cmdline").read_bytes():
                    os.killpg(group, signal.SIGKILL)

    def survivors(self) -> list[int]:
        return [pid for pid in self.recorded() if not wait_dead(pid)]


@pytest.fixture
def slow_run(tmp_path):
    runs: list[SlowRun] = []

    def start(seconds: float, jobs: int) -> SlowRun:
        runs.append(SlowRun(tmp_path, seconds, jobs))
        return runs[-1]

    yield start
    for run in runs:
        run.cleanup()


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_interrupt_keeps_the_best_result_and_cleans_up(slow_run, signum):
    run = slow_run(0.3, jobs=2)
    run.wait_for_runs(2 + 4)  # the two calibration runs, then a few candidates
    assert scratch_dirs(run.scratch)  # they exist while it runs
    run.interrupt(signum, within=5)
    assert run.process.returncode == 130, run.stderr
    assert "Traceback" not in run.stderr
    output = run.cwd / "out.c"
    assert output.exists()
    assert reproduces(output)
    assert len(output.read_bytes()) <= len(VARIANT.read_bytes())
    assert scratch_dirs(run.scratch) == []
    assert run.survivors() == []


def test_sigint_during_calibration_with_one_job(slow_run):
    run = slow_run(30, jobs=1)
    run.wait_for_runs(1)
    assert run.interrupt(signal.SIGINT, within=5) < 5
    assert run.process.returncode == 130, run.stderr
    assert "Traceback" not in run.stderr
    assert scratch_dirs(run.scratch) == []
    assert run.survivors() == []


def test_sigint_during_parallel_calibration_is_prompt(slow_run):
    run = slow_run(30, jobs=2)
    run.wait_for_runs(2)
    run.interrupt(signal.SIGINT, within=4)
    assert run.process.returncode == 130, run.stderr
    assert scratch_dirs(run.scratch) == []
    assert run.survivors() == []


@pytest.mark.parametrize("jobs", [1, 2])
def test_sigterm_during_calibration_cleans_up(slow_run, jobs):
    run = slow_run(30, jobs=jobs)
    run.wait_for_runs(jobs)
    run.interrupt(signal.SIGTERM, within=4)
    assert run.process.returncode == 130, run.stderr
    assert scratch_dirs(run.scratch) == []
    assert run.survivors() == []


# --- a triage widening a running reduction: `--progress-file P` and `P.jobs` ---


def counting_test(directory: Path) -> tuple[Path, Path]:
    """The fixture's test, noting how many of its runs were going at once at each start."""
    runs = directory / "runs"
    runs.mkdir()
    seen = directory / "seen"
    script = directory / "counting.sh"
    script.write_text(
        "#!/bin/sh\n"
        f'mine=$(mktemp -p "{runs}")\n'
        f'ls "{runs}" | wc -l >> "{seen}"\n'
        "sleep 0.05\n"
        f'"{TEST_SH}" "$1"\n'
        "code=$?\n"
        'rm -f "$mine"\n'
        'exit "$code"\n'
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script, seen


@pytest.mark.parametrize("widened", [False, True])
def test_a_jobs_file_beside_the_progress_file_widens_the_run(tmp_path, widened):
    cwd = workdir(tmp_path / "work")
    script, seen = counting_test(tmp_path)
    progress = tmp_path / "progress.json"
    if widened:
        (tmp_path / "progress.json.jobs").write_text("3")
    process = run_cli(
        "variant.c", "--test", f"{script} {{}}", "--jobs", 1, "--output", "out.c",
        "--progress-file", progress, cwd=cwd, timeout=120,
    )  # fmt: skip
    assert process.returncode == 0, process.stderr
    most = max(int(line) for line in seen.read_text().split())
    assert (most > 1) == widened
    assert progress.exists()


# What only the other modes need: a single file's reduction must start without loading it.
_OTHER_MODES = (
    "gitreduce.pair.ppr",
    "gitreduce.pair.current",
    "gitreduce.generator.replay",
    "gitreduce.sessions.pair",
    "gitreduce.sessions.fileset",
    "gitreduce.sessions.setpair",
    "gitreduce.sessions.generate",
    "gitreduce.sessions.triage",
)


def test_a_single_files_reduction_loads_none_of_the_other_modes(tmp_path):
    """Start-up is part of every run's wall time (and of every completion and hook): the
    pairwise, file-set, generator and triage modules load only when their mode runs."""
    (tmp_path / "prog.c").write_text("int unused;\nint main(void) { return 1; }\n")
    loaded = tmp_path / "loaded.txt"
    child = (
        "import atexit, sys\n"
        "def report():\n"
        f"    open({str(loaded)!r}, 'w').write('\\n'.join(sorted(sys.modules)))\n"
        "atexit.register(report)\n"
        "sys.argv = ['git-reduce', *sys.argv[1:]]\n"
        "from gitreduce.cli import main\n"
        "main()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", child, "prog.c", "--interesting", "grep -q main {}", "--jobs", "1"],
        cwd=tmp_path,
        env=os.environ | {"XDG_CACHE_HOME": str(tmp_path / "cache")},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    modules = set(loaded.read_text().split())
    assert "gitreduce.sessions.single" in modules
    assert not modules.intersection(_OTHER_MODES)
