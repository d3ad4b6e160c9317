"""The README's commands, run the way a reader runs them: every block, twice in a row.

Each ```sh block (but a file's contents, which start with `#!`) runs in one
bash session, in the README's order, from the root of a "clone": a copy of the
repository's fixtures made a git repository. The hooks block runs in the demo
repository the GOOD..BAD block made, as the README says. Each block runs twice
in a row, every line checked, so a command sequence that works only once (a
`mkdir` of the demo directory) fails here. The ```python block runs twice too.

What is changed, and only that: paths under /tmp move into the test's own
directory; the venv the first block creates (`python3 -m venv .venv && pip
install ...`) is the one running the tests; the `sleep 10` before reading the
hook's note becomes a wait for the note, so a slow machine is not a failure.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support import git, git_env, increments_itself

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
INSTALL = "python3 -m venv .venv && .venv/bin/pip install -e '.[test]' && "
HOOK_WAIT = "sleep 10; git log --notes=reduce -1"

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")


def blocks(language: str) -> list[str]:
    """The README's fenced blocks of `language`, in order."""
    return re.findall(rf"^```{language}\n(.*?)^```$", README.read_text(), re.M | re.S)


def command_blocks() -> list[str]:
    return [block for block in blocks("sh") if not block.startswith("#!")]


def checked(block: str, name: str) -> str:
    """`block` with every line checked: the session stops at the first line that fails."""
    lines = []
    for line in block.splitlines():
        if line.strip():
            lines.append(
                f"{{ {line}\n}} || {{ echo {shlex.quote(f'{name}: {line}')} >&2; exit 1; }}"
            )
    return "\n".join(lines)


def make_clone(tmp_path: Path) -> Path:
    """The fixtures in a git repository, with a `.venv` whose bin holds this git-reduce."""
    clone = tmp_path / "clone"
    shutil.copytree(ROOT / "fixtures", clone / "fixtures")
    git(clone, "init", "-q", "-b", "main")
    git(clone, "add", ".")
    git(clone, "commit", "-q", "-m", "the fixtures")
    bin_dir = clone / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    for tool in ("git-reduce", "python", "python3"):
        (bin_dir / tool).symlink_to(Path(sys.executable).parent / tool)
    (bin_dir / "activate").write_text(f'PATH={shlex.quote(str(bin_dir))}:"$PATH"; export PATH\n')
    return clone


def test_every_readme_command_block_runs_twice_in_a_row(tmp_path: Path) -> None:
    clone = make_clone(tmp_path)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    demo = scratch / "demo"
    commands = command_blocks()
    assert commands[0].startswith(INSTALL), "the first block no longer installs as expected"
    commands[0] = commands[0].removeprefix(INSTALL)
    (hooks,) = [index for index, block in enumerate(commands) if "hooks install" in block]
    assert HOOK_WAIT in commands[hooks]
    commands[hooks] = commands[hooks].replace(HOOK_WAIT, "wait_for_note")
    session = [
        "wait_for_note() {  # the hook reduces in the background",
        "    for _ in $(seq 300); do",
        "        git notes --ref=reduce show HEAD >/dev/null 2>&1 && return 0; sleep 1",
        "    done; return 1",
        "}",
    ]
    for index, block in enumerate(commands):
        block = block.replace("/tmp/", f"{scratch}/").replace("/tmp ", f"{scratch} ")
        session.append(f"cd {shlex.quote(str(demo if index == hooks else clone))}")
        for run in (1, 2):
            session.append(checked(block, f"block {index + 1}, run {run}"))
    env = git_env() | {"HOME": str(tmp_path / "home"), "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    env["TMPDIR"] = str(scratch)
    env.pop("PYTHONPATH")
    process = subprocess.run(
        ["bash", "-c", "\n".join(session)],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert process.returncode == 0, process.stdout + process.stderr
    # what the blocks promise
    assert increments_itself((scratch / "reduced.c").read_bytes())
    assert increments_itself((scratch / "variant.variant.c").read_bytes())
    assert (scratch / "bug.patch").read_text().startswith("From ")
    assert (scratch / "gen.c").exists()
    assert "bucket" in (scratch / "triage.html").read_text()
    note = git(demo, "notes", "--ref=reduce", "show", "HEAD").stdout
    assert increments_itself(note.encode()), note
    for run in (1, 2):  # the Python block, from the root of the clone
        python = subprocess.run(
            [sys.executable, "-c", blocks("python")[0]],
            cwd=clone,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert python.returncode == 0, (run, python.stderr)
        assert increments_itself(python.stdout.encode())
