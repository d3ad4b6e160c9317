"""The post-commit hook runs only what this repository's owner defined, never a commit's text.

A finding is committed in a second repository ("elsewhere", with no hook) and
fetched into the user's clone, where the hook is installed with the real
`gitreduce.git.hooks.install`. The finding's message says `Reduce-Test: evil`,
and an executable called `evil` is on PATH: it writes the `pwned` marker, so
a hook that ran the trailer's text as a command would leave it. Every way
git lets such a message reach the hook is tried: amend, `commit -C`,
`cherry-pick -n` then `commit`, conflicted cherry-picks and rebases finished
with `commit` or `--continue`, and a cherry-pick without a reflog.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
from hook_support import hook_env, hook_log, init_repo, note_of, run_git, wait_for_note

from gitreduce.git import hooks

git = run_git
SEED = "keep\nfine\n"
FINDING = "keep\nbad\n"
LOCAL = "keep\nlocal\n"  # the user's own change to the line the finding changes
NOT_DEFINED = (
    "not run: test 'evil' is not defined here (git config gitreduce.test.evil.command ...)"
)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """The clean environment, with a command called `evil` on PATH that leaves `pwned`."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    evil = bin_dir / "evil"
    evil.write_text(f"#!/bin/sh\ntouch {tmp_path / 'pwned'}\nexit 1\n")
    evil.chmod(0o755)
    env = hook_env(tmp_path)
    return env | {"PATH": f"{bin_dir}{':' + env['PATH'] if env['PATH'] else ''}"}


@pytest.fixture
def finding(tmp_path: Path, env: dict[str, str]) -> str:
    """The finding, committed elsewhere on top of a seed; its sha."""
    elsewhere = init_repo(tmp_path / "elsewhere", env, user="Stranger")
    (elsewhere / "f.txt").write_text(SEED)
    # A config file in the tree defines nothing: git reads no config from a commit.
    (elsewhere / ".gitconfig").write_text('[gitreduce "test.evil"]\n\tcommand = evil\n')
    git(elsewhere, env, "add", ".")
    git(elsewhere, env, "commit", "-q", "-m", "seed")
    (elsewhere / "f.txt").write_text(FINDING)
    git(elsewhere, env, "commit", "-q", "-a", "-m", "finding", "-m", "Reduce-Test: evil")
    return git(elsewhere, env, "rev-parse", "HEAD").stdout.strip()


@pytest.fixture
def mine(tmp_path: Path, env: dict[str, str], finding: str) -> Path:
    """The user's clone of the seed, the hook installed, the finding fetched."""
    path = tmp_path / "mine"
    git(tmp_path, env, "clone", "-q", str(tmp_path / "elsewhere"), str(path))
    git(path, env, "config", "user.name", "User")
    git(path, env, "config", "user.email", "user@example.com")
    git(path, env, "reset", "-q", "--hard", "HEAD^")
    git(path, env, "fetch", "-q", "origin")
    hooks.install(path)
    return path


def local_change(repo: Path, env: dict[str, str]) -> None:
    """The user's own commit, changing the line the finding changes: picking it conflicts."""
    (repo / "f.txt").write_text(LOCAL)
    git(repo, env, "commit", "-q", "-a", "-m", "local change")


def resolve_as_the_finding(repo: Path, env: dict[str, str]) -> None:
    (repo / "f.txt").write_text(FINDING)
    git(repo, env, "add", "f.txt")


def amend(repo: Path, env: dict[str, str], finding: str) -> None:
    git(repo, env, "merge", "-q", "--ff-only", finding)
    git(repo, env, "commit", "-q", "--amend", "--no-edit")


def commit_reusing_the_message(repo: Path, env: dict[str, str], finding: str) -> None:
    (repo / "f.txt").write_text(FINDING)
    git(repo, env, "commit", "-q", "-a", "-C", finding)


def cherry_pick_n_then_commit(repo: Path, env: dict[str, str], finding: str) -> None:
    git(repo, env, "cherry-pick", "-n", finding)
    git(repo, env, "commit", "-q", "--no-edit")


def conflicted_cherry_pick_then_commit(repo: Path, env: dict[str, str], finding: str) -> None:
    local_change(repo, env)
    assert git(repo, env, "cherry-pick", finding, check=False).returncode != 0
    resolve_as_the_finding(repo, env)
    git(repo, env, "commit", "-q", "--no-edit")


def conflicted_cherry_pick_continued(repo: Path, env: dict[str, str], finding: str) -> None:
    local_change(repo, env)
    assert git(repo, env, "cherry-pick", finding, check=False).returncode != 0
    resolve_as_the_finding(repo, env)
    git(repo, env, "cherry-pick", "--continue")


def conflicted_rebase_then_commit(repo: Path, env: dict[str, str], finding: str) -> None:
    local_change(repo, env)
    git(repo, env, "checkout", "-q", "-b", "findings", finding)
    assert git(repo, env, "rebase", "main", check=False).returncode != 0
    resolve_as_the_finding(repo, env)
    git(repo, env, "commit", "-q", "--no-edit")
    git(repo, env, "rebase", "--continue")


def conflicted_rebase_continued(repo: Path, env: dict[str, str], finding: str) -> None:
    local_change(repo, env)
    git(repo, env, "checkout", "-q", "-b", "findings", finding)
    assert git(repo, env, "rebase", "main", check=False).returncode != 0
    resolve_as_the_finding(repo, env)
    git(repo, env, "rebase", "--continue")


def cherry_pick_without_a_reflog(repo: Path, env: dict[str, str], finding: str) -> None:
    git(repo, env, "config", "core.logAllRefUpdates", "false")
    for log in (repo / ".git" / "logs").rglob("*"):
        if log.is_file():
            log.unlink()
    git(repo, env, "cherry-pick", finding)


Arrival = Callable[[Path, dict[str, str], str], None]
ARRIVALS: dict[str, Arrival] = {
    "amend": amend,
    "commit -C": commit_reusing_the_message,
    "cherry-pick -n, commit": cherry_pick_n_then_commit,
    "conflicted cherry-pick, commit": conflicted_cherry_pick_then_commit,
    "conflicted cherry-pick --continue": conflicted_cherry_pick_continued,
    "conflicted rebase, commit": conflicted_rebase_then_commit,
    "conflicted rebase --continue": conflicted_rebase_continued,
    "cherry-pick without reflog": cherry_pick_without_a_reflog,
}
# A rebase is not a `git commit`: even a defined test is not started for each of its commits.
STARTS_A_REDUCTION = set(ARRIVALS) - {"conflicted rebase --continue"}


@pytest.mark.parametrize("arrival", ARRIVALS)
def test_a_test_name_not_defined_here_runs_nothing(
    arrival: str, mine: Path, env: dict[str, str], finding: str, tmp_path: Path
) -> None:
    ARRIVALS[arrival](mine, env, finding)
    head = git(mine, env, "rev-parse", "HEAD").stdout.strip()
    assert "Reduce-Test: evil" in git(mine, env, "log", "-1", "--format=%B").stdout
    note = wait_for_note(mine, env, head, seconds=30)
    assert not (tmp_path / "pwned").exists()
    assert note.startswith(NOT_DEFINED + "\n"), note
    assert "git config gitreduce.test.evil.command 'CMD'" in note
    assert NOT_DEFINED in hook_log(mine)
    assert git(mine, env, "branch", "--list", "reduce/*").stdout == ""


@pytest.mark.parametrize("arrival", ARRIVALS)
def test_a_test_defined_in_the_local_config_runs(
    arrival: str, mine: Path, env: dict[str, str], finding: str, tmp_path: Path
) -> None:
    ran = tmp_path / "ran"
    user_test = tmp_path / "user-test.sh"
    user_test.write_text(f'#!/bin/sh\ntouch {ran}\n! grep -q bad "$1"\n')
    user_test.chmod(0o755)
    git(mine, env, "config", "gitreduce.test.evil.command", f"{user_test} {{}}")
    ARRIVALS[arrival](mine, env, finding)
    head = git(mine, env, "rev-parse", "HEAD").stdout.strip()
    if arrival not in STARTS_A_REDUCTION:
        time.sleep(2)  # what a started reduction would have run or logged by now
        assert not ran.exists() and note_of(mine, env, head) is None
        assert hook_log(mine) == "(none)"
        return
    note = wait_for_note(mine, env, head)
    assert ran.exists()
    assert "failure-inducing change in f.txt" in note, note
    assert "\n+bad\n" in note and f"Branch: reduce/{head[:7]}" in note
    assert not (tmp_path / "pwned").exists()


def test_a_test_defined_in_the_global_config_runs(
    mine: Path, env: dict[str, str], finding: str, tmp_path: Path
) -> None:
    ran = tmp_path / "ran"
    git(mine, env, "config", "--global", "gitreduce.test.evil.command", f"touch {ran}; false")
    commit_reusing_the_message(mine, env, finding)
    note = wait_for_note(mine, env, "HEAD")
    assert ran.exists()
    assert note.startswith("git reduce: not reproduced:")  # the defined test calls the seed bad
    assert "Test: touch" in note and "(gitreduce.test.evil.command)" in note
    assert not (tmp_path / "pwned").exists()


@pytest.mark.parametrize(
    "value",
    [
        "touch {marker}; rm -rf",
        "$(touch {marker})",
        "evil`touch {marker}`",
        "../evil",
        "a b",
        "back\\slash\\c",  # text in the log and the note, never an echo escape
    ],
)
def test_a_trailer_that_is_not_a_name_runs_nothing(
    value: str, mine: Path, env: dict[str, str], tmp_path: Path
) -> None:
    marker = tmp_path / "marker"
    value = value.format(marker=marker)
    (mine / "f.txt").write_text(FINDING)
    committed = git(mine, env, "commit", "-q", "-a", "-m", "x", "-m", f"Reduce-Test: {value}")
    note = wait_for_note(mine, env, "HEAD", seconds=30)
    assert not marker.exists() and not (tmp_path / "pwned").exists()
    reason = f"not run: '{value}' is not a test name (letters, digits, '.', '_', '-')"
    assert note.startswith(reason + "\n"), note
    assert reason in committed.stderr and reason in hook_log(mine)


def test_a_reduce_test_line_outside_the_trailers_is_pointed_out(
    mine: Path, env: dict[str, str], tmp_path: Path
) -> None:
    ran = tmp_path / "ran"
    git(mine, env, "config", "gitreduce.test.gcc-ice.command", f"touch {ran}")
    (mine / "f.txt").write_text(FINDING)
    committed = git(
        mine,
        env,
        "commit",
        "-q",
        "-a",
        "-m",
        "finding",
        "-m",
        "Reduce-Test: gcc-ice",
        "-m",
        "Reduce-Path: f.txt",
    )
    note = wait_for_note(mine, env, "HEAD", seconds=30)
    assert note.startswith("not run: its Reduce-Test: line is not a trailer"), note
    assert "last paragraph" in note
    assert 'git commit -m msg -m "Reduce-Test: gcc-ice\n    Reduce-Path: prog.c"' in note
    assert "is not a trailer" in committed.stderr
    assert "not run: its Reduce-Test: line is not a trailer" in hook_log(mine)
    assert not ran.exists()
    # Written as one paragraph, the same trailers run the defined test.
    (mine / "f.txt").write_text(FINDING + "more\n")
    git(
        mine,
        env,
        "commit",
        "-q",
        "-a",
        "-m",
        "again",
        "-m",
        "Reduce-Test: gcc-ice\nReduce-Path: f.txt",
    )
    wait_for_note(mine, env, "HEAD")
    assert ran.exists()


def test_a_path_that_looks_like_an_option_or_shell_is_passed_as_data(
    mine: Path, env: dict[str, str], tmp_path: Path
) -> None:
    name = "-dash; $(touch PWNED) `touch PWNED`.c"
    (mine / name).write_text(SEED)
    git(mine, env, "add", "--", name)
    git(mine, env, "commit", "-q", "-m", "seed")
    (mine / name).write_text(FINDING)
    git(mine, env, "config", "gitreduce.test.has-bad.command", "! grep -q bad {}")
    git(
        mine,
        env,
        "commit",
        "-q",
        "-a",
        "-m",
        "x",
        "-m",
        f"Reduce-Test: has-bad\nReduce-Path: {name}",
    )
    note = wait_for_note(mine, env, "HEAD")
    assert f"failure-inducing change in {name}" in note, note
    assert not list(tmp_path.rglob("PWNED"))
