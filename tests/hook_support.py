"""Shared helpers for the post-commit hook's tests: a clean git environment, and waiting
for the note the hook writes (in the background, after `git commit` has returned)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

VENV_BIN = Path(sys.executable).parent


def hook_env(tmp_path: Path) -> dict[str, str]:
    """An environment without the user's git config, caches or this virtualenv on PATH.

    Without the virtualenv on PATH the hook must run the git-reduce it recorded;
    `GIT_EDITOR=true` lets `git commit`, `cherry-pick --continue` and `rebase
    --continue` take the prepared message as a user who just saves it would.
    """
    home = tmp_path / "home"
    for name in ("home", "config", "cache", "tmp"):
        (tmp_path / name).mkdir(exist_ok=True)
    path = os.pathsep.join(
        entry
        for entry in os.environ.get("PATH", "").split(os.pathsep)
        if entry and Path(entry).resolve() != VENV_BIN.resolve()
    )
    base = {key: value for key, value in os.environ.items() if not key.startswith("GIT_")}
    return base | {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "TMPDIR": str(tmp_path / "tmp"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_EDITOR": "true",
        "PATH": path,
        "LC_ALL": "C",
    }


def run_git(
    repo: Path, env: dict[str, str], *args: str, check: bool = True
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=check
    )


def init_repo(path: Path, env: dict[str, str], user: str = "Fuzzer") -> Path:
    path.mkdir()
    run_git(path, env, "init", "-q", "-b", "main")
    run_git(path, env, "config", "user.name", user)
    run_git(path, env, "config", "user.email", f"{user.lower()}@example.com")
    return path


def note_of(repo: Path, env: dict[str, str], rev: str = "HEAD") -> str | None:
    shown = run_git(repo, env, "notes", "--ref=reduce", "show", rev, check=False)
    return shown.stdout if shown.returncode == 0 else None


def hook_log(repo: Path) -> str:
    log = repo / ".git" / "gitreduce-hook.log"
    return log.read_text() if log.exists() else "(none)"


def wait_for_note(repo: Path, env: dict[str, str], rev: str, seconds: float = 90.0) -> str:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        note = note_of(repo, env, rev)
        if note is not None:
            return note
        time.sleep(0.25)
    raise AssertionError(f"no note after {seconds:.0f}s; hook log:\n{hook_log(repo)}")


def reductions_in(repo: Path) -> list[int]:
    """The child reductions of a triage working in `repo` (their cwd is the work tree; only
    they are given a `--progress-file`). A child's own fork, between fork and exec, still
    shows its parent's command line: processes whose parent is counted are not counted."""
    found: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if os.readlink(entry / "cwd") != str(repo):
                continue
            command = (entry / "cmdline").read_bytes()
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if b"--progress-file" in command:
            found[int(entry.name)] = parent
    return [pid for pid, parent in found.items() if parent not in found]
