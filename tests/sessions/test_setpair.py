"""PPR over file sets end to end: real directories, real git repositories, real test
processes and real gcc; the result as two directories, two commits and a patch `git am`
applies; bad inputs as one-line errors."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pygit2
import pytest
from support import git, isolate

from gitreduce.core.errors import UserError
from gitreduce.git.store import ResultRequest
from gitreduce.sessions.setpair import (
    SEED_DIRECTORY,
    VARIANT_DIRECTORY,
    SetPairSettings,
    SetPairSummary,
    reduce_set_pair,
)
from gitreduce.sessions.setpair_revisions import reduce_revision_set_pair

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "lto-type-mismatch"

# bad (1) while util.py returns BUG and main.py still imports it; 125 without main.py
TEST = (
    "test -f main.py && grep -q 'import util' main.py || exit 125; "
    "grep -q 'return BUG' util.py && exit 1; exit 0"
)
SEED = {
    "main.py": "import util\nimport data\n\n\n"
    "def run():\n    print(util.f(), data.TABLE)\n\n\nrun()\n",
    "util.py": "def f():\n    return 1\n\n\ndef g():\n    return 2\n",
    "data.py": "TABLE = [1, 2]\n",
    "README": "A small project.\nIt prints a value.\n",
}
# the bug in util.py, plus two changes that have nothing to do with it
VARIANT = SEED | {
    "util.py": "def f():\n    return BUG\n\n\ndef g():\n    return 2\n",
    "data.py": "TABLE = [1, 2, 3]\n",
    "extra.py": "EXTRA = True\n",
}


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolate(tmp_path, monkeypatch)


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def settings(**changes: object) -> SetPairSettings:
    return SetPairSettings(**({"test": TEST, "jobs": 2} | changes))  # type: ignore[arg-type]


def submodule_head(path: Path) -> str:
    """The commit of a new one-file repository at `path`, for a gitlink to point at."""
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    (path / "x").write_text("x\n")
    git(path, "add", ".")
    git(path, "commit", "-q", "-m", "sub")
    return git(path, "rev-parse", "HEAD").stdout.strip()


def directories(tmp_path: Path) -> tuple[Path, Path]:
    return write(tmp_path / "seed", SEED), write(tmp_path / "variant", VARIANT)


def test_irrelevant_changes_go_and_the_difference_is_the_bug(tmp_path: Path) -> None:
    seed, variant = directories(tmp_path)
    out = tmp_path / "out"
    summary = reduce_set_pair([seed], [variant], settings(output=out))
    assert summary.verified and not summary.interrupted
    assert summary.changed_files == ["util.py"]
    assert summary.diff_after <= 2 < summary.diff_before
    assert b"BUG" in summary.variant_files["util.py"]
    assert b"BUG" not in summary.seed_files["util.py"]
    assert summary.seed_files["main.py"] == summary.variant_files["main.py"]
    assert "README" not in summary.seed_files and "extra.py" not in summary.variant_files
    for side, files in (
        (SEED_DIRECTORY, summary.seed_files),
        (VARIANT_DIRECTORY, summary.variant_files),
    ):
        written = {path.name: path.read_bytes() for path in (out / side).iterdir()}
        assert written == files
    # outside any repository the commits live in the private cache
    assert summary.branch is None and len(summary.commits) == 2
    labels = summary.stats.by_pass
    assert labels["set-ldiff"] >= 1 and "verify" in labels
    assert any(label.startswith("file-ppr/") for label in labels)


def test_the_result_does_not_depend_on_jobs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed, variant = directories(tmp_path)
    results: list[SetPairSummary] = []
    for jobs in (1, 2):
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / f"cache-{jobs}"))
        results.append(
            reduce_set_pair([seed], [variant], settings(jobs=jobs, output=tmp_path / f"out-{jobs}"))
        )
    one, two = results
    assert (one.seed_files, one.variant_files) == (two.seed_files, two.variant_files)


def test_a_rerun_recalls_every_verdict(tmp_path: Path) -> None:
    seed, variant = directories(tmp_path)
    first = reduce_set_pair([seed], [variant], settings(output=tmp_path / "one"))
    again = reduce_set_pair([seed], [variant], settings(output=tmp_path / "two"))
    assert again.stats.tests_run == 0
    assert (again.seed_files, again.variant_files) == (first.seed_files, first.variant_files)


def test_keep_pins_a_file_in_both_sets(tmp_path: Path) -> None:
    seed, variant = directories(tmp_path)
    summary = reduce_set_pair(
        [seed], [variant], settings(keep=(variant / "README",), output=tmp_path / "out")
    )
    assert "README" in summary.seed_files and "README" in summary.variant_files
    with pytest.raises(UserError, match="not a file of either set"):
        reduce_set_pair([seed], [variant], settings(keep=(tmp_path / "elsewhere",)))


def test_a_file_only_the_variant_holds_can_be_the_change(tmp_path: Path) -> None:
    seed = write(tmp_path / "seed", {"main.py": "import util\n", "util.py": "X = 1\n"})
    variant = write(
        tmp_path / "variant",
        {"main.py": "import util\n", "util.py": "X = 1\n", "bug.py": "return BUG\nmore = 2\n"},
    )
    test = "grep -qs 'return BUG' bug.py && exit 1; exit 0"
    summary = reduce_set_pair(
        [seed], [variant], SetPairSettings(test=test, jobs=2, output=tmp_path / "out")
    )
    assert summary.changed_files == ["bug.py"]
    assert summary.variant_files["bug.py"].strip() == b"return BUG"
    assert summary.seed_files == {}  # nothing the seed holds matters


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda d: ([d / "seed"], [d / "seed"]), "identical"),
        (lambda d: ([d / "nowhere"], [d / "variant"]), "nowhere: no such file or directory"),
        (lambda d: ([d / "link"], [d / "variant"]), "is a symbolic link"),
    ],
    ids=["identical", "missing", "symlink"],
)
def test_bad_directories_are_one_line_errors(tmp_path: Path, make: object, message: str) -> None:
    directories(tmp_path)
    os.symlink(tmp_path / "seed", tmp_path / "link")
    seeds, variants = make(tmp_path)  # type: ignore[operator]
    with pytest.raises(UserError, match=message):
        reduce_set_pair(seeds, variants, settings())


def test_a_path_that_is_a_file_in_one_set_and_a_directory_in_the_other(tmp_path: Path) -> None:
    seed, variant = directories(tmp_path)
    (seed / "conf").write_text("x = 1\n")
    write(variant, {"conf/inner.py": "x = 2\n"})
    with pytest.raises(UserError, match="conf is a file in one set and a directory in the other"):
        reduce_set_pair([seed], [variant], settings())


def test_a_seed_that_fails_or_a_variant_that_passes_is_refused(tmp_path: Path) -> None:
    seed, variant = directories(tmp_path)
    with pytest.raises(UserError, match=r"^seed: "):
        reduce_set_pair([variant], [seed], settings())


def test_an_output_directory_holding_an_earlier_result_is_refused(tmp_path: Path) -> None:
    seed, variant = directories(tmp_path)
    (tmp_path / "out" / SEED_DIRECTORY).mkdir(parents=True)
    (tmp_path / "out" / SEED_DIRECTORY / "old.py").write_text("x = 1\n")
    with pytest.raises(UserError, match="is not an empty directory"):
        reduce_set_pair([seed], [variant], settings(output=tmp_path / "out"))


def test_binary_files_and_symbolic_links_inside_a_set(tmp_path: Path) -> None:
    """A binary member is kept or removed whole, a link left out: each said in a warning."""
    seed, variant = directories(tmp_path)
    for root in (seed, variant):
        (root / "blob.bin").write_bytes(b"\0\1\2binary")
        os.symlink(root / "main.py", root / "alias.py")
    summary = reduce_set_pair([seed], [variant], settings(output=tmp_path / "out"))
    warnings = "\n".join(summary.warnings)
    assert "binary files are kept or removed whole" in warnings and "blob.bin" in warnings
    assert "left out" in warnings and "alias.py" in warnings
    assert summary.changed_files == ["util.py"]
    assert "blob.bin" not in summary.seed_files


# -- from commits -------------------------------------------------------------------------


def history(tmp_path: Path) -> tuple[Path, str, str]:
    """GOOD: the seed set under app/; then an unrelated commit; BAD: the variant set."""
    work = tmp_path / "work"
    work.mkdir()
    git(work, "init", "-q", "-b", "main")
    write(work / "app", SEED)
    (work / "other.txt").write_text("not part of the set\n")
    git(work, "add", ".")
    git(work, "commit", "-q", "-m", "good")
    good = git(work, "rev-parse", "HEAD").stdout.strip()
    (work / "other.txt").write_text("still not part of it\n")
    git(work, "commit", "-q", "-am", "unrelated")
    write(work / "app", VARIANT)
    git(work, "add", ".")
    git(work, "commit", "-q", "-m", "bad: three files changed")
    bad = git(work, "rev-parse", "HEAD").stdout.strip()
    return work, good, bad


def test_a_change_to_a_directory_between_commits_is_reduced_pairwise(tmp_path: Path) -> None:
    work, good, bad = history(tmp_path)
    before = git(work, "status", "--porcelain").stdout
    patch = tmp_path / "change.patch"
    summary = reduce_revision_set_pair(
        "HEAD~2..HEAD", ["app/"], settings(), directory=work, result=ResultRequest(patch=patch)
    )
    assert summary.changed_files == ["util.py"] and summary.diff_after <= 2
    assert not any("bisected" in warning for warning in summary.warnings)
    assert summary.branch == f"reduce/app-{bad[:7]}"
    repo = pygit2.Repository(str(work))
    variant_commit = repo.revparse_single(summary.branch).peel(pygit2.Commit)
    seed_commit = variant_commit.parents[0]
    assert [str(seed_commit.id), str(variant_commit.id)] == summary.commits
    assert variant_commit.tree["app/util.py"].data == summary.variant_files["util.py"]
    assert seed_commit.tree["app/util.py"].data == summary.seed_files["util.py"]
    assert good in seed_commit.message and bad in variant_commit.message
    assert git(work, "status", "--porcelain").stdout == before  # the work tree untouched
    # the patch is the change: `git am` applies it onto the reduced seed
    applied = tmp_path / "applied"
    git(tmp_path, "clone", "-q", "--branch", summary.branch, str(work), str(applied))
    git(applied, "reset", "-q", "--hard", "HEAD~1")
    git(applied, "am", "-q", str(patch))
    assert (applied / "app" / "util.py").read_bytes() == summary.variant_files["util.py"]


def test_commits_that_change_the_set_are_bisected_first(tmp_path: Path) -> None:
    """GOOD, a good change to the set, the bug (with two changes beside it), a later
    change: the pair reduced is the bug's parent's set against the bug's."""
    work = tmp_path / "work"
    work.mkdir()
    git(work, "init", "-q", "-b", "main")
    write(work / "app", SEED)
    git(work, "add", ".")
    git(work, "commit", "-q", "-m", "good")
    write(work / "app", {"README": "A small project, still good.\n"})
    git(work, "commit", "-q", "-am", "still good")
    write(work / "app", VARIANT | {"README": "A small project, still good.\n"})
    git(work, "add", ".")
    git(work, "commit", "-q", "-m", "the bug")
    bug = git(work, "rev-parse", "HEAD").stdout.strip()
    write(work / "app", {"data.py": "TABLE = [1, 2, 3, 4]\n"})
    git(work, "commit", "-q", "-am", "later")
    heard: list[str] = []
    paths = ["app/main.py", "app/util.py", "app/data.py", "app/README", "app/extra.py"]
    summary = reduce_revision_set_pair(
        "HEAD~3..HEAD", paths, settings(), directory=work, echo=heard.append
    )
    assert summary.first_bad_commit == bug
    assert f"{bug} is the first bad commit" in heard
    assert summary.changed_files == ["util.py"]
    assert summary.stats.by_pass.get("bisect") is None  # the bisect's tests are its own
    unbisected = reduce_revision_set_pair(
        "HEAD~3..HEAD", paths, settings(), directory=work, bisect=False
    )
    assert unbisected.first_bad_commit is None and unbisected.changed_files == ["util.py"]


def test_bad_paths_between_commits_are_one_line_errors(tmp_path: Path) -> None:
    work, _, _ = history(tmp_path)
    (work / "other.txt").unlink()
    (work / "other.txt").mkdir()
    (work / "other.txt" / "inside").write_text("now a directory\n")
    os.symlink("app/main.py", work / "link.py")
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "kinds")
    sub_head = submodule_head(tmp_path / "sub")
    git(work, "update-index", "--add", "--cacheinfo", f"160000,{sub_head},module")
    git(work, "commit", "-q", "-m", "a submodule")
    for paths, message in [
        (["other.txt"], "is a file at HEAD~2 and a directory at HEAD"),
        (["link.py"], "is a link at HEAD"),
        (["module"], "is a submodule at HEAD"),
        (["nowhere/"], "does not exist at HEAD"),
    ]:
        with pytest.raises(UserError, match=message):
            reduce_revision_set_pair("HEAD~2..HEAD", paths, settings(), directory=work)
    with pytest.raises(UserError, match="nothing to reduce"):
        reduce_revision_set_pair("HEAD~1..HEAD", ["app"], settings(), directory=work)


def test_a_file_inside_the_directory_that_became_a_directory(tmp_path: Path) -> None:
    work, _, _ = history(tmp_path)
    (work / "app" / "data.py").unlink()
    write(work / "app", {"data.py/__init__.py": "TABLE = []\n"})
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "data.py is a package now")
    for revisions in ("HEAD~1..HEAD", "HEAD~3..HEAD"):
        with pytest.raises(UserError, match=r"data\.py is a file in one set and a directory"):
            reduce_revision_set_pair(revisions, ["app/"], settings(), directory=work, bisect=False)


def test_a_submodule_inside_the_directory_is_left_out_with_a_warning(tmp_path: Path) -> None:
    work, _, _ = history(tmp_path)
    sub_head = submodule_head(tmp_path / "sub")
    git(work, "update-index", "--add", "--cacheinfo", f"160000,{sub_head},app/vendor")
    git(work, "commit", "-q", "-m", "a submodule inside the set")
    summary = reduce_revision_set_pair("HEAD~3..HEAD", ["app/"], settings(), directory=work)
    assert any("app/vendor" in warning and "left out" in warning for warning in summary.warnings)
    assert summary.changed_files == ["util.py"]


# -- a real compiler ----------------------------------------------------------------------

LTO_SEED = {
    "main.c": '#include <stdbool.h>\n#include "util.h"\n\n/* the logger\'s API */\n'
    "void log_set_quiet(bool enable);\n\n"
    "int main(void) {\n  log_set_quiet(twice(1) > 1);\n  return twice(0);\n}\n",
    "log.h": "#include <stdbool.h>\n\nvoid log_set_quiet(bool enable);\nbool log_quiet(void);\n",
    "log.c": '#include "log.h"\n\nstatic bool quiet;\n\n'
    "void log_set_quiet(bool enable) {\n  quiet = enable;\n}\n\n"
    "bool log_quiet(void) {\n  return quiet;\n}\n",
    "util.h": "int twice(int x);\n",
    "util.c": '#include "util.h"\n\nint twice(int x) {\n  return 2 * x;\n}\n',
}
LTO_VARIANT = LTO_SEED | {
    "main.c": LTO_SEED["main.c"].replace("log_set_quiet(bool enable)", "log_set_quiet(int enable)"),
    "util.c": LTO_SEED["util.c"].replace("2 * x", "x + x"),
    "extra.c": "int extra(void) {\n  return 3;\n}\n",
}


@pytest.mark.skipif(shutil.which("gcc") is None or shutil.which("make") is None, reason="gcc")
def test_an_lto_type_mismatch_introduced_among_other_changes(tmp_path: Path) -> None:
    """The fixture's oracle and Makefile on a small pair: the variant changes three files,
    and only the declaration's type in main.c makes the LTO link warn."""
    sets = []
    for name, files in (("seed", LTO_SEED), ("variant", LTO_VARIANT)):
        root = write(tmp_path / name, files)
        shutil.copy(FIXTURE / "set" / "Makefile", root / "Makefile")
        sets.append(root)
    summary = reduce_set_pair(
        [sets[0]],
        [sets[1]],
        SetPairSettings(
            test=str(FIXTURE / "test.sh"),
            keep=(sets[1] / "Makefile",),
            jobs=2,
            output=tmp_path / "out",
        ),
    )
    assert summary.verified
    assert summary.changed_files == ["main.c"]
    assert summary.diff_after <= 2
    assert b"int" in summary.variant_files["main.c"]
    assert {"main.c", "log.c", "Makefile"} <= set(summary.variant_files)
    assert not {"util.c", "extra.c"} & set(summary.variant_files)


# -- interrupted ----------------------------------------------------------------------------


def test_ctrl_c_writes_the_best_pair_so_far(tmp_path: Path) -> None:
    """SIGINT to the installed program's group mid-run: exit 130, no traceback, both sets
    written as the best pair so far, which still holds the bug on the variant's side."""
    seed, variant = directories(tmp_path)
    out = tmp_path / "out"
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"), TMPDIR=str(tmp_path))
    process = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "git-reduce"),
            "--seed",
            str(seed),
            "--variant",
            str(variant),
            "--test",
            f"sleep 0.3; {TEST}",
            "--output",
            str(out),
            "--json",
            "--jobs",
            "2",
        ],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    time.sleep(6)
    os.killpg(process.pid, signal.SIGINT)
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode in (0, 130), stderr
    assert "Traceback" not in stderr and "internal error" not in stderr
    record = json.loads(stdout)
    assert record["interrupted"] == (process.returncode == 130)
    written = {path.name: path.read_bytes() for path in (out / VARIANT_DIRECTORY).iterdir()}
    assert b"return BUG" in written["util.py"]
    assert sorted(written) == record["variant_files"]
