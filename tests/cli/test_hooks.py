"""`git reduce hooks`: the command-line front, its reports and its one-line errors."""

from __future__ import annotations

from pathlib import Path

import pygit2
import pytest

from gitreduce.cli.app import run


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "findings"
    pygit2.init_repository(str(path), initial_head="main")
    return path


def test_cli_errors_are_one_line(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    hook = repo / ".git" / "hooks" / "post-commit"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text("#!/bin/sh\n")
    monkeypatch.chdir(repo)
    assert run(["hooks", "install"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and "--force" in err and "\n" not in err
    assert run(["hooks", "install", "--force"]) == 0
    assert "installed" in capsys.readouterr().err
    assert run(["hooks", "uninstall"]) == 0
    assert "restored the previous hook" in capsys.readouterr().err
    assert run(["hooks", "bogus"]) == 2
    assert capsys.readouterr().err.startswith("error:")
    outside = tmp_path / "plain"
    outside.mkdir()
    monkeypatch.chdir(outside)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    assert run(["hooks", "install"]) == 2
    assert "not in a git repository" in capsys.readouterr().err
