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


# A finding of three files: a header and two translation units that include it. The bug
# needs two of them: the header's WIDTH grows to 40 and a.c starts shifting by it; b.c
# changes too, harmlessly. The test compiles every .c of the set it is given.
SET_FILES = {
    "defs.h": """#define WIDTH 3
static inline int widen(int x) {
    int y = x * 2;
    return y + 1;
}
""",
    "a.c": """#include "defs.h"
int run_a(int a) {
    int b = widen(a);
    int c = b + 7;
    return c - WIDTH;
}
""",
    "b.c": """#include "defs.h"
int run_b(int a) {
    int k = a * 5;
    return widen(k) + WIDTH;
}
""",
}
SET_MUTATIONS = {
    "defs.h": ("WIDTH 3", "WIDTH 40"),
    "a.c": ("int c = b + 7;", "int c = b << WIDTH;"),
    "b.c": ("a * 5", "a * 6"),
}
SET_TEST_SCRIPT = """#!/bin/sh
cd "$1" || exit 2
for f in *.c; do
    gcc -c -O1 -Werror=div-by-zero -Werror=shift-count-overflow -o /dev/null "$f" || exit 1
done
"""


def set_test(tmp_path: Path, repo: Path, env: dict[str, str], name: str = "gccset") -> Path:
    """The test of a file set (it compiles the set's .c files) as `gitreduce.test.NAME`."""
    script = tmp_path / "gcc-set-test.sh"
    script.write_text(SET_TEST_SCRIPT)
    script.chmod(0o755)
    run_git(repo, env, "config", f"gitreduce.test.{name}.command", f"{script} {{}}")
    return script


def commit_set_finding(
    repo: Path,
    env: dict[str, str],
    directory: str = "",
    trailers: str = "Reduce-Test: gccset",
    delete: str | None = None,
) -> str:
    """A seed commit of the three files under `directory`, then the finding that changes all
    three (no Reduce-Path), deleting the file `delete` instead of changing it; the
    finding's commit id."""
    where = repo / directory
    where.mkdir(parents=True, exist_ok=True)
    for name, text in SET_FILES.items():
        (where / name).write_text(text)
    run_git(repo, env, "add", "-A")
    run_git(repo, env, "commit", "-q", "-m", f"seed set {directory or '.'}")
    for name, (old, new) in SET_MUTATIONS.items():
        if name == delete:
            (where / name).unlink()
        else:
            (where / name).write_text(SET_FILES[name].replace(old, new))
    run_git(repo, env, "add", "-A")
    run_git(repo, env, "commit", "-q", "-m", f"set finding\n\n{trailers}")
    return run_git(repo, env, "rev-parse", "HEAD").stdout.strip()
