"""Option defaults from git config: `gitreduce.jobs`, `gitreduce.timeout`,
`gitreduce.branchPrefix`, `gitreduce.executor`, read from the repository's config
and the user's (a real `git config`, a real HOME), the command line winning."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support import git, script

from gitreduce.cli.defaults import default_map
from gitreduce.core.errors import UserError

GIT_REDUCE = Path(sys.executable).parent / "git-reduce"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository with a slow test (the original takes 5 s) and a file it reduces."""
    path = tmp_path / "repo"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    script(path / "slow.sh", "#!/bin/sh\nsleep 5\nexit 1\n")
    script(path / "test.sh", '#!/bin/sh\ngrep -q bug "$1" && exit 1\nexit 0\n')
    (path / "notes.txt").write_text("one two bug three four\n")
    git(path, "add", ".")
    git(path, "commit", "-qm", "start")
    (tmp_path / "home").mkdir()
    return path


def run(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`git reduce ARGS` in `repo`, the user's config being HOME/.gitconfig."""
    home = repo.parent / "home"
    env = dict(
        os.environ,
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_CACHE_HOME=str(home / ".cache"),
        TMPDIR=str(repo.parent),
        COLUMNS="1000",
    )
    return subprocess.run(
        [str(GIT_REDUCE), *args], cwd=repo, env=env, capture_output=True, text=True, timeout=120
    )


def user_config(repo: Path, key: str, value: str) -> None:
    with (repo.parent / "home" / ".gitconfig").open("a") as config:
        section, _, name = key.rpartition(".")
        config.write(f"[{section}]\n\t{name} = {value}\n")


def timed_out_after(process: subprocess.CompletedProcess[str]) -> str:
    assert process.returncode == 2, process.stderr
    assert "the test timed out on the original after" in process.stderr, process.stderr
    return process.stderr.split("after ")[1].split()[0]


def test_the_repository_config_sets_the_timeout_and_the_command_line_wins(repo):
    git(repo, "config", "gitreduce.timeout", "0.5")
    assert timed_out_after(run(repo, "notes.txt", "--test", "./slow.sh {}")) == "0.5"
    assert (
        timed_out_after(run(repo, "notes.txt", "--test", "./slow.sh {}", "--timeout", "0.7"))
        == "0.7"
    )


def test_the_users_config_applies_and_the_repositorys_wins_over_it(repo):
    user_config(repo, "gitreduce.timeout", "0.6")
    assert timed_out_after(run(repo, "notes.txt", "--test", "./slow.sh {}")) == "0.6"
    git(repo, "config", "gitreduce.timeout", "0.5")
    assert timed_out_after(run(repo, "notes.txt", "--test", "./slow.sh {}")) == "0.5"


def test_the_branch_prefix_names_the_result_branch_and_branch_wins(repo):
    git(repo, "config", "gitreduce.branchPrefix", "mine/")
    process = run(repo, "notes.txt", "--test", "./test.sh {}", "--json", "-q")
    assert process.returncode == 0, process.stderr
    branch = json.loads(process.stdout)["branch"]
    assert branch.startswith("mine/"), branch
    assert git(repo, "show", f"{branch}:notes.txt").stdout.strip() == "bug"
    process = run(repo, "notes.txt", "--test", "./test.sh {}", "--json", "-q", "--branch", "x")
    assert json.loads(process.stdout)["branch"] == "x"


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("gitreduce.jobs", "zero"),
        ("gitreduce.jobs", "0"),
        ("gitreduce.timeout", "-1"),
        ("gitreduce.timeout", "soon"),
        ("gitreduce.branchPrefix", "two..dots/"),
        ("gitreduce.executor", "tcp://127.0.0.1:8786"),
    ],
)
def test_a_value_that_cannot_work_is_one_error_line_naming_the_key(repo, key, value):
    git(repo, "config", key, value)
    process = run(repo, "notes.txt", "--test", "./test.sh {}")
    assert process.returncode == 2
    lines = process.stderr.strip().splitlines()
    assert len(lines) == 1, process.stderr
    assert lines[0].startswith(f"error: git config {key}"), lines[0]


def test_a_bad_value_does_not_stand_in_the_way_of_the_usage(repo):
    git(repo, "config", "gitreduce.jobs", "zero")
    assert run(repo, "-h").returncode == 129


def test_the_defaults_go_to_the_commands_that_take_them(repo):
    git(repo, "config", "gitreduce.jobs", "3")
    git(repo, "config", "gitreduce.timeout", "2.5")
    git(repo, "config", "gitreduce.executor", "dask-local")
    git(repo, "config", "gitreduce.triage.workers", "2")
    defaults = default_map(repo)
    for command in ("reduce", "generate"):
        assert defaults[command] == {"jobs": 3, "timeout": 2.5}
    assert defaults["triage"] == {
        "jobs": 3,
        "timeout": 2.5,
        "executor": "dask-local",
        "workers": 2,
    }


def test_git_k_suffixes_count_as_git_counts_them(repo):
    git(repo, "config", "gitreduce.jobs", "1k")
    assert default_map(repo)["reduce"]["jobs"] == 1024
    git(repo, "config", "gitreduce.jobs", "-2")
    with pytest.raises(UserError, match=r"gitreduce\.jobs"):
        default_map(repo)
