"""File-set mode end to end: real directories, real test commands, real gcc; the set's
result as a directory, a commit and a patch, and bad inputs as one-line errors."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pygit2
import pytest
from support import git, isolate, make_user_repo

from gitreduce.core import fileset
from gitreduce.core.errors import UserError
from gitreduce.core.keys import candidate_key
from gitreduce.git.store import ResultRequest
from gitreduce.sessions import set_files
from gitreduce.sessions.fileset import (
    FILES_PASS,
    FileSetSettings,
    reduce_files,
    reduce_revision_set,
)
from gitreduce.sessions.set_files import read_set

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "lto-type-mismatch"

# interesting (exit 0) while util.py still sets the flag and main.py still calls it
GREP_BOTH = "grep -q 'flag = 1' util.py && grep -q 'util.set_flag()' main.py"

MAIN = b"""import util
import data


def greet(name):
    return "hello " + name


def main():
    print(greet("world"))
    util.set_flag()
    print(data.TABLE)


main()
"""
UTIL = b"""flag = 0


def set_flag():
    global flag
    flag = 1


def clear_flag():
    global flag
    flag = 0
"""


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolate(tmp_path, monkeypatch)


def python_project(root: Path) -> Path:
    (root / "pkg").mkdir(parents=True, exist_ok=True)
    (root / "main.py").write_bytes(MAIN)
    (root / "util.py").write_bytes(UTIL)
    (root / "data.py").write_bytes(b"TABLE = [1, 2, 3]\n")
    (root / "pkg" / "__init__.py").write_bytes(b"from . import helpers\n")
    (root / "pkg" / "helpers.py").write_bytes(b"def helper():\n    return 42\n")
    (root / "README").write_bytes(b"A project.\nIt prints a greeting.\n")
    return root


def settings(paths: list[Path], test: str = GREP_BOTH, **options: object) -> FileSetSettings:
    return FileSetSettings(paths=tuple(paths), test=test, polarity="interesting", jobs=2, **options)  # type: ignore[arg-type]


def test_a_directory_loses_its_unneeded_files_then_each_file_its_unneeded_lines(
    tmp_path: Path,
) -> None:
    root = python_project(tmp_path / "proj")
    before = {path: path.read_bytes() for path in root.rglob("*") if path.is_file()}
    summary = reduce_files(settings([root], keep=(root / "README",)))
    assert set(summary.files) == {"main.py", "util.py", "README"}
    assert summary.files["util.py"].strip() == b"flag = 1"
    assert summary.files["main.py"].strip() == b"util.set_flag()"
    assert (summary.files_before, summary.files_after) == (6, 3)
    assert summary.verified and summary.tokens_after < summary.tokens_before
    assert summary.stats.by_pass.get(FILES_PASS)
    assert {path: path.read_bytes() for path in before} == before  # the inputs stay
    output = Path(summary.output or "")
    assert output == tmp_path / "proj.reduced"  # outside a repository: beside the set
    written = {p.relative_to(output).as_posix() for p in output.rglob("*") if p.is_file()}
    assert written == set(summary.files)
    assert summary.as_dict()["files"] == sorted(summary.files)


def test_a_second_run_is_answered_by_the_cache(tmp_path: Path) -> None:
    root = python_project(tmp_path / "proj")
    first = reduce_files(settings([root], output=tmp_path / "one"))
    again = reduce_files(settings([root], output=tmp_path / "two"))
    assert again.files == first.files
    assert again.stats.tests_run < first.stats.tests_run


def test_a_second_run_into_the_same_directory_leaves_no_file_its_result_dropped(
    tmp_path: Path,
) -> None:
    root = python_project(tmp_path / "proj")
    output = tmp_path / "out"
    output.mkdir()
    (output / "notes.txt").write_text("the user's own\n")
    kept = (root / "README", root / "pkg" / "helpers.py")
    first = reduce_files(settings([root], keep=kept, output=output))
    assert {"README", "pkg/helpers.py"} <= set(first.files)
    again = reduce_files(settings([root], output=output))
    assert not {"README", "pkg/helpers.py"} & set(again.files)
    written = {p.relative_to(output).as_posix() for p in output.rglob("*") if p.is_file()}
    assert written == set(again.files) | {"notes.txt"}
    assert not (output / "pkg").exists()  # emptied by the second run


def test_named_files_are_a_set_relative_to_their_common_directory(tmp_path: Path) -> None:
    root = python_project(tmp_path / "proj")
    summary = reduce_files(
        settings([root / "main.py", root / "util.py", root / "pkg" / "helpers.py"])
    )
    assert set(summary.files) == {"main.py", "util.py"}


def test_in_a_repository_the_result_is_a_commit_of_the_set_and_a_patch(tmp_path: Path) -> None:
    work = make_user_repo(tmp_path / "work")
    python_project(work / "app")
    patch = tmp_path / "set.patch"
    summary = reduce_files(
        settings([work / "app"]), result=ResultRequest(branch="reduce/app", patch=patch)
    )
    assert summary.output is None and summary.branch == "reduce/app"
    repo = pygit2.Repository(str(work))
    tree = repo.revparse_single("reduce/app").peel(pygit2.Commit).tree
    assert tree["app/util.py"].data == summary.files["util.py"]
    assert sorted(entry.name for entry in tree["app"].peel(pygit2.Tree)) == sorted(summary.files)
    empty = tmp_path / "empty"
    git(tmp_path, "init", "-q", str(empty))
    (empty / "base").write_text("base\n")
    git(empty, "add", "base")
    git(empty, "commit", "-q", "-m", "base")
    git(empty, "am", "-q", str(patch))
    assert (empty / "app" / "main.py").read_bytes() == summary.files["main.py"]


def test_links_nested_repositories_and_binaries_are_left_out_or_kept_whole(
    tmp_path: Path,
) -> None:
    root = python_project(tmp_path / "proj")
    os.symlink(root / "util.py", root / "alias.py")
    (root / "vendor").mkdir()
    (root / "vendor" / ".git").write_text("gitdir: ../../.git/modules/vendor\n")
    (root / "vendor" / "lib.py").write_text("x = 1\n")
    (root / "blob.bin").write_bytes(b"\0\1\2flag = 1\n")
    read = read_set([root])
    assert "alias.py" not in read.files and "vendor/lib.py" not in read.files
    assert read.opaque == {"blob.bin"}
    assert any("alias.py" in warning and "vendor/" in warning for warning in read.warnings)
    assert any("blob.bin" in warning for warning in read.warnings)
    summary = reduce_files(settings([root], test=f"{GREP_BOTH} && test -e blob.bin"))
    assert summary.files["blob.bin"] == b"\0\1\2flag = 1\n"


def test_a_directory_too_large_to_be_a_reproduction_is_refused_before_it_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`git reduce /tmp --test ...` by mistake: one line at once, not minutes of reading and
    a copy of the whole directory as the "result" when the user gives up."""
    root = python_project(tmp_path / "proj")
    monkeypatch.setattr(set_files, "MAX_SET_FILES", 5)
    with pytest.raises(UserError, match=r"holds more than 5 files: too large"):
        read_set([root])  # six files
    with pytest.raises(UserError, match="more than 5 files"):
        read_set([root / "pkg", root / "main.py", root / "util.py", root / "data.py", root])
    monkeypatch.setattr(set_files, "MAX_SET_FILES", 6)
    assert len(read_set([root]).files) == 6
    monkeypatch.setattr(set_files, "MAX_SET_BYTES", 2**20)
    (root / "data.py").write_bytes(b"TABLE = []\n" + b"#" * 2**20)
    with pytest.raises(UserError, match=r"holds 1\.0 MiB, more than 1 MiB"):
        read_set([root])
    assert not (tmp_path / "proj.reduced").exists()


def test_a_commit_whose_set_is_too_large_is_refused_before_its_files_are_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Counted from the trees alone: one file's content missing from the object store
    (as in a partial clone) is never asked for."""
    work = history(tmp_path)
    repo = pygit2.Repository(str(work))
    blob = repo.revparse_single("HEAD:app/main.py").id
    (work / ".git" / "objects" / str(blob)[:2] / str(blob)[2:]).unlink()
    monkeypatch.setattr(set_files, "MAX_SET_FILES", 3)
    with pytest.raises(UserError, match=r"the set under .*app holds more than 3 files"):
        reduce_revision_set("HEAD~1..HEAD", ["app/"], settings([]), directory=work)


NOT_UTF8 = os.fsdecode(b"\xff.py")  # a name the file system holds and a set cannot


def test_a_name_that_is_not_utf8_is_left_out_with_a_warning_or_refused_in_one_line(
    tmp_path: Path,
) -> None:
    root = python_project(tmp_path / "proj")
    (root / NOT_UTF8).write_text("x = 1\n")
    read = read_set([root])
    assert NOT_UTF8 not in read.files and "util.py" in read.files
    assert any("not UTF-8" in warning for warning in read.warnings)
    with pytest.raises(UserError, match="a name that is not UTF-8"):
        read_set([root / "util.py", root / NOT_UTF8])


def test_a_commit_holding_a_name_that_is_not_utf8_is_reduced_without_it(tmp_path: Path) -> None:
    work = history(tmp_path)
    (work / "app" / NOT_UTF8).write_text("x = 1\n")
    git(work, "add", ".")
    git(work, "commit", "-q", "--amend", "--no-edit")
    summary = reduce_revision_set(
        "HEAD~1..HEAD", ["app/"], settings([]), directory=work, result=ResultRequest()
    )
    assert any("not UTF-8" in warning for warning in summary.warnings)
    assert all("\udcff" not in name for name in summary.files)


@pytest.mark.parametrize(
    ("make", "keep", "message"),
    [
        (lambda root: [root / "missing"], (), "no such file or directory"),
        (lambda root: [root / "link"], (), "symbolic link"),
        (lambda root: [root / "empty"], (), "no files to reduce"),
        (lambda root: [root / "proj"], ("elsewhere.py",), "not a file of the set"),
    ],
)
def test_bad_inputs_are_one_line_errors(
    tmp_path: Path, make: object, keep: tuple[str, ...], message: str
) -> None:
    python_project(tmp_path / "proj")
    (tmp_path / "empty").mkdir()
    os.symlink(tmp_path / "proj", tmp_path / "link")
    paths = make(tmp_path)  # type: ignore[operator]
    with pytest.raises(UserError, match=message):
        reduce_files(settings(paths, keep=tuple(tmp_path / name for name in keep)))


def history(tmp_path: Path) -> Path:
    """GOOD: the project without the flag being set; BAD: a commit changing three files."""
    work = tmp_path / "work"
    work.mkdir()
    git(work, "init", "-q", "-b", "main")
    python_project(work / "app")
    (work / "app" / "util.py").write_bytes(UTIL.replace(b"flag = 1", b"flag = 0"))
    (work / "other.txt").write_text("not part of the set\n")
    git(work, "add", ".")
    git(work, "commit", "-q", "-m", "good")
    python_project(work / "app")
    (work / "app" / "data.py").write_text("TABLE = [1, 2, 3, 4]\n")
    (work / "app" / "pkg" / "new.py").write_text("NEW = True\n")
    git(work, "add", ".")
    git(work, "commit", "-q", "-m", "bad: three files changed")
    return work


def test_a_change_to_several_files_is_reduced_as_the_set_at_bad(tmp_path: Path) -> None:
    work = history(tmp_path)
    before = git(work, "status", "--porcelain").stdout
    summary = reduce_revision_set(
        "HEAD~1..HEAD", ["app/"], settings([]), directory=work, result=ResultRequest()
    )
    assert set(summary.files) == {"main.py", "util.py"}
    assert summary.files_before == 7 and summary.branch == "reduce/app"
    assert any("reduced alone" in warning for warning in summary.warnings)
    repo = pygit2.Repository(str(work))
    commit = repo.revparse_single("reduce/app").peel(pygit2.Commit)
    assert commit.tree["app/util.py"].data == summary.files["util.py"]
    assert str(repo.revparse_single("HEAD").id) in commit.message
    assert git(work, "status", "--porcelain").stdout == before


def test_a_path_that_changed_kind_or_is_not_there_is_a_one_line_error(tmp_path: Path) -> None:
    work = history(tmp_path)
    (work / "other.txt").unlink()
    (work / "other.txt").mkdir()
    (work / "other.txt" / "inside").write_text("now a directory\n")
    os.symlink("app/main.py", work / "link.py")
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "kinds")
    for paths, message in [
        (["other.txt"], "is a file at HEAD~1 and a directory at HEAD"),
        (["link.py"], "is a link at HEAD"),
        (["nowhere/"], "does not exist at HEAD"),
    ]:
        with pytest.raises(UserError, match=message):
            reduce_revision_set("HEAD~1..HEAD", paths, settings([]), directory=work)
    with pytest.raises(UserError, match="nothing to reduce"):
        reduce_revision_set("HEAD~1..HEAD", ["app"], settings([]), directory=work)


LTO_SET = {
    "main.c": '#include "util.h"\n\n/* the logger\'s API as it was */\n'
    "void log_set_quiet(int enable);\n\n"
    "int main(void) {\n  log_set_quiet(twice(1) > 1);\n  return twice(0);\n}\n",
    "log.h": "#include <stdbool.h>\n\nvoid log_set_quiet(bool enable);\nbool log_quiet(void);\n",
    "log.c": '#include "log.h"\n\nstatic bool quiet;\n\n'
    "void log_set_quiet(bool enable) {\n  quiet = enable;\n}\n\n"
    "bool log_quiet(void) {\n  return quiet;\n}\n",
    "util.h": "int twice(int x);\n",
    "util.c": '#include "util.h"\n\nint twice(int x) {\n  return 2 * x;\n}\n',
}


@pytest.mark.skipif(shutil.which("gcc") is None or shutil.which("make") is None, reason="gcc")
def test_an_lto_type_mismatch_across_translation_units_keeps_only_what_makes_it(
    tmp_path: Path,
) -> None:
    """The acceptance fixture's bug, oracle and Makefile, on six small files: the fixture
    itself takes minutes (its figures are in its README). The warning comes only from the
    LTO link of two units; util.c and util.h go once main.c no longer calls `twice`."""
    root = tmp_path / "set"
    root.mkdir()
    shutil.copy(FIXTURE / "set" / "Makefile", root / "Makefile")
    for name, text in LTO_SET.items():
        (root / name).write_text(text)
    summary = reduce_files(
        FileSetSettings(
            paths=(root,),
            test=str(FIXTURE / "test.sh"),
            keep=(root / "Makefile",),
            jobs=2,
            output=tmp_path / "out",
        )
    )
    assert summary.verified and summary.files_before == 6
    assert (
        {"main.c", "log.c", "Makefile"}
        <= set(summary.files)
        <= {
            "main.c",
            "log.c",
            "log.h",
            "Makefile",
        }
    )
    assert b"log_set_quiet" in summary.files["main.c"]
    assert b"quiet = " not in summary.files["log.c"]
    assert summary.tokens_after * 2 < summary.tokens_before  # the Makefile stays near whole


def test_a_sets_verdicts_are_keyed_by_the_tree_git_writes_for_its_files(tmp_path: Path) -> None:
    """Each test writes, with real git, the tree of the directory it was given; every key of
    the cache is one of those trees, kept in the repository, whose files pack back to the
    candidate; and a second run is answered by the cache alone."""
    work = make_user_repo(tmp_path / "work")
    python_project(work / "app")
    trees = tmp_path / "trees.log"
    test = tmp_path / "test.sh"
    test.write_text(
        "#!/bin/sh\n"
        "scratch=$(mktemp -d) && trap 'rm -rf \"$scratch\"' EXIT\n"
        'git init -q --bare "$scratch/git" || exit 125\n'
        'GIT_DIR="$scratch/git" GIT_WORK_TREE=. git add -A || exit 125\n'
        f'GIT_DIR="$scratch/git" git write-tree >> {trees} || exit 125\n'
        f"{GREP_BOTH}\n"
    )
    test.chmod(0o755)
    first = reduce_files(settings([work / "app"], test=str(test)))
    assert first.verified and first.files_after < first.files_before
    repo = pygit2.Repository(str(work))
    (ref,) = [name for name in repo.references if name.startswith("refs/reduce/cache/")]
    keys = {
        line.split()[0]
        for entry in git(work, "ls-tree", "-r", "--name-only", ref).stdout.split()
        if entry.endswith("verdicts")
        for line in git(work, "cat-file", "blob", f"{ref}:{entry}").stdout.splitlines()
    }
    tested = set(trees.read_text().split())
    assert keys and keys <= tested  # each verdict's key: a tree git wrote for a tested set
    for key in keys:
        assert git(work, "cat-file", "-t", key).stdout.strip() == "tree"
        files = {
            path: repo[repo.revparse_single(f"{key}:{path}").id].data
            for path in git(work, "ls-tree", "-r", "--name-only", key).stdout.splitlines()
        }
        assert candidate_key(fileset.pack(files)) == key
    assert candidate_key(fileset.pack(first.files)) in keys
    again = reduce_files(settings([work / "app"], test=str(test)))
    assert again.stats.tests_run == 0 and again.files == first.files


TWICE = {
    "util.h": "void hello(void);\nvoid world(void);\n",
    "a.c": '#include <stdio.h>\n#include "util.h"\n\nvoid hello(void) { puts("hello"); }\n\n'
    'void world(void) { puts("hello"); }\n',
    "b.c": '#include "util.h"\n\nint main(void) {\n  hello();\n  world();\n  return 0;\n}\n',
}
# interesting while the program built from every .c file says hello twice; strict C, so no
# function goes undeclared
SAYS_HELLO_TWICE = (
    "gcc -std=c99 -pedantic-errors -Werror=implicit-function-declaration -o prog *.c "
    '2>/dev/null && [ "$(./prog | grep -c hello)" -eq 2 ]'
)


@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc")
def test_a_name_a_header_declares_and_two_files_use_goes_only_across_files(
    tmp_path: Path,
) -> None:
    """`hello` and `world` are declared in util.h, defined in a.c and called in b.c: no
    file alone can lose either (both calls are needed, and the other files link and
    declare them), so the per-file passes keep both; one renamed to the other in every
    file at once, one goes."""
    root = tmp_path / "set"
    root.mkdir()
    for name, text in TWICE.items():
        (root / name).write_text(text)
    per_file = reduce_files(
        settings(
            [root],
            test=SAYS_HELLO_TWICE,
            skip_passes=("cross-identifiers",),
            output=tmp_path / "per-file",
        )
    )
    assert all(b"world" in per_file.files[name] for name in TWICE)
    assert all(b"hello" in per_file.files[name] for name in TWICE)
    assert "cross-identifiers" not in per_file.stats.by_pass
    across = reduce_files(settings([root], test=SAYS_HELLO_TWICE, output=tmp_path / "across"))
    assert across.verified and set(across.files) == set(TWICE)
    sources = b"".join(across.files.values())
    (kept,) = set(re.findall(rb"(\w+)\(\w*\)", sources)) - {b"main"}  # not puts("hello")
    assert across.files["b.c"].count(kept + b"();") == 2
    profile = {row["pass"]: row for row in across.stats.pass_profile()}
    assert profile["cross-identifiers"]["successes"] >= 1
    assert across.stats.by_pass["cross-identifiers"] >= 1
    assert across.tokens_after < per_file.tokens_after
