"""`git reduce count`: the installed executable prints what the benchmarks' counter prints.

The figures are the reference counter's (`benchmarks/tools/tokens.py FILE [FILE]`), pinned
once; the API's own checks are in tests/test_api.py.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GIT_REDUCE = Path(sys.executable).parent / "git-reduce"


def count(*args: str | Path, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(GIT_REDUCE), "count", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_one_file_prints_its_token_count() -> None:
    done = count("fixtures/sequence-point/variant.c")
    assert (done.returncode, done.stdout, done.stderr) == (0, "263\n", "")


def test_two_files_print_seed_variant_and_difference() -> None:
    case = ROOT / "benchmarks" / "cases" / "gxx12-pr109804"
    done = count(case / "seed.cpp", case / "variant.cpp")
    assert (done.returncode, done.stdout) == (0, "3933 4025 190\n")


def test_language_overrides_the_extension(tmp_path: Path) -> None:
    text = tmp_path / "prog.txt"
    text.write_bytes(b"int x; /* a comment of six words here */\n")
    assert count(text).stdout == "13\n"  # words and punctuation marks, the comment's too
    assert count("--language", "c", text).stdout == "3\n"


def test_bad_input_is_one_error_line_and_exit_2(tmp_path: Path) -> None:
    for args in (
        ["missing.c"],
        [tmp_path],
        ["a.c", "b.c", "c.c"],
        ["--language", "klingon", ROOT / "fixtures" / "sequence-point" / "variant.c"],
    ):
        done = count(*args, cwd=tmp_path)
        assert done.returncode == 2, args
        assert done.stdout == ""
        assert done.stderr.startswith("error: ") and done.stderr.count("\n") == 1, done.stderr


def test_count_is_listed_among_the_subcommands() -> None:
    done = subprocess.run(
        [str(GIT_REDUCE), "--help"], capture_output=True, text=True, timeout=60, check=True
    )
    assert "count" in done.stdout
