"""Result branches and patches, on real repositories: what `git show`, `git am` and the
user's own state see."""

from __future__ import annotations

from pathlib import Path

import pygit2
import pytest
from support import fsck_clean, git, make_user_repo, outcome_for, quiet_cache

from gitreduce.core.errors import UserError
from gitreduce.git.results import (
    format_patch,
    record_result,
    result_branch_name,
    result_message,
    write_patch,
)

AUTHOR = pygit2.Signature("Ada Tester", "ada@example.com", 1_700_000_000, 60)
SEED = b"int f(int x) {\n  return x + 1;\n}\n/* caf\xc3\xa9 */\n"
VARIANT = b"int f(int x) {\n  return x + 1 / 0;\n}\n/* caf\xc3\xa9 */"  # no final newline


def user_state(path: Path) -> dict[str, object]:
    """Everything of the user's that reduction must not touch."""
    files = {
        str(file.relative_to(path)): file.read_bytes()
        for file in sorted(path.rglob("*"))
        if file.is_file() and ".git" not in file.relative_to(path).parts
    }
    return {
        "head": git(path, "symbolic-ref", "HEAD").stdout,
        "head_commit": git(path, "rev-parse", "HEAD").stdout,
        "index": (path / ".git" / "index").read_bytes(),
        "status": git(path, "status", "--porcelain=v2").stdout,
        "branches": git(path, "for-each-ref", "refs/heads", "refs/tags").stdout,
        "files": files,
    }


def pairwise_result(repo: pygit2.Repository, branch: str = "reduce/prog") -> list[pygit2.Oid]:
    seed_message = result_message(
        "git reduce: reduced seed of src/deep/prog.c",
        path="src/deep/prog.c",
        test="./check.sh {}",
        sources=["1111111"],
        bytes_before=900,
        bytes_after=len(SEED),
    )
    variant_message = result_message(
        "git reduce: the failure-inducing change in src/deep/prog.c — tiny",
        path="src/deep/prog.c",
        test="./check.sh {}",
        sources=["2222222"],
        bytes_before=950,
        bytes_after=len(VARIANT),
        tokens_before=300,
        tokens_after=12,
    )
    return record_result(
        repo,
        branch=branch,
        path="src/deep/prog.c",
        versions=[(seed_message, SEED), (variant_message, VARIANT)],
        author=AUTHOR,
    )


def test_result_branch_is_an_orphan_history_of_one_file(tmp_path):
    repo_path = make_user_repo(tmp_path / "work")
    repo = pygit2.Repository(str(repo_path))
    seed_id, variant_id = pairwise_result(repo)
    seed, variant = repo[seed_id], repo[variant_id]
    assert seed.parents == [] and variant.parent_ids == [seed_id]
    assert repo.references["refs/heads/reduce/prog"].target == variant_id
    for commit, content in ((seed, SEED), (variant, VARIANT)):
        assert [entry.name for entry in commit.tree] == ["src"]
        assert commit.tree["src/deep/prog.c"].data == content
    assert "Reduced-From: 2222222" in variant.message
    assert "Bytes: 950 -> " in variant.message and "Tokens: 300 -> 12" in variant.message
    shown = git(repo_path, "show", "--format=", "reduce/prog").stdout
    assert "-  return x + 1;" in shown and "+  return x + 1 / 0;" in shown
    fsck_clean(repo_path)


def test_result_branch_is_not_overwritten_without_force(tmp_path):
    repo_path = make_user_repo(tmp_path / "work")
    repo = pygit2.Repository(str(repo_path))
    first = pairwise_result(repo)
    with pytest.raises(UserError, match="already exists"):
        pairwise_result(repo)
    assert repo.references["refs/heads/reduce/prog"].target == first[-1]
    replaced = record_result(
        repo, branch="reduce/prog", path="prog.c", versions=[("one\n", b"x\n")], force=True
    )
    assert repo.references["refs/heads/reduce/prog"].target == replaced[-1]
    with pytest.raises(UserError, match="checked out"):
        record_result(repo, branch="main", path="p.c", versions=[("m\n", b"x\n")], force=True)
    with pytest.raises(UserError, match="not a valid branch name"):
        record_result(repo, branch="reduce/a..b", path="p.c", versions=[("m\n", b"x\n")])
    with pytest.raises(UserError, match="not a path inside"):
        record_result(repo, branch="reduce/c", path="../p.c", versions=[("m\n", b"x\n")])


def test_branch_names():
    assert result_branch_name("prog.c") == "reduce/prog.c"
    assert result_branch_name("my file (1).c") == "reduce/my-file-1-.c"
    assert result_branch_name("..") == "reduce/result"
    assert result_branch_name("x.lock") == "reduce/x-lock"
    for hint in ("prog.c", "a b", "..", "x.lock", "~^:?*[\\"):
        assert pygit2.reference_is_valid_name("refs/heads/" + result_branch_name(hint))


def test_git_am_of_the_patch_onto_the_seed_reproduces_the_variant(tmp_path):
    repo_path = make_user_repo(tmp_path / "work")
    repo = pygit2.Repository(str(repo_path))
    seed_id, variant_id = pairwise_result(repo)
    patch = write_patch(repo, variant_id, tmp_path / "reduced.patch")
    text = patch.read_bytes()
    assert text.startswith(f"From {variant_id} Mon Sep 17 00:00:00 2001\n".encode())
    assert b"Subject: " in text and b"\n---\n" in text and b"diff --git" in text
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(repo_path), str(clone))
    git(clone, "checkout", "-q", "--detach", str(seed_id))
    assert (clone / "src" / "deep" / "prog.c").read_bytes() == SEED
    git(clone, "am", "-q", str(patch))
    assert (clone / "src" / "deep" / "prog.c").read_bytes() == VARIANT
    applied = pygit2.Repository(str(clone)).head.peel(pygit2.Commit)
    assert applied.tree.id == repo[variant_id].tree.id
    assert applied.message == repo[variant_id].message
    assert applied.author.email == AUTHOR.email


def test_single_file_result_and_root_patch(tmp_path):
    repo_path = make_user_repo(tmp_path / "work")
    repo = pygit2.Repository(str(repo_path))
    (only,) = record_result(
        repo,
        branch=result_branch_name("prog.c"),
        path="prog.c",
        versions=[("git reduce: reduced prog.c\n", b"int x;\n")],
        author=AUTHOR,
    )
    assert repo[only].parents == []
    patch = format_patch(repo, str(only))
    assert b"new file mode 100644" in patch and b"+int x;" in patch
    empty = tmp_path / "empty"
    git(tmp_path, "init", "-q", str(empty))
    (empty / "base").write_text("base\n")
    git(empty, "add", "base")
    git(empty, "commit", "-q", "-m", "base")
    (tmp_path / "root.patch").write_bytes(patch)
    git(empty, "am", "-q", str(tmp_path / "root.patch"))
    assert (empty / "prog.c").read_bytes() == b"int x;\n"


def test_nothing_of_the_users_is_touched(tmp_path):
    repo_path = make_user_repo(tmp_path / "work")
    before = user_state(repo_path)
    repo = pygit2.Repository(str(repo_path))
    cache = quiet_cache(repo)
    for index in range(50):
        cache.put(cache.remember(f"candidate {index}\n".encode()), outcome_for(index))
    cache.flush()
    cache.close()
    _, variant_id = pairwise_result(repo)
    write_patch(repo, variant_id, tmp_path / "out.patch")
    after = user_state(repo_path)
    added = git(repo_path, "for-each-ref", "--format=%(refname)", "refs/heads").stdout.split()
    assert "refs/heads/reduce/prog" in added
    after_branches = "".join(
        line + "\n"
        for line in str(after.pop("branches")).splitlines()
        if "refs/heads/reduce/" not in line
    )
    assert after_branches == before.pop("branches")
    assert after == before


def test_the_unborn_current_branch_is_not_created(tmp_path):
    repo = pygit2.init_repository(str(tmp_path / "fresh"), initial_head="reduce/x")
    with pytest.raises(UserError, match="checked out"):
        record_result(repo, branch="reduce/x", path="p.c", versions=[("m\n", b"x\n")])
    assert repo.head_is_unborn


def test_a_file_set_result_is_one_commit_of_every_file_and_a_patch_git_am_applies(tmp_path):
    repo_path = make_user_repo(tmp_path / "work")
    repo = pygit2.Repository(str(repo_path))
    files = {
        "main.c": b"void f(int);\nint main(void) { f(0); }\n",
        "lib/f.c": b"void f(long x) {}\n",
    }
    (only,) = record_result(
        repo,
        branch=result_branch_name("proj"),
        path="proj",
        versions=[("git reduce: reduced proj (3 -> 2 files)\n", files)],
        author=AUTHOR,
    )
    tree = repo[only].tree
    assert sorted(entry.name for entry in tree["proj"].peel(pygit2.Tree)) == ["lib", "main.c"]
    assert tree["proj/lib/f.c"].data == files["lib/f.c"]
    (tmp_path / "set.patch").write_bytes(format_patch(repo, str(only)))
    empty = tmp_path / "empty"
    git(tmp_path, "init", "-q", str(empty))
    (empty / "base").write_text("base\n")
    git(empty, "add", "base")
    git(empty, "commit", "-q", "-m", "base")
    git(empty, "am", "-q", str(tmp_path / "set.patch"))
    assert (empty / "proj" / "main.c").read_bytes() == files["main.c"]
    assert (empty / "proj" / "lib" / "f.c").read_bytes() == files["lib/f.c"]


def test_a_file_set_at_the_top_of_the_repository(tmp_path):
    repo = pygit2.Repository(str(make_user_repo(tmp_path / "work")))
    (only,) = record_result(
        repo, branch="reduce/top", path="", versions=[("m\n", {"a.c": b"int a;\n"})]
    )
    assert [entry.name for entry in repo[only].tree] == ["a.c"]
    with pytest.raises(UserError, match="not a path inside"):
        record_result(repo, branch="reduce/file", path="", versions=[("m\n", b"int a;\n")])
