"""Tests started without the shell: which commands qualify, and that the test sees and
reports what it would have under `/bin/sh -c`, with real processes."""

import os
import shutil
import sys
from pathlib import Path

import pytest
from support import script

from gitreduce.core.outcome import Verdict
from gitreduce.oracle.direct import direct_argv, shell_status
from gitreduce.oracle.runner import Oracle
from gitreduce.oracle.spec import TestSpec


@pytest.fixture
def programs(tmp_path):
    """An executable script with `#!`, one without, and a script not executable."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script(bin_dir / "check", "exit 0\n")
    without = bin_dir / "bare"
    without.write_text("exit 0\n")
    without.chmod(0o755)
    script(bin_dir / "plain", "exit 0\n", executable=False)
    return bin_dir


@pytest.mark.parametrize(
    ("command", "words"),
    [
        ("check x", ["check", "x"]),
        ("check -std=c99 -O2 'a b.c'", ["check", "-std=c99", "-O2", "a b.c"]),
        ('check "a\\"b" a\\ b \'\' "c\\d"', ["check", 'a"b', "a b", "", "c\\d"]),
        ("  check\tx  ", ["check", "x"]),
    ],
)
def test_a_command_of_plain_and_quoted_words_needs_no_shell(programs, command, words):
    environment = {"PATH": f"{programs}:/usr/bin:/bin"}
    assert direct_argv(command, environment) == (str(programs / "check"), tuple(words))


@pytest.mark.parametrize(
    "command",
    [
        "check $FILE",
        "check `cat f`",
        'check "$FILE"',
        "check *.c",
        "check x > log",
        "check x && true",
        "check x; true",
        "check x | cat",
        "check ~/x",
        "check x # a comment",
        "CC=gcc check x",
        "check 'unterminated",
        "check x\\\ny",
        "cd /tmp",
        "echo x",
        "exec check x",
        "! check x",
        "",
        "bare x",  # no #!: only the shell runs it
        "plain x",  # not executable
        "missing x",
        "./check x",  # relative: the test's directory decides
    ],
)
def test_anything_more_than_words_keeps_the_shell(programs, command):
    assert direct_argv(command, {"PATH": f"{programs}:/usr/bin:/bin"}) is None


def test_a_relative_directory_on_the_path_keeps_the_shell(programs):
    """An empty entry, or ".", is the directory the test runs in, not this one."""
    assert direct_argv("check x", {"PATH": f":{programs}"}) is None
    assert direct_argv("check x", {"PATH": f"{programs}:."}) is not None  # found before


def test_signals_are_reported_as_the_shell_reports_them():
    assert shell_status(-11) == 139
    assert shell_status(3) == 3


def _parent_of_the_test(tmp_path: Path, command_tail: str = "") -> str:
    """The name of the process that started the test, as the test saw it."""
    probe = script(tmp_path / "probe.sh", 'tr -d "\\n" < /proc/$PPID/comm; exit 3\n')
    with Oracle(TestSpec(f"{probe} {{}}{command_tail}", "f.txt", timeout=10), jobs=1) as oracle:
        outcome, output = oracle.run_with_output(b"x")
    assert outcome.exit_code == 3
    return output


def test_a_script_test_is_started_by_the_tool_itself(tmp_path):
    assert _parent_of_the_test(tmp_path) not in ("sh", "dash", "bash")


def test_a_command_with_shell_syntax_still_runs_in_the_shell(tmp_path):
    assert _parent_of_the_test(tmp_path, " || exit 3") in ("sh", "dash", "bash")


def test_a_test_killed_by_a_signal_reads_as_under_the_shell(tmp_path):
    crash = script(tmp_path / "crash.sh", "kill -SEGV $$\n")
    through_shell = f"{crash} {{}} || exit $?"
    for command in (f"{crash} {{}}", through_shell):
        with Oracle(TestSpec(command, "f.txt", timeout=10), jobs=1) as oracle:
            outcome = oracle.run(b"x")
        assert (outcome.verdict, outcome.exit_code) == (Verdict.BROKEN, 139), command


def test_the_test_sees_pwd_as_the_shell_would_have_set_it(tmp_path):
    """The shell exports PWD as the directory it runs in; an interpreter that does not
    reset it itself (Python) must not see the directory gitreduce was started in."""
    check = tmp_path / "check.py"
    check.write_text(
        f"#!{sys.executable}\nimport os, sys\n"
        "sys.exit(0 if os.environ.get('PWD') == os.getcwd() else 1)\n"
    )
    check.chmod(0o755)
    with Oracle(TestSpec(f"{check} {{}}", "f.txt", timeout=10), jobs=1) as oracle:
        assert oracle.run(b"x").verdict is Verdict.GOOD


def test_a_script_without_shebang_runs_as_before(tmp_path):
    bare = tmp_path / "bare.sh"
    bare.write_text('test "$(cat "$1")" = good\n')
    bare.chmod(0o755)
    with Oracle(TestSpec(f"{bare} {{}}", "f.txt", timeout=10), jobs=1) as oracle:
        assert oracle.run(b"good").verdict is Verdict.GOOD
        assert oracle.run(b"bad").verdict is Verdict.BAD


def test_a_program_gone_since_the_oracle_opened_fails_as_under_the_shell(tmp_path):
    """The shell's 127 (not found), not an exception out of the run."""
    program = script(tmp_path / "gone.sh", "exit 0\n")
    with Oracle(TestSpec(f"{program} {{}}", "f.txt", timeout=10), jobs=1) as oracle:
        assert oracle.run(b"x").verdict is Verdict.GOOD
        os.unlink(program)
        assert oracle.run(b"x").exit_code == 127


def test_the_program_is_found_on_the_tests_path(tmp_path, programs):
    """PATH from the spec's environment, as the shell would search it."""
    marker = tmp_path / "ran"
    script(programs / "found", f'touch "{marker}"; exit 0\n')
    path = f"{programs}:{os.environ.get('PATH', os.defpath)}"
    assert direct_argv("found x", {"PATH": path}) is not None
    with Oracle(TestSpec("found {}", "f.txt", timeout=10, env={"PATH": path}), jobs=1) as oracle:
        assert oracle.run(b"x").verdict is Verdict.GOOD
    assert marker.exists()
    assert shutil.which("found") is None  # not on this process's own PATH
