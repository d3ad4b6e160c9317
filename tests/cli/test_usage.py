"""`-h`, no-argument usage and `--version`, as a git user meets them: the installed
`git-reduce`, run as a process.

git answers `git CMD -h` with the short usage on stdout and exit 129 (so does a
usage error); `git reduce` and each subcommand do the same, while bad input to
a real run keeps exit 2.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.core import TyperGroup
from typer.main import get_command

from gitreduce.cli.app import app
from gitreduce.cli.usage import EXIT_USAGE, pages
from gitreduce.git.config import BRANCH_PREFIX, EXECUTOR, JOBS, TIMEOUT

GIT_REDUCE = Path(sys.executable).parent / "git-reduce"


def _tree() -> TyperGroup:
    root = get_command(app)
    assert isinstance(root, TyperGroup)
    return root


COMMANDS = [page.name.split()[2:] for page in pages(_tree())]


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, COLUMNS="80", HOME=str(cwd))
    return subprocess.run(
        [str(GIT_REDUCE), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60
    )


def test_every_command_is_covered():
    assert [] in COMMANDS
    assert {"generate", "count", "triage", "hooks", "completion"} <= {
        words[0] for words in COMMANDS if words
    }
    assert ["hooks", "install"] in COMMANDS


@pytest.mark.parametrize("words", COMMANDS, ids=lambda words: " ".join(words) or "git reduce")
def test_dash_h_prints_the_usage_on_stdout_and_exits_129(words, tmp_path):
    process = run(*words, "-h", cwd=tmp_path)
    assert process.returncode == EXIT_USAGE == 129
    assert process.stdout.startswith(f"usage: {' '.join(['git reduce', *words])}")
    assert process.stderr == ""
    assert "-h " in process.stdout


@pytest.mark.parametrize("words", [[], ["generate"], ["count"], ["hooks"], ["completion"]], ids=str)
def test_a_command_without_its_arguments_prints_the_usage_and_exits_129(words, tmp_path):
    process = run(*words, cwd=tmp_path)
    assert process.returncode == 129, process.stderr
    assert process.stdout == run(*words, "-h", cwd=tmp_path).stdout


def test_dash_h_after_other_options_still_asks_for_the_usage(tmp_path):
    (tmp_path / "prog.c").write_text("int main(void) { return 0; }\n")
    process = run("prog.c", "--test", "false", "-h", cwd=tmp_path)
    assert process.returncode == 129
    assert process.stdout.startswith("usage: git reduce FILE --test CMD")


def test_a_file_named_like_a_subcommand_is_reduced_so_its_usage_is_the_reducers(tmp_path):
    (tmp_path / "count").write_text("x\n")
    process = run("count", "-h", cwd=tmp_path)
    assert process.returncode == 129
    assert process.stdout.startswith("usage: git reduce FILE --test CMD")


def test_triage_needs_no_argument_so_it_runs(tmp_path):
    process = run("triage", cwd=tmp_path)
    assert process.returncode == 2
    assert process.stdout == ""
    assert process.stderr.startswith("error:")


def test_bad_input_to_a_real_run_keeps_exit_2(tmp_path):
    process = run("--no-such-option", cwd=tmp_path)
    assert process.returncode == 2
    assert process.stderr.startswith("error:")
    process = run("missing.c", "--test", "true", cwd=tmp_path)
    assert process.returncode == 2
    assert len(process.stderr.strip().splitlines()) == 1


def test_the_usage_names_the_config_keys_and_the_subcommands(tmp_path):
    usage = run("-h", cwd=tmp_path).stdout
    for key in (JOBS, TIMEOUT, BRANCH_PREFIX, EXECUTOR):
        assert key in usage
    for command in ("generate", "count", "triage", "hooks", "completion"):
        assert f"\n    {command} " in usage
    assert "    -j, --jobs N " in usage


def test_version_names_the_package_grammars_and_pygit2(tmp_path):
    import pygit2

    process = run("--version", cwd=tmp_path)
    assert process.returncode == 0
    lines = process.stdout.splitlines()
    assert lines[0] == "git reduce 0.1.0"
    assert any(line.startswith("tree-sitter-c ") for line in lines)
    assert any(line.startswith("tree-sitter ") for line in lines)
    assert f"pygit2 {pygit2.__version__} (libgit2 {pygit2.LIBGIT2_VERSION})" in lines
    assert "not installed" not in process.stdout
