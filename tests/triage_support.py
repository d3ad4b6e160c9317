"""A small repository of fuzzer-style findings for the triage's tests.

Each finding is two commits: one adds `fN.c` (a seed gcc compiles without
complaint), the next mutates it with a `Reduce-Test: gcc` trailer. Bugs are
gcc diagnostics turned into errors whose messages name no identifier, so
every finding of one bug has the same signature: division by zero and a
shift count as wide as the type.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from hook_support import hook_env, init_repo, run_git

SEED = """int scale{n}(int a) {{
    int b = a * 3;
    int c = b + 7;
    return c - a;
}}
int clamp{n}(int x) {{
    int y = x + 1;
    if (y > 2)
        y = y * 2;
    return y;
}}
int main(void) {{ return scale{n}(1) + clamp{n}(2); }}
"""
MUTATIONS = {
    "div": ("int c = b + 7;", "int c = b / 0;"),
    "shift": ("int c = b + 7;", "int c = b << 40;"),
}
SIGNATURES = {
    "div": "exit 1: error: division by zero [-Werror=div-by-zero]",
    "shift": "exit 1: error: left shift count >= width of type [-Werror=shift-count-overflow]",
}
TEST_SCRIPT = """#!/bin/sh
${GITREDUCE_TEST_DELAY:+sleep $GITREDUCE_TEST_DELAY}
exec gcc -c -O1 -Werror=div-by-zero -Werror=shift-count-overflow -o /dev/null "$1"
"""


def findings_repo(tmp_path: Path, bugs: list[str]) -> tuple[Path, dict[str, str], list[str]]:
    """A repository with one finding per entry of `bugs` (oldest first), the environment to
    run git and git-reduce in, and the findings' commit ids."""
    env = hook_env(tmp_path)
    repo = init_repo(tmp_path / "repo", env)
    script = tmp_path / "gcc-test.sh"
    script.write_text(TEST_SCRIPT)
    script.chmod(0o755)
    run_git(repo, env, "config", "gitreduce.test.gcc.command", f"{script} {{}}")
    shas = []
    for number, bug in enumerate(bugs, start=1):
        path = repo / f"f{number}.c"
        seed = SEED.format(n=number)
        path.write_text(seed)
        run_git(repo, env, "add", path.name)
        run_git(repo, env, "commit", "-q", "-m", f"seed {number}")
        old, new = MUTATIONS[bug]
        path.write_text(seed.replace(old, new))
        run_git(repo, env, "commit", "-q", "-a", "-m", f"finding {number}\n\nReduce-Test: gcc")
        shas.append(run_git(repo, env, "rev-parse", "HEAD").stdout.strip())
    return repo, env, shas


def reduce_cmd() -> list[str]:
    """`git-reduce` of this virtualenv (the environment's PATH leaves it out)."""
    return [str(Path(sys.executable).parent / "git-reduce")]


def triage(
    repo: Path, env: dict[str, str], *args: str, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*reduce_cmd(), "triage", *args],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def file_at(repo: Path, env: dict[str, str], rev: str) -> bytes:
    """The one file a result commit holds."""
    name = run_git(repo, env, "ls-tree", "--name-only", rev).stdout.split()[0]
    return subprocess.run(
        ["git", "show", f"{rev}:{name}"], cwd=repo, env=env, capture_output=True, check=True
    ).stdout
