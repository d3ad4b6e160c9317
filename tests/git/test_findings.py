"""Which commits are findings, and why the others cannot run: the hook's trust rule in Python."""

from __future__ import annotations

from pathlib import Path

import pygit2
import pytest
from hook_support import hook_env, init_repo, run_git

from gitreduce.core.errors import UserError
from gitreduce.git.findings import commits_in, examine, find_findings


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    env = hook_env(tmp_path)
    path = init_repo(tmp_path / "repo", env)
    run_git(path, env, "config", "gitreduce.test.gcc.command", "./t.sh {}")
    (path / "a.c").write_text("int a;\n")
    run_git(path, env, "add", "a.c")
    run_git(path, env, "commit", "-q", "-m", "seed")
    return path, env


def commit(repo: Path, env: dict[str, str], message: str, **files: str) -> str:
    for name, text in files.items():
        (repo / name.replace("_", ".")).write_text(text)
    run_git(repo, env, "add", "-A")
    run_git(repo, env, "commit", "-q", "--allow-empty", "-m", message)
    return run_git(repo, env, "rev-parse", "HEAD").stdout.strip()


def test_a_trailer_naming_a_configured_test_makes_a_finding(repo: tuple[Path, dict]) -> None:
    path, env = repo
    sha = commit(path, env, "crash\n\nReduce-Test: gcc", a_c="int a = 1/0;\n")
    finding = examine(pygit2.Repository(str(path)), sha)
    assert finding is not None and finding.problem is None
    assert (finding.path, finding.test_name, finding.command) == ("a.c", "gcc", "./t.sh {}")
    assert finding.branch("reduce/") == f"reduce/{sha[:7]}"


@pytest.mark.parametrize(
    ("message", "problem"),
    [
        ("x\n\nReduce-Test: nope", "test 'nope' is not defined here"),
        ("x\n\nReduce-Test: $(rm -rf ~)", "is not a test name"),
        ("Reduce-Test: gcc\n\nbody", "is not a trailer"),
        ("x\n\nReduce-Test: gcc\nReduce-Path: ../etc/passwd", "not a path inside"),
        ("x\n\nReduce-Test: gcc\nReduce-Path: missing.c", "does not exist"),
    ],
)
def test_what_may_not_run_says_why(repo: tuple[Path, dict], message: str, problem: str) -> None:
    path, env = repo
    sha = commit(path, env, message, a_c="int a = 2;\n")
    finding = examine(pygit2.Repository(str(path)), sha)
    assert finding is not None and finding.problem is not None
    assert problem in finding.problem
    assert finding.command is None or "rm" not in finding.command


def test_several_files_make_one_finding_of_them_all(repo: tuple[Path, dict]) -> None:
    path, env = repo
    (path / "gone.c").write_text("int gone;\n")
    run_git(path, env, "add", "gone.c")
    run_git(path, env, "commit", "-q", "-m", "more seed")
    (path / "gone.c").unlink()
    sha = commit(path, env, "x\n\nReduce-Test: gcc", a_c="int a = 3;\n", new_c="int n;\n")
    finding = examine(pygit2.Repository(str(path)), sha)
    assert finding is not None and finding.problem is None, finding
    # Modified, deleted and added alike, in git's order; no single path.
    assert finding.paths == ("a.c", "gone.c", "new.c") and finding.path is None


def test_reduce_path_trailers_add_files(repo: tuple[Path, dict]) -> None:
    """Every Reduce-Path trailer counts, each naming one path (spaces included); a changed
    file named again is taken once."""
    path, env = repo
    (path / "h.h").write_text("#define H 1\n")
    (path / "k 2.h").write_text("#define K 1\n")
    (path / "b.c").write_text("int b;\n")
    run_git(path, env, "add", "-A")
    run_git(path, env, "commit", "-q", "-m", "more seed")
    sha = commit(
        path,
        env,
        "x\n\nReduce-Test: gcc\nReduce-Path: h.h\nReduce-Path: a.c\nreduce-path: k 2.h",
        a_c="int a = 4;\n",
    )
    repository = pygit2.Repository(str(path))
    finding = examine(repository, sha)
    assert finding is not None and finding.problem is None, finding
    assert finding.paths == ("a.c", "h.h", "k 2.h")
    served = commit(path, env, "plain\n\nReduce-Path: b.c", a_c="int a = 5;\n")
    by_test = examine(repository, served, "./mine.sh {}")
    assert by_test is not None and by_test.paths == ("a.c", "b.c") and by_test.problem is None


@pytest.mark.parametrize(
    ("trailer", "problem"),
    [
        ("Reduce-Path: /etc/passwd", "'/etc/passwd' is not a path inside the repository"),
        ("Reduce-Path: ../outside.c", "'../outside.c' is not a path inside the repository"),
        ("Reduce-Path: ./a.c", "'./a.c' is not a path inside the repository"),
        ("Reduce-Path: nowhere.c", "nowhere.c does not exist in the commit or its parent"),
        ("Reduce-Path: dir", "dir is not a file in its parent"),
        ("Reduce-Path: link.c", "link.c is a symbolic link in its parent"),
        ("Reduce-Path: module", "module is not a file in its parent"),
    ],
)
def test_a_bad_path_among_several_says_why(
    repo: tuple[Path, dict], trailer: str, problem: str
) -> None:
    path, env = repo
    (path / "dir").mkdir()
    (path / "dir" / "x.c").write_text("int x;\n")
    (path / "link.c").symlink_to("a.c")
    seeded = run_git(path, env, "rev-parse", "HEAD").stdout.strip()
    run_git(path, env, "add", "-A")
    run_git(path, env, "update-index", "--add", "--cacheinfo", f"160000,{seeded},module")
    (path / "module").mkdir()  # as git leaves a submodule not checked out
    run_git(path, env, "commit", "-q", "-m", "more seed")
    sha = commit(path, env, f"x\n\nReduce-Test: gcc\n{trailer}", a_c="int a = 6;\n")
    finding = examine(pygit2.Repository(str(path)), sha)
    assert finding is not None and finding.problem == problem
    assert finding.command == "./t.sh {}"  # the test is known; the paths are what is wrong


def test_one_path_is_checked_as_before(repo: tuple[Path, dict]) -> None:
    """A finding of one file stays a one-file reduction: the file must be at both commits."""
    path, env = repo
    added = commit(path, env, "x\n\nReduce-Test: gcc", new_c="int n;\n")
    finding = examine(pygit2.Repository(str(path)), added)
    assert finding is not None and finding.problem == "new.c does not exist in its parent"
    assert finding.paths == ("new.c",)


def test_without_a_trailer_only_a_command_line_test_makes_a_finding(
    repo: tuple[Path, dict],
) -> None:
    path, env = repo
    sha = commit(path, env, "plain mutation", a_c="int a = 5;\n")
    repository = pygit2.Repository(str(path))
    assert examine(repository, sha) is None
    served = examine(repository, sha, "./mine.sh {}")
    assert served is not None and served.command == "./mine.sh {}" and served.path == "a.c"
    root = commits_in(repository, None, False)[0]
    assert examine(repository, root, "./mine.sh {}") is None  # no parent: no seed


def test_ranges_and_all_leave_out_result_branches(repo: tuple[Path, dict]) -> None:
    path, env = repo
    first = run_git(path, env, "rev-parse", "HEAD").stdout.strip()
    sha = commit(path, env, "x\n\nReduce-Test: gcc", a_c="int a = 6;\n")
    run_git(path, env, "branch", "reduce/old", first)
    run_git(path, env, "checkout", "-q", "--orphan", "reduce/result")
    run_git(path, env, "commit", "-q", "-m", "a result\n\nReduced-With: x")
    run_git(path, env, "checkout", "-q", "main")
    repository = pygit2.Repository(str(path))
    assert commits_in(repository, None, False) == [first, sha]
    assert commits_in(repository, f"{first}..HEAD", False) == [sha]
    assert commits_in(repository, None, True) == [first, sha]
    assert [f.commit for f in find_findings(repository, commits_in(repository, None, True))] == [
        sha
    ]
    with pytest.raises(UserError, match="not both"):
        commits_in(repository, "HEAD", True)
    with pytest.raises(UserError, match="unknown revision"):
        commits_in(repository, "nope", False)
