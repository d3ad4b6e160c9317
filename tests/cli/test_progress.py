"""What the terminal shows: the change side by side or unified, the summary, and progress.

Layouts are rendered by rich Consoles of a forced width (a terminal, or a plain
file as a pipe is), then read back: the escape codes say which tokens are
marked, the text with them stripped says what is shown. End to end, the real
`git-reduce` runs with stderr on a pipe (progress lines must appear there, in
plain text) and on a pseudo-terminal (the side-by-side view).
"""

from __future__ import annotations

import difflib
import io
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from rich.console import Console
from support import run_on_a_terminal

from gitreduce.cli import progress as report
from gitreduce.cli.html import aligned_rows
from gitreduce.cli.progress import (
    SIDE_BY_SIDE_MAX_ROWS,
    PairProgressPrinter,
    ProgressPrinter,
    print_change,
    print_pair_summary,
    side_by_side_width,
)
from gitreduce.core.stats import Stats
from gitreduce.sessions.pair import PairSummary

ROOT = Path(__file__).resolve().parents[2]
PAIR = ROOT / "fixtures" / "pairs" / "sequence-point"
TEST_SH = ROOT / "fixtures" / "sequence-point" / "test.sh"
GIT_REDUCE = Path(sys.executable).parent / "git-reduce"

SEED = "int f(int a, int b) {\n    return a + b;\n}\n\nint g;\n"
VARIANT = "int f(int a, int b) {\n    return a - b * 2;\n}\n\nint g;\nint h;\n"
ANSI = re.compile(r"\x1b\[([0-9;]*)m")


def render(seed: str, variant: str, width: int, *, terminal: bool = True) -> str:
    """What `print_change` writes to a console `width` columns wide, escape codes and all."""
    out = io.StringIO()
    console = Console(
        file=out,
        width=width,
        force_terminal=terminal,
        color_system="standard" if terminal else None,
        soft_wrap=True,  # as the CLI's console
        legacy_windows=False,
    )
    print_change(console, seed, variant, "f.c")
    return out.getvalue()


def plain(output: str) -> list[str]:
    return ANSI.sub("", output).splitlines()


def marked(output: str) -> list[str]:
    """The runs of text drawn in reverse video: the differing tokens, in order."""
    runs: list[str] = []
    reverse, previous_end = False, None
    for match in ANSI.finditer(output + "\x1b[0m"):
        if reverse and previous_end is not None:
            text = output[previous_end : match.start()]
            if text:
                runs.append(text)
        reverse = "7" in match[1].split(";")
        previous_end = match.end()
    return runs


def unified(seed: str, variant: str) -> list[str]:
    return list(
        difflib.unified_diff(
            seed.splitlines(), variant.splitlines(), "seed/f.c", "variant/f.c", lineterm=""
        )
    )


def halves(lines: list[str]) -> tuple[list[str], list[str]]:
    """The body rows of a side-by-side table split at its gutter, trailing blanks dropped."""
    assert "│" in lines[0] and "┼" in lines[1], lines[:2]
    left, right = [], []
    for line in lines[2:]:
        a, b = line.split(" │ ")
        left.append(a.rstrip())
        right.append(b.rstrip())
    return left, right


def numbered(text: str) -> list[str]:
    """`text`'s lines as the side-by-side view numbers them (tabs at 4, no trailing blanks)."""
    lines = text.splitlines()
    width = len(str(len(lines)))
    return [f"{n:>{width}} {line.expandtabs(4)}".rstrip() for n, line in enumerate(lines, 1)]


# -- the layout rule ------------------------------------------------------------------


def test_wide_terminal_shows_seed_and_variant_side_by_side() -> None:
    output = render(SEED, VARIANT, 100)
    lines = plain(output)
    assert "seed/f.c (passes)" in lines[0] and "variant/f.c (fails)" in lines[0]
    left, right = halves(lines)
    # Every line of both programs, aligned: the seed has no line 6.
    assert [line for line in left if line] == [line for line in numbered(SEED) if line]
    assert right == numbered(VARIANT)
    assert left[5] == ""
    # Only the differing tokens are marked, inside their lines, as the token diff says.
    assert marked(output) == ["+", "-", "* 2", "int h;"]


def test_narrow_terminal_falls_back_to_the_unified_diff_with_marked_tokens() -> None:
    output = render(SEED, VARIANT, 40)
    assert plain(output) == unified(SEED, VARIANT)
    assert marked(output) == ["+", "-", "* 2", "int h;"]


def test_the_width_rule_is_exactly_both_programs_whole() -> None:
    needed = side_by_side_width(aligned_rows(SEED, VARIANT), "f.c")
    # Per half: a 1-digit number, a space, the longest line (21 columns, longer than
    # either header); " │ " between the halves.
    assert needed == (1 + 1 + 21) + 3 + (1 + 1 + 21)
    exact = plain(render(SEED, VARIANT, needed))
    assert "│" in exact[0]
    assert max(len(line) for line in exact) <= needed
    assert plain(render(SEED, VARIANT, needed - 1)) == unified(SEED, VARIANT)


@pytest.mark.parametrize("width", [40, 100, 400])
def test_a_pipe_gets_the_plain_unified_diff_at_any_width(width: int) -> None:
    output = render(SEED, VARIANT, width, terminal=False)
    assert "\x1b" not in output
    assert output.splitlines() == unified(SEED, VARIANT)


def test_too_many_rows_for_side_by_side_fall_back_to_unified() -> None:
    body = "".join(f"int v{i};\n" for i in range(SIDE_BY_SIDE_MAX_ROWS))
    seed, variant = body + "int x = 1;\n", body + "int x = 2;\n"
    assert plain(render(seed, variant, 400)) == unified(seed, variant)


def test_a_real_pair_loses_no_line_side_by_side() -> None:
    seed, variant = (PAIR / "seed.c").read_text(), (PAIR / "variant.c").read_text()
    needed = side_by_side_width(aligned_rows(seed, variant), "f.c")
    output = render(seed, variant, needed)
    left, right = halves(plain(output))
    assert [line for line in left if line] == [line for line in numbered(seed) if line]
    assert [line for line in right if line] == [line for line in numbered(variant) if line]
    # The marked tokens, put together, are the variant's token-level change.
    assert "++" in "".join(marked(output))


def test_tabs_and_wide_lines_are_measured_as_drawn() -> None:
    seed = "int f() {\n\treturn 0;\n}\n"
    variant = "int f() {\n\treturn 1;\n}\n"
    needed = side_by_side_width(aligned_rows(seed, variant), "f.c")
    left, right = halves(plain(render(seed, variant, needed)))
    assert left[1] == "2     return 0;" and right[1] == "2     return 1;"


def test_a_token_changed_in_a_moved_line_is_marked_in_the_unified_view() -> None:
    """Marks come from the token diff of the whole pair, located through the hunk headers."""
    body = "".join(f"int v{i};\n" for i in range(10))
    seed, variant = body + "int x = 1;\n" + body, body + "int x = 22;\n" + body
    output = render(seed, variant, 20)
    assert plain(output) == unified(seed, variant)
    assert marked(output) == ["1", "22"]


# -- the summary ----------------------------------------------------------------------


def pair_summary(**changes: Any) -> PairSummary:
    fields: dict[str, Any] = {
        "name": "f.c",
        "language": "c",
        "algorithm": "ppr",
        "seed_before": 262,
        "variant_before": 281,
        "diff_before": 21,
        "seed_after": 13,
        "variant_after": 14,
        "diff_after": 1,
        "seed": SEED.encode(),
        "variant": VARIANT.encode(),
        "stats": Stats(tests_run=111, cache_hits=2),
        "wall_seconds": 2.1,
    }
    return PairSummary(**(fields | changes))


def test_summary_says_sizes_figures_and_where_the_result_went(tmp_path: Path) -> None:
    out = io.StringIO()
    console = Console(file=out, width=80, soft_wrap=True)
    summary = pair_summary(
        branch="reduce/f", commits=["a" * 40, "b" * 40], first_bad_commit="c" * 40
    )
    print_pair_summary(console, summary, None, tmp_path / "bug.patch")
    text = out.getvalue()
    assert text.splitlines()[: len(unified(SEED, VARIANT))] == unified(SEED, VARIANT)
    assert (
        "reduced (ppr): seed 262 → 13, variant 281 → 14, difference 21 → 1 tokens; "
        "111 tests, 2 cached, 2.1s"
    ) in text
    assert f"first bad commit: {'c' * 40}" in text
    assert "recorded as branch reduce/f (bbbbbbbbbbbb): git show reduce/f" in text
    assert f"patch written to {tmp_path / 'bug.patch'}" in text


def test_no_patch_line_when_nothing_was_recorded(tmp_path: Path) -> None:
    out = io.StringIO()
    print_pair_summary(Console(file=out, width=80), pair_summary(), None, tmp_path / "p")
    assert "patch" not in out.getvalue()


# -- progress -------------------------------------------------------------------------


def fake_pair_current(diff: int, tests: int) -> Any:
    state = SimpleNamespace(
        seed_tokens=lambda: 100 + diff, variant_tokens=lambda: 101 + diff, diff_tokens=lambda: diff
    )
    engine = SimpleNamespace(stats=Stats(tests_run=tests))
    return SimpleNamespace(state=state, engine=engine, label="min-tdiff")


def test_progress_on_a_pipe_is_a_plain_line_every_few_seconds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = [1000.0]
    monkeypatch.setattr(report.time, "monotonic", lambda: clock[0])
    out = io.StringIO()
    printer = PairProgressPrinter(Console(file=out, width=200))
    for second in range(12):
        clock[0] = 1000.0 + second
        printer(fake_pair_current(20 - second, 10 * second))
    printer.stop()
    lines = out.getvalue().splitlines()
    assert "\x1b" not in out.getvalue()
    # The first state at once, then one line per 5 s: at 0, 5 and 10 seconds.
    assert [line.split("  tests")[0] for line in lines] == [
        "seed 120 (100%)  variant 121 (100%)  diff 20 (100%) tokens",
        "seed 115 (96%)  variant 116 (96%)  diff 15 (75%) tokens",
        "seed 110 (92%)  variant 111 (92%)  diff 10 (50%) tokens",
    ]
    assert all(line.endswith("pass min-tdiff") for line in lines)


def test_single_file_progress_shows_the_share_of_the_original(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = [0.0]
    monkeypatch.setattr(report.time, "monotonic", lambda: clock[0])
    out = io.StringIO()
    printer = ProgressPrinter(Console(file=out, width=200))
    for step, tokens in enumerate((200, 150, 50)):
        clock[0] = 6.0 * step
        engine = SimpleNamespace(stats=Stats(tests_run=step))
        printer(SimpleNamespace(tokens=tokens, engine=engine, label="tree"))
    assert [line.split("  tests")[0] for line in out.getvalue().splitlines()] == [
        "200 tokens (100.0%)",
        "150 tokens (75.0%)",
        "50 tokens (25.0%)",
    ]


def test_a_progress_line_off_a_terminal_is_printed_as_plain_text() -> None:
    """Off a terminal the line goes out as it is: brackets and colons in it are not read
    as markup or emoji codes."""
    out = io.StringIO()
    printer = ProgressPrinter(Console(file=out, width=200))
    engine = SimpleNamespace(stats=Stats(tests_run=1))
    printer(SimpleNamespace(tokens=10, engine=engine, label="[b]tree[/b]:smile:"))
    assert out.getvalue().rstrip().endswith("pass [b]tree[/b]:smile:")


# -- end to end: the real CLI on a pipe and on a terminal -----------------------------

needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")


@pytest.fixture(scope="module")
def pair_dir(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    work = tmp_path_factory.mktemp("pair")
    shutil.copy(PAIR / "seed.c", work / "seed.c")
    shutil.copy(PAIR / "variant.c", work / "variant.c")
    shutil.copy(TEST_SH, work / "test.sh")
    for name in ("tmp", "cache", "home"):
        (work / name).mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "COLUMNS", "LINES"))}
    env |= {
        "TMPDIR": str(work / "tmp"),
        "XDG_CACHE_HOME": str(work / "cache"),
        "HOME": str(work / "home"),
        "GIT_CEILING_DIRECTORIES": str(work.parent),
    }
    for name in ("FORCE_COLOR", "NO_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        env.pop(name, None)
    return work, env


COMMAND = ["--seed", "seed.c", "--variant", "variant.c", "--test", "./test.sh {}", "-j", "2"]


@needs_gcc
def test_progress_lines_appear_when_stderr_is_a_pipe(pair_dir: tuple[Path, dict[str, str]]) -> None:
    work, env = pair_dir
    done = subprocess.run(
        [str(GIT_REDUCE), *COMMAND], cwd=work, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert "\x1b" not in done.stderr and "\r" not in done.stderr
    # The first progress line is the originals' sizes, before any reduction test.
    assert lines[0].startswith(
        "seed 262 (100%)  variant 281 (100%)  diff 21 (100%) tokens  tests 0  cached 0"
    ), lines
    # One plain line per 5 s of the run, then the change as a plain unified diff
    diff_starts = lines.index("--- seed/variant.c")
    for line in lines[:diff_starts]:
        assert re.fullmatch(
            r"seed \d+ \(\d+%\)  variant \d+ \(\d+%\)  diff \d+ \(\d+%\) tokens  "
            r"tests \d+  cached \d+  [\d.]+/s  \d+s  pass \S+",
            line,
        ), line
    assert lines[diff_starts + 1] == "+++ variant/variant.c"
    assert any(line.startswith("reduced (ppr): seed 262 → ") for line in lines)
    quiet = subprocess.run(
        [str(GIT_REDUCE), *COMMAND, "--quiet"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert quiet.returncode == 0 and quiet.stderr == "", quiet.stderr


@needs_gcc
def test_a_wide_terminal_gets_the_reduced_pair_side_by_side(
    pair_dir: tuple[Path, dict[str, str]],
) -> None:
    work, env = pair_dir
    status, drawn = run_on_a_terminal([str(GIT_REDUCE), *COMMAND, "--force"], work, env, 160)
    assert status == 0, drawn
    seed = (work / "variant.seed.c").read_text()
    variant = (work / "variant.variant.c").read_text()
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", drawn).replace("\r", "")
    rows = text.splitlines()
    head = next(i for i, line in enumerate(rows) if "seed/variant.c (passes)" in line)
    body = rows[head : head + 2 + max(len(seed.splitlines()), len(variant.splitlines()))]
    left, right = halves(body)
    assert [line for line in left if line] == [line for line in numbered(seed) if line]
    assert [line for line in right if line] == [line for line in numbered(variant) if line]
    assert "".join(marked(drawn)) == "++"
