"""Reading file versions from commits of a real repository: contents, ranges, one-line errors."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pygit2
import pytest
from support import git

from gitreduce.core.errors import UserError
from gitreduce.git.revisions import (
    commits_changing,
    find_repository,
    kind_at,
    parse_range,
    read_file_at,
    read_set_at,
    resolve_commit,
    to_repo_path,
)

SIGNATURE = pygit2.Signature("Ada Tester", "ada@example.com", 1_700_000_000, 0)


def commit(
    repo: pygit2.Repository,
    files: dict[str, bytes | None],
    message: str,
    parents: list[pygit2.Oid] | None = None,
    ref: str | None = "refs/heads/main",
) -> pygit2.Oid:
    """A commit changing `files` (None deletes) on top of the first parent's tree, no checkout."""
    if parents is None:
        parents = [] if repo.head_is_unborn else [repo.head.target]
    index = pygit2.Index()
    if parents:
        index.read_tree(repo[parents[0]].tree)
    for path, content in files.items():
        if content is None:
            index.remove(path)
        else:
            index.add(
                pygit2.IndexEntry(path, repo.create_blob(content), pygit2.enums.FileMode.BLOB)
            )
    tree = index.write_tree(repo)
    return repo.create_commit(ref, SIGNATURE, SIGNATURE, message, tree, parents)


@pytest.fixture
def history(tmp_path: Path) -> dict[str, pygit2.Oid]:
    """main: v0, unrelated, v1, merge of a side branch (v2), v3, binary, dir, v3 again."""
    repo = pygit2.init_repository(str(tmp_path / "repo"), initial_head="main")
    ids: dict[str, pygit2.Oid] = {}
    ids["v0"] = commit(repo, {"src/prog.c": b"int v0;\n", "README": b"r\n"}, "v0")
    ids["unrelated"] = commit(repo, {"README": b"r2\n"}, "readme only")
    ids["v1"] = commit(repo, {"src/prog.c": b"int v1;\n"}, "v1")
    side1 = commit(repo, {"src/prog.c": b"int side;\n"}, "side 1", [ids["v1"]], ref=None)
    side2 = commit(repo, {"src/prog.c": b"int v2;\n"}, "side 2", [side1], ref=None)
    ids["side2"] = side2
    ids["merge"] = commit(
        repo, {"src/prog.c": b"int v2;\n"}, "merge side", [repo.head.target, side2]
    )
    ids["v3"] = commit(repo, {"src/prog.c": b"int v3;\n"}, "v3")
    ids["deleted"] = commit(repo, {"src/prog.c": None}, "delete prog.c")
    ids["v3again"] = commit(repo, {"src/prog.c": b"int v3;\n"}, "restore prog.c")
    ids["binary"] = commit(repo, {"data.bin": b"\x7fELF\0\0\x01"}, "binary")
    repo.references.create("refs/tags/v3", ids["v3"])
    return ids


def repository(tmp_path: Path) -> pygit2.Repository:
    return pygit2.Repository(str(tmp_path / "repo"))


def one_line_error(excinfo: pytest.ExceptionInfo[UserError], *words: str) -> str:
    message = str(excinfo.value)
    assert "\n" not in message and message.strip() == message
    for word in words:
        assert word in message, message
    return message


def test_read_file_at_any_revision_spelling(tmp_path, history):
    repo = repository(tmp_path)
    assert read_file_at(repo, "main", "src/prog.c") == b"int v3;\n"
    assert read_file_at(repo, "v3", "src/prog.c") == b"int v3;\n"
    assert read_file_at(repo, str(history["v1"]), "src/prog.c") == b"int v1;\n"
    assert read_file_at(repo, str(history["v1"])[:8], "src/prog.c") == b"int v1;\n"
    assert read_file_at(repo, "main~5", "src/prog.c") == b"int v1;\n"


def test_unknown_revision(tmp_path, history):
    repo = repository(tmp_path)
    for rev in ("nope", "main~99", "", "--all", "a..b"):
        with pytest.raises(UserError) as excinfo:
            read_file_at(repo, rev, "src/prog.c")
        one_line_error(excinfo, "unknown revision")


def test_revision_that_is_not_a_commit(tmp_path, history):
    with pytest.raises(UserError) as excinfo:
        read_file_at(repository(tmp_path), "main^{tree}", "src/prog.c")
    one_line_error(excinfo, "is not a commit")


def test_path_missing_at_a_commit(tmp_path, history):
    with pytest.raises(UserError) as excinfo:
        read_file_at(repository(tmp_path), "main~2", "src/prog.c")
    one_line_error(excinfo, "src/prog.c does not exist at main~2", str(history["deleted"])[:12])


def test_path_is_a_directory(tmp_path, history):
    with pytest.raises(UserError) as excinfo:
        read_file_at(repository(tmp_path), "main", "src")
    one_line_error(excinfo, "src is a directory")


def test_binary_blob(tmp_path, history):
    with pytest.raises(UserError) as excinfo:
        read_file_at(repository(tmp_path), "main", "data.bin")
    one_line_error(excinfo, "data.bin is a binary file")


def test_not_a_repository(tmp_path):
    outside = tmp_path / "plain"
    outside.mkdir()
    with pytest.raises(UserError) as excinfo:
        find_repository(outside)
    one_line_error(excinfo, "not a git repository", str(outside))


def test_find_repository_from_a_subdirectory(tmp_path):
    repo = pygit2.init_repository(str(tmp_path / "work"))
    (tmp_path / "work" / "a" / "b").mkdir(parents=True)
    found = find_repository(tmp_path / "work" / "a" / "b")
    assert Path(found.path).resolve() == Path(repo.path).resolve()


def test_to_repo_path(tmp_path):
    repo = pygit2.init_repository(str(tmp_path / "work"))
    sub = tmp_path / "work" / "src"
    sub.mkdir()
    assert to_repo_path(repo, "prog.c", sub) == "src/prog.c"
    assert to_repo_path(repo, "../README", sub) == "README"
    assert to_repo_path(repo, str(sub / "x" / ".." / "prog.c"), tmp_path) == "src/prog.c"
    with pytest.raises(UserError) as excinfo:
        to_repo_path(repo, "../../elsewhere.c", sub)
    one_line_error(excinfo, "outside the repository")
    bare = pygit2.init_repository(str(tmp_path / "bare.git"), bare=True)
    assert to_repo_path(bare, "./src/prog.c") == "src/prog.c"


def test_parse_range():
    assert parse_range("v1..v2") == ("v1", "v2")
    assert parse_range("HEAD~3..") == ("HEAD~3", "HEAD")
    assert parse_range("..topic") == ("HEAD", "topic")
    for spec, words in (
        ("v1...v2", "two dots"),
        ("v1", "not a range"),
        ("..", "at least one side"),
    ):
        with pytest.raises(UserError) as excinfo:
            parse_range(spec)
        one_line_error(excinfo, words)


def test_commits_changing_follows_the_first_parent_and_skips_unchanged(tmp_path, history):
    repo = repository(tmp_path)
    changing = commits_changing(repo, str(history["v0"]), "v3", "src/prog.c")
    # "unrelated" keeps the version, the side branch is not first-parent, the merge brings v2
    assert [c.id for c in changing] == [history["v1"], history["merge"], history["v3"]]


def test_commits_changing_ends_with_the_commit_that_made_bads_version(tmp_path, history):
    repo = repository(tmp_path)
    changing = commits_changing(repo, str(history["v0"]), "main", "src/prog.c")
    # the file is deleted then restored: the deletion is a version too (bisect skips it)
    assert [c.id for c in changing] == [
        history["v1"],
        history["merge"],
        history["v3"],
        history["deleted"],
        history["v3again"],
    ]


def test_identical_versions(tmp_path, history):
    repo = repository(tmp_path)
    with pytest.raises(UserError) as excinfo:
        commits_changing(repo, "v3", "main", "src/prog.c")
    one_line_error(excinfo, "src/prog.c is identical at v3", "nothing to reduce")


def test_good_must_be_an_ancestor_of_bad(tmp_path, history):
    repo = repository(tmp_path)
    with pytest.raises(UserError) as excinfo:
        commits_changing(repo, "v3", str(history["v1"]), "src/prog.c")
    one_line_error(excinfo, "is not an ancestor of")


def test_range_errors_name_the_side(tmp_path, history):
    repo = repository(tmp_path)
    with pytest.raises(UserError) as excinfo:
        commits_changing(repo, "nope", "main", "src/prog.c")
    one_line_error(excinfo, "unknown revision 'nope'")
    with pytest.raises(UserError) as excinfo:
        commits_changing(repo, "v3", "main", "missing.c")
    one_line_error(excinfo, "missing.c does not exist at v3")


def test_resolve_commit_peels_tags(tmp_path, history):
    repo = repository(tmp_path)
    oid = repo.create_tag(
        "annotated", history["v1"], pygit2.enums.ObjectType.COMMIT, SIGNATURE, "t"
    )
    assert oid is not None
    assert resolve_commit(repo, "annotated").id == history["v1"]


def test_reading_never_touches_the_working_tree(tmp_path):
    work = tmp_path / "work"
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    env.update(GIT_AUTHOR_NAME="a", GIT_AUTHOR_EMAIL="a@b", GIT_COMMITTER_NAME="a")
    env.update(GIT_COMMITTER_EMAIL="a@b", GIT_OPTIONAL_LOCKS="0")
    subprocess.run(["git", "init", "-q", str(work)], check=True, env=env)
    (work / "f.c").write_text("one\n")
    subprocess.run(["git", "add", "f.c"], cwd=work, check=True, env=env)
    subprocess.run(["git", "commit", "-qm", "1"], cwd=work, check=True, env=env)
    (work / "f.c").write_text("two\n")
    subprocess.run(["git", "commit", "-qam", "2"], cwd=work, check=True, env=env)
    (work / "f.c").write_text("edited, not committed\n")
    index = (work / ".git" / "index").read_bytes()
    repo = find_repository(work)
    assert read_file_at(repo, "HEAD~1", to_repo_path(repo, "f.c", work)) == b"one\n"
    assert [c.message for c in commits_changing(repo, "HEAD~1", "HEAD", "f.c")] == ["2\n"]
    assert (work / "f.c").read_text() == "edited, not committed\n"
    assert (work / ".git" / "index").read_bytes() == index


def test_a_set_at_a_commit_leaves_out_links_and_submodules(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    git(work, "init", "-q", "-b", "main")
    (work / "d" / "sub").mkdir(parents=True)
    (work / "d" / "a.c").write_text("int a;\n")
    (work / "d" / "sub" / "b.c").write_text("int b;\n")
    os.symlink("a.c", work / "d" / "l.c")
    git(work, "add", ".")
    git(work, "commit", "-q", "-m", "one")
    head = git(work, "rev-parse", "HEAD").stdout.strip()
    git(work, "update-index", "--add", "--cacheinfo", f"160000,{head},d/module")
    git(work, "commit", "-q", "-m", "two")
    repo = pygit2.Repository(str(work))
    files, skipped = read_set_at(repo, "HEAD", ["d", "absent"])
    assert files == {"d/a.c": b"int a;\n", "d/sub/b.c": b"int b;\n"}
    assert sorted(skipped) == ["d/l.c", "d/module"]
    commit = resolve_commit(repo, "HEAD")
    kinds = [kind_at(commit, path) for path in ("d", "d/a.c", "d/l.c", "d/module", "x")]
    assert kinds == ["directory", "file", "link", "submodule", None]


def test_a_set_at_a_commit_leaves_out_a_git_directory_a_stranger_committed(tmp_path):
    """git refuses to check out a tree entry named `.git`, but a commit can hold one (made
    with `git mktree`): written into the test's directory, its `config` would run a command
    (`core.fsmonitor`) for any test that runs git there. Before: read as members, and the
    run then crashed writing the set to the cache (`invalid name for a tree entry`)."""
    work = tmp_path / "work"
    work.mkdir()
    git(work, "init", "-q", "-b", "main")

    def mktree(listing: str) -> str:
        made = subprocess.run(
            ["git", "mktree"], cwd=work, input=listing, capture_output=True, text=True
        )
        assert made.returncode == 0, made.stderr
        return made.stdout.strip()

    def blob(text: str) -> str:
        return subprocess.run(
            ["git", "hash-object", "-w", "--stdin"],
            cwd=work,
            input=text,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()

    config = blob("[core]\n\tfsmonitor = touch PWNED\n")
    source = blob("int a;\n")
    hidden = mktree(f"100644 blob {config}\tconfig\n")
    case = mktree(
        f"100644 blob {source}\tprog.c\n040000 tree {hidden}\t.git\n040000 tree {hidden}\t.GIT.\n"
    )
    root = mktree(f"040000 tree {case}\tcase\n")
    git(work, "update-ref", "HEAD", git(work, "commit-tree", root, "-m", "crafted").stdout.strip())
    files, skipped = read_set_at(pygit2.Repository(str(work)), "HEAD", ["case"])
    assert files == {"case/prog.c": b"int a;\n"}
    assert sorted(skipped) == ["case/.GIT./config", "case/.git/config"]
