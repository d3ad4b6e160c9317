"""`git reduce <TAB>` in a real bash: git's own completion script loaded, then ours
(`git reduce completion bash`), completion driven as bash drives it (COMP_WORDS,
COMP_CWORD) through git's entry point, COMPREPLY printed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support import git

GIT_REDUCE = Path(sys.executable).parent / "git-reduce"
GIT_COMPLETION = Path("/usr/share/bash-completion/completions/git")

pytestmark = pytest.mark.skipif(
    not GIT_COMPLETION.exists() or shutil.which("bash") is None,
    reason="needs bash and git's bash completion",
)

DRIVER = r"""
source "$GIT_COMPLETION"
source <("$GIT_REDUCE" completion bash)
line="$1"
read -ra COMP_WORDS <<< "$line"
[[ "$line" == *" " ]] && COMP_WORDS+=("")
COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
COMP_LINE="$line"
COMP_POINT=${#line}
COMPREPLY=()
__git_wrap__git_main
printf '%s\n' "${COMPREPLY[@]}"
"""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    git(tmp_path, "init", "-q", "-b", "main")
    (tmp_path / "prog.c").write_text("int main(void) { return 0; }\n")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-qm", "start")
    git(tmp_path, "branch", "fuzzer-finding")
    return tmp_path


def complete(repo: Path, line: str) -> list[str]:
    env = dict(
        os.environ,
        GIT_COMPLETION=str(GIT_COMPLETION),
        GIT_REDUCE=str(GIT_REDUCE),
        PATH=f"{GIT_REDUCE.parent}:{os.environ['PATH']}",
        HOME=str(repo),
    )
    process = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", DRIVER, "driver", line],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert process.returncode == 0, process.stderr
    return [word.strip() for word in process.stdout.splitlines() if word.strip()]


def test_options_complete(repo):
    words = complete(repo, "git reduce --ti")
    assert words == ["--timeout="]
    assert "--seed=" in complete(repo, "git reduce --")


def test_refs_and_subcommands_complete(repo):
    words = complete(repo, "git reduce ")
    assert "fuzzer-finding" in words
    assert "main" in words
    assert "generate" in words and "triage" in words
    assert complete(repo, "git reduce fuz") == ["fuzzer-finding"]


def test_a_revision_range_completes_its_second_end(repo):
    assert complete(repo, "git reduce main..fuz") == ["main..fuzzer-finding"]


def test_subcommands_complete_their_own_options(repo):
    assert "--workers=" in complete(repo, "git reduce triage --")
    assert "--workers=" not in complete(repo, "git reduce --")
    assert complete(repo, "git reduce hooks ") == ["install", "uninstall"]
    assert "--force" in complete(repo, "git reduce hooks install --")


def test_option_values_complete(repo):
    assert complete(repo, "git reduce --executor dask") == ["dask-local", "dask://"]
    assert "fuzzer-finding" in complete(repo, "git reduce --branch ")


def test_the_zsh_completion_defines_the_function_git_calls(tmp_path):
    process = subprocess.run(
        [str(GIT_REDUCE), "completion", "zsh"], capture_output=True, text=True, cwd=tmp_path
    )
    assert process.returncode == 0
    assert "_git-reduce () {" in process.stdout
    assert "--timeout" in process.stdout
