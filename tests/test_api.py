"""The Python API as a fuzzing pipeline uses it: real gcc test scripts, files and repositories.

Every call runs in this process; the verdict cache for plain files is private
to each test (XDG_CACHE_HOME), and the inputs sit in temporary directories
outside any repository unless the test builds one. The cwd is somewhere else
entirely, so nothing may depend on it.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pygit2
import pytest
from support import increments_itself, isolate

import gitreduce
from gitreduce import api
from gitreduce.core.current import Current
from gitreduce.pair.current import PairCurrent

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
TEST_SH = FIXTURES / "sequence-point" / "test.sh"  # 1 when gcc warns about a sequence point
FIGURE1 = FIXTURES / "ppr-figure1"
BUG_FREE = b"count = count + step;"
BUG = b"count = count++ + step;"
PROGRAM = b"""int printf(const char *format, ...);

static int twice(int x) {
    return x * 2;
}

static int tally(int limit) {
    int count = 0;
    int step = 2;
    while (step < limit) {
        step = twice(step);
        count = count + step;
    }
    return count;
}

int main(void) {
    printf("%d\\n", tally(100));
    return 0;
}
"""
SIGNATURE = pygit2.Signature("Ada Tester", "ada@example.com", 1_700_000_000, 0)

pytestmark = pytest.mark.skipif(
    shutil.which("gcc") is None, reason="needs gcc for the test scripts"
)


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolate(tmp_path, monkeypatch)


def status(script: Path, text: bytes, tmp_path: Path) -> int:
    """The script's exit status on `text`."""
    candidate = tmp_path / "check" / "candidate.c"
    candidate.parent.mkdir(exist_ok=True)
    candidate.write_bytes(text)
    return subprocess.run([str(script), str(candidate)], capture_output=True).returncode


def test_reduce_file_returns_the_summary_and_writes_the_result(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "inputs" / "crash.c"
    source.parent.mkdir()
    source.write_bytes(PROGRAM.replace(BUG_FREE, BUG))
    seen: list[int] = []

    def progress(current: Current) -> None:
        seen.append(current.tokens)

    summary = gitreduce.reduce_file(str(source), str(TEST_SH), jobs=2, progress=progress)

    assert isinstance(summary, gitreduce.Summary)
    assert not summary.interrupted
    assert summary.language == "c"
    assert summary.input == str(source)
    assert summary.bytes_before == len(source.read_bytes())
    assert 0 < summary.tokens_after < summary.tokens_before / 3
    assert summary.bytes_after == len(summary.result) < summary.bytes_before
    assert increments_itself(summary.result)
    assert status(TEST_SH, summary.result, tmp_path) == 1
    assert summary.stats.tests_run > 0 and summary.verified
    assert summary.test == str(TEST_SH)
    # outside any repository the result is a file next to the input, the input untouched
    assert summary.output == str(source.with_name("crash.reduced.c"))
    assert Path(summary.output).read_bytes() == summary.result
    assert source.read_bytes() == PROGRAM.replace(BUG_FREE, BUG)
    assert seen[0] == summary.tokens_before and seen[-1] == summary.tokens_after
    assert summary.as_dict()["tests_run"] == summary.stats.tests_run
    assert capfd.readouterr() == ("", "")  # sessions never print


def test_reduce_file_output_and_interesting_convention(tmp_path: Path) -> None:
    """`interesting=True` takes C-Reduce scripts (0 = still shows the bug)."""
    source = tmp_path / "crash.c"
    source.write_bytes(PROGRAM.replace(BUG_FREE, BUG))
    interesting = FIXTURES / "sequence-point" / "interesting.sh"
    output = tmp_path / "out" / "small.c"
    output.parent.mkdir()

    summary = gitreduce.reduce_file(
        source, f"{interesting} {{}}", interesting=True, jobs=1, output=output
    )

    assert summary.output == str(output)
    assert output.read_bytes() == summary.result
    assert increments_itself(summary.result)
    assert not source.with_name("crash.reduced.c").exists()


def test_reduce_pair_on_ppr_figure1(tmp_path: Path) -> None:
    """The PPR paper's Figure 1 pair: the change left is the highlighted one (10 or 11 tokens)."""
    pair = tmp_path / "pair"
    shutil.copytree(FIGURE1, pair)  # the fixture itself sits inside this project's repository
    test = pair / "test.sh"
    seen: list[int] = []

    def progress(current: PairCurrent) -> None:
        seen.append(len(current.state.variant_text()))

    summary = gitreduce.reduce_pair(
        pair / "seed.c", str(pair / "variant.c"), str(test), jobs=2, progress=progress
    )

    assert isinstance(summary, gitreduce.PairSummary)
    assert not summary.interrupted
    assert summary.name == "variant.c"
    assert summary.algorithm == "ppr"
    assert summary.language == "c"
    assert summary.diff_after in (10, 11) and summary.diff_after < summary.diff_before
    assert summary.variant_after < summary.variant_before / 2
    assert summary.seed_after <= summary.seed_before
    assert status(test, summary.seed, tmp_path) == 0
    assert status(test, summary.variant, tmp_path) == 1
    assert summary.stats.tests_run > 0
    assert summary.branch is None  # outside any repository
    assert summary.first_bad_commit is None
    assert seen
    # nothing is written but the result: the caller has the texts
    assert sorted(path.name for path in pair.iterdir()) == [
        "README.md",
        "seed.c",
        "test.sh",
        "variant.c",
    ]


def commit(repo: pygit2.Repository, files: dict[str, bytes], message: str) -> str:
    """A commit on main changing `files`, on top of HEAD's tree (if any); its sha."""
    parents = [] if repo.head_is_unborn else [repo.head.target]
    index = pygit2.Index()
    if parents:
        index.read_tree(repo[parents[0]].tree)
    for path, content in files.items():
        index.add(pygit2.IndexEntry(path, repo.create_blob(content), pygit2.enums.FileMode.BLOB))
    tree = index.write_tree(repo)
    return str(repo.create_commit("refs/heads/main", SIGNATURE, SIGNATURE, message, tree, parents))


def test_reduce_revisions_in_a_repository_with_two_commits(tmp_path: Path) -> None:
    repo = pygit2.init_repository(str(tmp_path / "repo"), initial_head="main")
    good = commit(repo, {"src/prog.c": PROGRAM, "README": b"A project.\n"}, "Add the program")
    tuned = PROGRAM.replace(BUG_FREE, BUG).replace(b"x * 2", b"x * 2 + 0")  # and a harmless one
    bad = commit(repo, {"src/prog.c": tuned}, "Tune the program")
    repo.checkout_head()
    lines: list[str] = []

    summary = gitreduce.reduce_revisions(
        f"{good}..main",
        Path("src/prog.c"),
        str(TEST_SH),
        repository=tmp_path / "repo",
        jobs=2,
        echo=lines.append,
    )

    assert summary.first_bad_commit == bad
    assert summary.name == "prog.c"
    assert summary.diff_after < summary.diff_before
    assert increments_itself(summary.variant) and not increments_itself(summary.seed)
    assert status(TEST_SH, summary.seed, tmp_path) == 0
    assert status(TEST_SH, summary.variant, tmp_path) == 1
    assert summary.stats.tests_run > 0
    assert lines  # the bisect's report
    # recorded in the user's repository: seed and variant as two commits on a branch
    assert summary.branch is not None and summary.branch.startswith("reduce/")
    tip = repo.revparse_single(summary.branch)
    assert [str(tip.id), str(tip.parents[0].id)] == summary.commits[::-1]
    assert repo.revparse_single(f"{summary.branch}:src/prog.c").data == summary.variant
    assert repo.head.target == pygit2.Oid(hex=bad)  # nothing checked out


def test_bad_input_raises_user_error(tmp_path: Path) -> None:
    missing = tmp_path / "missing.c"
    with pytest.raises(gitreduce.UserError, match="no such file"):
        gitreduce.reduce_file(missing, str(TEST_SH))
    with pytest.raises(gitreduce.UserError, match="no such file"):
        gitreduce.reduce_pair(missing, FIGURE1 / "variant.c", str(TEST_SH))
    with pytest.raises(gitreduce.UserError, match="not a git repository"):
        gitreduce.reduce_revisions("a..b", "prog.c", str(TEST_SH), repository=tmp_path)
    source = tmp_path / "crash.c"
    source.write_bytes(PROGRAM.replace(BUG_FREE, BUG))
    with pytest.raises(gitreduce.UserError, match="jobs"):
        gitreduce.reduce_file(source, str(TEST_SH), jobs=0)
    with pytest.raises(gitreduce.UserError, match="repeat must be at least 1, not 0"):
        gitreduce.reduce_file(source, str(TEST_SH), repeat=0)
    with pytest.raises(gitreduce.UserError, match="repeat must be at most 99, not 1000000"):
        gitreduce.reduce_file(source, str(TEST_SH), repeat=1_000_000)
    for timeout in (-1.0, 0.0, float("nan"), float("inf")):
        with pytest.raises(gitreduce.UserError, match="positive number of seconds"):
            gitreduce.reduce_file(source, str(TEST_SH), timeout=timeout)
    with pytest.raises(gitreduce.UserError, match="not a valid branch name"):
        gitreduce.reduce_pair(FIGURE1 / "seed.c", FIGURE1 / "variant.c", "false", branch="a..b")
    with pytest.raises(gitreduce.UserError, match="exclude each other"):
        gitreduce.reduce_file(source, str(TEST_SH), signature="x", any_failure=True)
    with pytest.raises(gitreduce.UserError, match="unknown algorithm"):
        gitreduce.reduce_pair(source, source, str(TEST_SH), algorithm="bogus")  # type: ignore[arg-type]
    with pytest.raises(gitreduce.UserError, match="not bad"):
        gitreduce.reduce_file(source, "true")  # the test must call the original bad


def test_skip_passes_switches_passes_off(tmp_path: Path) -> None:
    """A pass named in `skip_passes` never runs: no label in the profile, no tests of its own."""
    source = tmp_path / "crash.c"
    source.write_bytes(PROGRAM.replace(BUG_FREE, BUG))

    summary = gitreduce.reduce_file(source, str(TEST_SH), jobs=2, skip_passes=["windows", "tidy"])

    profile = {row["pass"]: row for row in summary.stats.pass_profile()}
    assert "windows" not in profile and "tidy" not in profile
    assert profile["tree"]["runs"] >= 1 and profile["tokens"]["runs"] >= 1
    assert sum(row["tests"] for row in profile.values()) == summary.stats.tests_run
    assert summary.as_dict()["passes"] == summary.stats.pass_profile()
    assert status(TEST_SH, summary.result, tmp_path) == 1


def test_unknown_pass_names_are_refused_before_any_test(tmp_path: Path) -> None:
    source = tmp_path / "crash.c"
    source.write_bytes(PROGRAM.replace(BUG_FREE, BUG))
    with pytest.raises(gitreduce.UserError, match=r"unknown pass 'bogus'; known: tree, .*windows"):
        gitreduce.reduce_file(source, "false", skip_passes=["tree", "bogus"])
    with pytest.raises(gitreduce.UserError, match="unknown pass 'min-commonality/min-tdiff'"):
        gitreduce.reduce_pair(source, source, "false", skip_passes=["min-commonality/min-tdiff"])
    with pytest.raises(gitreduce.UserError, match="unknown pass 'windoze'"):
        gitreduce.reduce_revisions("a..b", "prog.c", "false", skip_passes="windoze")
    assert "min-commonality/windows" in api.known_passes()
    single, pairwise, sets, across = (
        [name for name, _ in passes] for _, passes in api.pass_schedules()
    )
    assert single[0] == "tree"
    assert pairwise == [
        "variant-first",
        "coarse-commonality",
        "min-tdiff",
        "min-ldiff",
        "min-commonality",
    ]
    assert sets[:3] == ["set-tdiff", "set-ldiff", "set-commonality"]
    assert across == ["cross-names", "cross-identifiers"]
    assert {"file-ppr/min-tdiff", "file-one-side/tree"} <= set(api.known_passes())
    with pytest.raises(gitreduce.UserError, match="unknown pass 'file-ppr/bogus'"):
        gitreduce.reduce_set_pair(tmp_path, tmp_path, "false", skip_passes=["file-ppr/bogus"])


def test_the_package_imports_its_exports_lazily() -> None:
    """Generator workers import gitreduce.generator.*: that must not pull in git or sessions."""
    code = (
        "import sys, gitreduce.generator.replay;"
        "heavy = [m for m in sys.modules if m == 'pygit2' or m.startswith('gitreduce.sessions')];"
        "assert not heavy, heavy;"
        "assert set(gitreduce.__all__) <= set(dir(gitreduce));"
        "assert gitreduce.reduce_file.__module__ == 'gitreduce.api'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


ROOT = FIXTURES.parent
# `tokens.py SEED VARIANT` of the benchmarks' reference counter (benchmarks/tools/tokens.py,
# run once with tree-sitter 0.26.1, tree-sitter-c 0.24.2, tree-sitter-cpp 0.23.4,
# tree-sitter-rust 0.24.2): (seed tokens, variant tokens, difference tokens)
REFERENCE_PAIRS = {
    "benchmarks/cases/gcc12-pr109392": (5639, 5548, 527),
    "benchmarks/cases/gxx12-pr109804": (3933, 4025, 190),
    "benchmarks/cases/rustc195-105238": (2364, 2498, 244),
    "benchmarks/cases/toy-gcc-pattern": (1175, 1183, 22),
    "fixtures/csmith-23k": (23276, 23089, 2017),
    "fixtures/pairs/sequence-point": (262, 281, 21),
    "fixtures/ppr-figure1": (121, 143, 26),
    "fixtures/ppr-figure3": (92, 89, 21),
}
# `tokens.py FILE` of the same counter
REFERENCE_FILES = {"fixtures/sequence-point/variant.c": 263, "fixtures/generator/gen_c.py": 1415}


@pytest.mark.parametrize(("folder", "counts"), REFERENCE_PAIRS.items())
def test_count_and_diff_tokens_give_the_reference_counters_figures(
    folder: str, counts: tuple[int, int, int]
) -> None:
    (seed,) = (ROOT / folder).glob("seed.*")
    (variant,) = (ROOT / folder).glob("variant.*")
    assert (
        gitreduce.count_tokens(seed),
        gitreduce.count_tokens(str(variant)),
        gitreduce.diff_tokens(seed, variant),
    ) == counts
    # text given as bytes is parsed with the language named
    language = "rust" if seed.suffix == ".rs" else "cpp" if seed.suffix == ".cpp" else "c"
    assert gitreduce.count_tokens(seed.read_bytes(), language) == counts[0]
    assert gitreduce.diff_tokens(seed.read_bytes(), variant, language=language) == counts[2]


@pytest.mark.parametrize(("path", "count"), REFERENCE_FILES.items())
def test_count_tokens_of_single_files(path: str, count: int) -> None:
    assert gitreduce.count_tokens(ROOT / path) == count


def test_count_tokens_without_a_grammar_counts_words_and_punctuation(tmp_path: Path) -> None:
    assert gitreduce.count_tokens(b"a+b  c\n") == 4
    assert gitreduce.count_tokens(b"int x; // c\n", "c") == 3  # comments are no tokens
    assert gitreduce.diff_tokens(b"a b c", b"a x c") == 2
    assert gitreduce.diff_tokens(b"", b"") == 0
    with pytest.raises(gitreduce.UserError, match="no such file"):
        gitreduce.count_tokens(tmp_path / "missing.c")
    with pytest.raises(gitreduce.UserError, match="is a directory"):
        gitreduce.diff_tokens(tmp_path, b"x")
    with pytest.raises(gitreduce.UserError, match="unknown language 'klingon'"):
        gitreduce.count_tokens(b"x", "klingon")
