"""A fuzzer's burst with the post-commit hook installed: how many reductions run at once?

Commits N findings (default 50) in a tight loop into a fresh repository with
`git reduce hooks install`, samples every 50 ms how many child reductions
work in it, and waits until every finding has its note. Prints the commit
loop's time, the largest number of reductions seen at once (it must not pass
`gitreduce.triage.workers`, default 1), how many drains ran, and the time to
the last note.

    .venv/bin/python benchmarks/hook_burst.py [--findings 50] [--workers 1] [--keep DIR]

Each finding is a small C program with a division by zero or a shift as wide
as its type; the test is gcc with those warnings as errors.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SEED = """int scale{n}(int a) {{
    int b = a * 3;
    int c = b + 7;
    return c - a;
}}
int main(void) {{ return scale{n}(1); }}
"""
BUGS = ("int c = b / 0;", "int c = b << 40;")
TEST = """#!/bin/sh
exec gcc -c -O1 -Werror=div-by-zero -Werror=shift-count-overflow -o /dev/null "$1"
"""


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, check=True, capture_output=True, text=True
    ).stdout.strip()


def reductions_in(repo: Path) -> tuple[int, int]:
    """Child reductions (their cwd is the work tree and they have a --progress-file) and
    drains (`triage --queue`) working in `repo`; a fork between fork and exec is not one."""
    children: dict[int, int] = {}
    drains = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if os.readlink(entry / "cwd") != str(repo):
                continue
            command = (entry / "cmdline").read_bytes().split(b"\0")
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if b"--progress-file" in command:
            children[int(entry.name)] = parent
        elif b"triage" in command and b"--queue" in command:
            drains += 1
    return sum(1 for parent in children.values() if parent not in children), drains


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--findings", type=int, default=50)
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--keep", type=Path, default=None)
    options = parser.parse_args()
    base = Path(options.keep or tempfile.mkdtemp(prefix="hook-burst-"))
    repo = base / "repo"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.name", "Fuzzer")
    git(repo, "config", "user.email", "fuzzer@example.com")
    script = base / "test.sh"
    script.write_text(TEST)
    script.chmod(0o755)
    git(repo, "config", "gitreduce.test.gcc.command", f"{script} {{}}")
    if options.workers is not None:
        git(repo, "config", "gitreduce.triage.workers", str(options.workers))
    reduce = Path(sys.executable).parent / "git-reduce"
    subprocess.run([str(reduce), "hooks", "install"], cwd=repo, check=True, capture_output=True)
    shas = []
    started = time.monotonic()
    for number in range(1, options.findings + 1):
        path = repo / f"f{number:02d}.c"
        path.write_text(SEED.format(n=number))
        git(repo, "add", path.name)
        git(repo, "commit", "-q", "-m", f"seed {number}")
        path.write_text(SEED.format(n=number).replace("int c = b + 7;", BUGS[number % 2]))
        git(repo, "commit", "-q", "-a", "-m", f"finding {number}\n\nReduce-Test: gcc")
        shas.append(git(repo, "rev-parse", "HEAD"))
    committed = time.monotonic() - started
    most = most_drains = samples = 0
    while True:
        running, drains = reductions_in(repo)
        most, most_drains, samples = max(most, running), max(most_drains, drains), samples + 1
        notes = subprocess.run(
            ["git", "notes", "--ref=reduce", "list"], cwd=repo, capture_output=True, text=True
        ).stdout.split("\n")
        if sum(1 for line in notes if line.strip()) >= len(shas) and not running:
            break
        time.sleep(0.05)
    finished = time.monotonic() - started
    print(
        f"{options.findings} findings committed in {committed:.1f} s; "
        f"at most {most} reduction(s) and {most_drains} drain(s) at once "
        f"({samples} samples, every 50 ms); last note after {finished:.1f} s; repo: {repo}"
    )


if __name__ == "__main__":
    main()
