"""`git reduce hooks`: installing, uninstalling, and the post-commit hook end to end.

Real repositories, real `git commit`, the real hook script run by git, the real
git-reduce console script of this virtualenv and gcc as the test. PATH does
not contain the virtualenv: the hook must run the git-reduce it recorded.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import time
from pathlib import Path

import pytest
from hook_support import (
    VENV_BIN,
    hook_env,
    hook_log,
    init_repo,
    note_of,
    reductions_in,
    run_git,
    wait_for_note,
)
from triage_support import MUTATIONS, SEED, TEST_SCRIPT, commit_set_finding, set_test

from gitreduce.core.errors import UserError
from gitreduce.git import hooks

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "fixtures" / "sequence-point"

needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")
git = run_git


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return hook_env(tmp_path)


@pytest.fixture
def repo(tmp_path: Path, env: dict[str, str]) -> Path:
    return init_repo(tmp_path / "findings", env)


def seed_and_variant(repo: Path, env: dict[str, str]) -> None:
    """The fuzzer's seed commit: test script and the passing program."""
    shutil.copy(FIXTURE / "test.sh", repo / "test.sh")
    variant = (FIXTURE / "variant.c").read_text()
    seed = variant.replace("count = count++ + step;", "count = count + step;")
    assert seed != variant
    (repo / "prog.c").write_text(seed)
    git(repo, env, "add", "test.sh", "prog.c")
    git(repo, env, "commit", "-q", "-m", "seed")
    (repo / "prog.c").write_text(variant)


# -- the shipped script ---------------------------------------------------------------


def test_shipped_hook_is_the_installed_template() -> None:
    shipped = ROOT / "hooks" / "post-commit"
    assert shipped.read_text() == hooks.POST_COMMIT
    assert shipped.stat().st_mode & stat.S_IXUSR


@pytest.mark.parametrize("shell", ["sh", "dash", "bash"])
def test_hook_parses_as_posix_sh(shell: str) -> None:
    if shutil.which(shell) is None:
        pytest.skip(f"{shell} is not installed")
    subprocess.run([shell, "-n", str(ROOT / "hooks" / "post-commit")], check=True)


def test_render_records_the_executable_quoted() -> None:
    text = hooks.render("post-commit", "/opt/my tools/bin/git-reduce")
    assert "GITREDUCE_EXE='/opt/my tools/bin/git-reduce'" in text
    assert hooks.render("post-commit", None) == hooks.POST_COMMIT


# -- install / uninstall --------------------------------------------------------------


def test_install_writes_an_executable_hook_where_git_looks(repo: Path, env: dict[str, str]) -> None:
    done = hooks.install(repo)
    hook = repo / ".git" / "hooks" / "post-commit"
    assert hook.is_file() and os.access(hook, os.X_OK)
    where = git(repo, env, "rev-parse", "--git-path", "hooks").stdout.strip()
    assert (repo / where).resolve() == hook.parent.resolve()
    recorded = str(VENV_BIN / "git-reduce")
    assert f"GITREDUCE_EXE={recorded}" in hook.read_text()
    assert any(str(hook) in line for line in done)
    # Installing again replaces our own hook without --force.
    hooks.install(repo)
    assert hooks.uninstall(repo) == [f"removed {hook}"]
    assert not hook.exists()
    assert hooks.uninstall(repo) == [f"no post-commit hook in {hook.parent}"]


def test_install_respects_a_relative_core_hooks_path(repo: Path, env: dict[str, str]) -> None:
    git(repo, env, "config", "core.hooksPath", "tools/hooks")
    sub = repo / "src" / "deep"
    sub.mkdir(parents=True)
    hooks.install(sub)  # from a subdirectory: the path is relative to the work tree
    hook = repo / "tools" / "hooks" / "post-commit"
    assert hook.is_file()
    assert not (repo / ".git" / "hooks" / "post-commit").exists()
    assert not (sub / "tools").exists()
    where = git(repo, env, "rev-parse", "--git-path", "hooks").stdout.strip()
    assert (repo / where).resolve() == hook.parent.resolve()
    hooks.uninstall(repo)
    assert not hook.exists()


def test_install_respects_an_absolute_core_hooks_path(
    repo: Path, env: dict[str, str], tmp_path: Path
) -> None:
    shared = tmp_path / "shared-hooks"
    git(repo, env, "config", "core.hooksPath", str(shared))
    hooks.install(repo)
    assert (shared / "post-commit").is_file()


def test_a_foreign_hook_is_kept_unless_forced_and_restored_on_uninstall(repo: Path) -> None:
    hook = repo / ".git" / "hooks" / "post-commit"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text("#!/bin/sh\necho mine\n")
    with pytest.raises(UserError, match=r"not installed by git reduce.*--force"):
        hooks.install(repo)
    assert hook.read_text() == "#!/bin/sh\necho mine\n"
    with pytest.raises(UserError, match="not installed by git reduce"):
        hooks.uninstall(repo)
    done = hooks.install(repo, force=True)
    assert hooks.is_ours(hook)
    backup = hook.with_name("post-commit" + hooks.BACKUP_SUFFIX)
    assert backup.read_text() == "#!/bin/sh\necho mine\n"
    assert any(backup.name in line for line in done)
    hooks.uninstall(repo)
    assert hook.read_text() == "#!/bin/sh\necho mine\n"
    assert not backup.exists()


# -- the hook at work -----------------------------------------------------------------


@needs_gcc
def test_a_finding_commit_gets_its_minimal_change_as_a_note(
    repo: Path, env: dict[str, str]
) -> None:
    assert str(VENV_BIN) not in env["PATH"].split(os.pathsep)
    hooks.install(repo)
    git(repo, env, "config", "gitreduce.test.sequence-point.command", "./test.sh {}")
    seed_and_variant(repo, env)
    started = time.monotonic()
    committed = git(
        repo,
        env,
        "commit",
        "-q",
        "-a",
        "-m",
        "fuzzer: -Wsequence-point finding",
        "-m",
        "Reduce-Test: sequence-point",
    )
    elapsed = time.monotonic() - started
    assert elapsed < 2.0, f"git commit took {elapsed:.2f}s: the hook must not block"
    assert "in the background" in committed.stderr
    sha = git(repo, env, "rev-parse", "HEAD").stdout.strip()
    note = wait_for_note(repo, env, sha)
    # any indentation, any name the rename pass gave the variable
    added = re.search(r"^\+\s+(\w+) = \1\+\+;$", note, re.MULTILINE)
    assert added, note
    assert re.search(rf"^-\s+{added[1]} = {added[1]};$", note, re.MULTILINE), note
    assert f"Branch: reduce/{sha[:7]}" in note
    shown = git(repo, env, "log", "--notes=reduce", "-1").stdout
    assert "Notes (reduce):" in shown and f"{added[1]} = {added[1]}++;" in shown
    # The user's work tree, index and branch are untouched; the result is a branch.
    assert git(repo, env, "status", "--porcelain").stdout == ""
    assert git(repo, env, "rev-parse", "HEAD").stdout.strip() == sha
    assert git(repo, env, "rev-parse", "--verify", "-q", f"reduce/{sha[:7]}").returncode == 0
    log = (repo / ".git" / "gitreduce-hook.log").read_text()
    assert f"{sha[:7]} prog.c: reduced" in log


def test_a_failing_reduction_leaves_a_note_saying_why(repo: Path, env: dict[str, str]) -> None:
    """Two files changed, reduced as a set; the test calls the seed set bad, so it fails."""
    hooks.install(repo)
    git(repo, env, "config", "gitreduce.test.fails.command", "false")
    (repo / "a.txt").write_text("one\n")
    (repo / "b.txt").write_text("two\n")
    git(repo, env, "add", ".")
    git(repo, env, "commit", "-q", "-m", "seed")
    (repo / "a.txt").write_text("one changed\n")
    (repo / "b.txt").write_text("two changed\n")
    git(
        repo,
        env,
        "commit",
        "-q",
        "-a",
        "-m",
        "both",
        "-m",
        "Reduce-Test: fails\nReduce-Path: a.txt",
    )
    note = wait_for_note(repo, env, "HEAD", 60)
    assert note.startswith("git reduce: not reproduced:")
    assert "-- a.txt b.txt" in note and "Test: false (gitreduce.test.fails.command)" in note
    assert "seed" in note  # git-reduce's one-line reason: the seed is not good


def test_no_trailer_no_work(repo: Path, env: dict[str, str]) -> None:
    hooks.install(repo)
    (repo / "a.c").write_text("int a;\n")
    git(repo, env, "add", ".")
    git(repo, env, "commit", "-q", "-m", "seed")
    (repo / "a.c").write_text("int b;\n")
    committed = git(repo, env, "commit", "-q", "-a", "-m", "plain commit")
    assert committed.stderr == ""
    assert not (repo / ".git" / "gitreduce-hook.log").exists()


@needs_gcc
def test_a_commit_changing_several_files_is_queued_and_reduced_as_a_set(
    tmp_path: Path, repo: Path, env: dict[str, str]
) -> None:
    hooks.install(repo)
    set_test(tmp_path, repo, env)
    sha = commit_set_finding(repo, env, "src")
    note = wait_for_note(repo, env, sha)
    assert "+#define WIDTH 40" in note and "<<" in note, note
    assert f"Branch: reduce/{sha[:7]}" in note
    changed = git(repo, env, "diff", "--name-only", f"reduce/{sha[:7]}^", f"reduce/{sha[:7]}")
    assert changed.stdout.split() == ["src/a.c", "src/defs.h"]


def test_the_hook_names_the_files_it_queues(repo: Path, env: dict[str, str]) -> None:
    """No Reduce-Path needed: the changed files (and those Reduce-Path adds) are named, or
    counted when there are many. The hook's git-reduce is `true` here: nothing is reduced."""
    hooks.install(repo, executable=shutil.which("true"))
    git(repo, env, "config", "gitreduce.test.ok.command", "true")
    for name in ("a.c", "b.c", "h.h", *(f"m{n}.c" for n in range(5))):
        (repo / name).write_text(f"int {name[0]};\n")
    git(repo, env, "add", ".")
    git(repo, env, "commit", "-q", "-m", "seed")
    (repo / "a.c").write_text("int aa;\n")
    (repo / "b.c").write_text("int bb;\n")
    message = "two files\n\nReduce-Test: ok\nReduce-Path: h.h\nReduce-Path: a.c"
    named = git(repo, env, "commit", "-q", "-a", "-m", message)
    assert "queued" in named.stderr and "(a.c b.c h.h, test 'ok')" in named.stderr
    for number in range(5):
        (repo / f"m{number}.c").write_text("int changed;\n")
    many = git(repo, env, "commit", "-q", "-a", "-m", "many\n\nReduce-Test: ok")
    assert "queued" in many.stderr and "(5 files, test 'ok')" in many.stderr


def test_root_commit_and_cherry_pick_do_not_start_a_reduction(
    repo: Path, env: dict[str, str]
) -> None:
    """Even a test the user defined: picking or rebasing findings must not start one each."""
    hooks.install(repo)
    marker = repo.parent / "ran"
    git(repo, env, "config", "gitreduce.test.mark.command", f"touch {marker}")
    (repo / "a.c").write_text("int a;\n")
    git(repo, env, "add", ".")
    first = git(repo, env, "commit", "-q", "-m", "root", "-m", "Reduce-Test: mark")
    assert "no parent" in first.stderr
    git(repo, env, "checkout", "-q", "-b", "other")
    (repo / "a.c").write_text("int b;\n")
    quiet = env | {"GITREDUCE_HOOK": "0"}  # this commit's own run would create the marker
    git(repo, quiet, "commit", "-q", "-a", "-m", "x", "-m", "Reduce-Test: mark")
    git(repo, env, "checkout", "-q", "main")
    picked = git(repo, env, "cherry-pick", "other")
    assert "only `git commit` runs a Reduce-Test" in picked.stderr
    time.sleep(0.5)
    assert not marker.exists()
    assert note_of(repo, env) is None


def test_gitreduce_hook_0_turns_it_off(repo: Path, env: dict[str, str]) -> None:
    hooks.install(repo)
    (repo / "a.c").write_text("int a;\n")
    git(repo, env, "add", ".")
    git(repo, env, "commit", "-q", "-m", "seed")
    (repo / "a.c").write_text("int b;\n")
    off = env | {"GITREDUCE_HOOK": "0"}
    committed = git(repo, off, "commit", "-q", "-a", "-m", "x", "-m", "Reduce-Test: true")
    assert committed.stderr == ""
    assert not (repo / ".git" / "gitreduce-hook.log").exists()


@pytest.mark.parametrize("bound", [1, 2])
def test_a_burst_of_findings_never_runs_more_reductions_than_the_bound(
    repo: Path, env: dict[str, str], bound: int
) -> None:
    """Six findings committed in a loop: one drain reduces them `bound` at a time (a process
    count sampled all along), and every one of them gets its note."""
    hooks.install(repo)
    if bound != 1:
        run_git(repo, env, "config", "gitreduce.triage.workers", str(bound))
    script = repo.parent / "gcc-test.sh"
    script.write_text(TEST_SCRIPT)
    script.chmod(0o755)
    run_git(repo, env, "config", "gitreduce.test.gcc.command", f"{script} {{}}")
    shas = []
    for number in range(1, 7):
        path = repo / f"f{number}.c"
        seed = SEED.format(n=number)
        path.write_text(seed)
        run_git(repo, env, "add", path.name)
        run_git(repo, env, "commit", "-q", "-m", f"seed {number}")
        old, new = MUTATIONS["div" if number % 2 else "shift"]
        path.write_text(seed.replace(old, new))
        run_git(repo, env, "commit", "-q", "-a", "-m", f"finding {number}\n\nReduce-Test: gcc")
        shas.append(run_git(repo, env, "rev-parse", "HEAD").stdout.strip())
    most = 0
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and any(note_of(repo, env, sha) is None for sha in shas):
        most = max(most, len(reductions_in(repo)))
        time.sleep(0.05)
    assert all(note_of(repo, env, sha) is not None for sha in shas), hook_log(repo)
    assert 1 <= most <= bound
    assert all(f"Branch: reduce/{sha[:7]}" in (note_of(repo, env, sha) or "") for sha in shas)
