"""The manual: built into the wheel's data, found by `man` from the environment's bin/ on
PATH, opened by `git help reduce` and `git reduce --help`; and the README's reference
section, the same text as the manual's, both written from the command line's help."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from typer.core import TyperGroup
from typer.main import get_command

from gitreduce.cli.app import app
from gitreduce.cli.manual import man, markdown, readme_section

ROOT = Path(__file__).resolve().parents[2]

needs_man = pytest.mark.skipif(shutil.which("man") is None, reason="needs man (man-db)")


def plain(text: str) -> str:
    """man's output without its overstrikes (bold, underline)."""
    return re.sub(".\b", "", text)


def _tree() -> TyperGroup:
    root = get_command(app)
    assert isinstance(root, TyperGroup)
    return root


def test_the_readme_reference_is_the_one_the_command_line_writes():
    written = markdown(_tree())
    assert readme_section((ROOT / "README.md").read_text()) == written, (
        "README.md's reference section is out of date: replace it with the output of "
        "`python -m gitreduce.cli.manual markdown`"
    )


def test_the_manual_and_the_readme_say_the_same_things():
    page, reference = man(_tree()), markdown(_tree())
    for needle in ("gitreduce.branchPrefix", "git reduce hooks install", "129", "--skip-pass"):
        assert needle in reference
        assert needle.replace("-", "\\-") in page


@needs_man
def test_the_manual_renders_without_warnings(tmp_path):
    source = tmp_path / "git-reduce.1"
    source.write_text(man(_tree()))
    env = dict(os.environ, MANWIDTH="80")
    process = subprocess.run(
        ["man", "--warnings", "-l", str(source)], capture_output=True, text=True, env=env
    )
    assert process.returncode == 0, process.stderr
    assert process.stderr == ""
    assert "EXIT STATUS" in plain(process.stdout)
    assert "CONFIGURATION" in plain(process.stdout)


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The wheel, built from a copy of the sources, installed into a fresh environment."""
    base = tmp_path_factory.mktemp("wheel")
    source = base / "source"
    shutil.copytree(
        ROOT,
        source,
        ignore=shutil.ignore_patterns(".git", ".venv", "build", "*.egg-info", "__pycache__"),
    )
    subprocess.run(
        [
            *(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation"),
            *("--wheel-dir", str(base / "dist"), str(source)),
        ],
        check=True,
        capture_output=True,
    )
    (wheel,) = (base / "dist").glob("gitreduce-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "gitreduce-0.1.0.data/data/share/man/man1/git-reduce.1" in names
    assert "gitreduce-0.1.0.data/data/share/bash-completion/completions/git-reduce" in names
    prefix = base / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(prefix)], check=True)
    subprocess.run(
        [
            *(sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index"),
            "--ignore-installed",  # leave the running environment's own install alone
            *("--prefix", str(prefix), str(wheel)),
        ],
        check=True,
        capture_output=True,
    )
    return prefix


def _path_env(prefix: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in ("MANPATH", "MANPAGER")}
    env.update(
        PATH=f"{prefix / 'bin'}:/usr/local/bin:/usr/bin:/bin",
        MANPAGER="cat",
        PAGER="cat",
        GIT_PAGER="cat",
        MANWIDTH="80",
        HOME=str(prefix),
    )
    return env


@needs_man
def test_man_finds_the_page_of_a_wheel_installed_in_a_fresh_environment(installed):
    process = subprocess.run(
        ["man", "-w", "git-reduce"], capture_output=True, text=True, env=_path_env(installed)
    )
    assert process.returncode == 0, process.stderr
    assert Path(process.stdout.strip()) == installed / "share/man/man1/git-reduce.1"


@needs_man
@pytest.mark.parametrize("command", [["help", "reduce"], ["reduce", "--help"]], ids=" ".join)
def test_git_help_reduce_opens_the_manual(installed, command):
    process = subprocess.run(
        ["git", *command], capture_output=True, text=True, env=_path_env(installed)
    )
    assert process.returncode == 0, process.stderr
    assert "GIT-REDUCE(1)" in plain(process.stdout)
    assert "gitreduce.branchPrefix" in plain(process.stdout)
