"""Text from strangers on the terminal: shown, never obeyed, never read as markup.

End to end, the real `git-reduce` reduces a pair whose change sits in a
string literal holding escape sequences (a window title, a clear screen, an
8-bit CSI), with a real shell test, on a pseudo-terminal and on a pipe; and a
file set whose member's directory is named like rich markup.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from support import run_on_a_terminal, script

from gitreduce.cli.terminal import shown

GIT_REDUCE = Path(sys.executable).parent / "git-reduce"
# A window title, a clear screen and red text, then a CSI in its 8-bit form
PAYLOAD = "\x1b]0;PWNED\x07\x1b[2J\x1b[31mRED\u009b2J"
# rich's own output on a terminal: SGR styles and the status line's cursor moves
RICH_CONTROLS = re.compile(r"\x1b\[(?:[0-9;]*m|\?25[lh]|2K|1A|1G|[0-9]*[ABCDGK])")


def test_control_characters_are_shown_one_for_one() -> None:
    text = "a\tb\nc\x1bd\x00e\x7ff\u009bg\rh"
    assert shown(text) == "a\tb\nc\u241bd\u2400e\u2421f\ufffdg\u240dh"
    assert len(shown(PAYLOAD)) == len(PAYLOAD)
    assert shown("plain text, é and 日本") == "plain text, é and 日本"


@pytest.fixture
def hostile_pair(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A seed and a variant that differ in a string literal full of escape sequences; the
    test says bad when the literal holds `boom`."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "seed.c").write_text(f'int main() {{\n  char *s = "{PAYLOAD}";\n  return 0;\n}}\n')
    (work / "variant.c").write_text(
        f'int main() {{\n  char *s = "{PAYLOAD} boom";\n  return 0;\n}}\n'
    )
    script(work / "test.sh", 'grep -q boom "$1" && exit 1\nexit 0\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "COLUMNS", "LINES"))}
    for name in ("FORCE_COLOR", "NO_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        env.pop(name, None)
    env |= {"XDG_CACHE_HOME": str(tmp_path / "cache"), "GIT_CEILING_DIRECTORIES": str(tmp_path)}
    return work, env


COMMAND = ["--seed", "seed.c", "--variant", "variant.c", "--test", "./test.sh {}", "-o", "out"]


def test_escape_sequences_in_a_reduced_pair_are_shown_on_a_terminal(
    hostile_pair: tuple[Path, dict[str, str]],
) -> None:
    """Before: the side-by-side view sent the literal's bytes to the terminal, which
    retitled the window and cleared the screen."""
    work, env = hostile_pair
    status, drawn = run_on_a_terminal([str(GIT_REDUCE), *COMMAND], work, env, 160)
    assert status == 0, drawn
    assert "\x1b]" not in drawn and "\x1b[2J" not in drawn and "\u009b" not in drawn
    assert RICH_CONTROLS.sub("", drawn).count("\x1b") == 0
    assert "\u241b]0;PWNED" in drawn and "\u241b[2J" in drawn
    assert PAYLOAD in (work / "out" / "variant.variant.c").read_text()  # the file as it was


def test_escape_sequences_in_a_reduced_pair_are_shown_on_a_pipe(
    hostile_pair: tuple[Path, dict[str, str]],
) -> None:
    work, env = hostile_pair
    done = subprocess.run(
        [str(GIT_REDUCE), *COMMAND], cwd=work, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stderr and "\u009b" not in done.stderr
    added = [line for line in done.stderr.splitlines() if line.startswith("+") and "boom" in line]
    assert added and shown(PAYLOAD) in added[0]


def test_a_file_named_like_markup_is_printed_as_it_is_named(tmp_path: Path) -> None:
    """A set whose binary member sits in a directory `d[`, so its path holds `[/b]`.
    Before: the warning about binary files was read as rich markup, and the finished
    reduction ended in `internal error: MarkupError` with exit status 1."""
    files = tmp_path / "set"
    (files / "d[").mkdir(parents=True)
    (files / "d[" / "b]main.c").write_text("int main() { int x = 1; return x; }\n")
    (files / "d[" / "b]blob.o").write_bytes(b"\x7fELF\x00\x01\x02" * 8)
    test = script(tmp_path / "test.sh", 'grep -q return "$1/d[/b]main.c" && exit 1\nexit 0\n')
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"))
    done = subprocess.run(
        [str(GIT_REDUCE), str(files), "--test", f"{test} {{}}", "-o", str(tmp_path / "out")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "warning: binary files are kept or removed whole, never reduced inside: d[/b]blob.o" in (
        done.stderr.splitlines()
    )
