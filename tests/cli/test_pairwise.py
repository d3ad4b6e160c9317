"""End to end, pairwise (issue 4): `git reduce --seed S --variant V --test CMD` on plain files.

The installed `git-reduce` runs as a subprocess on real files outside any
repository (its verdicts go to a private cache under XDG_CACHE_HOME, one per
test), with real test scripts and gcc:

- fixtures/pairs/sequence-point: a seed that compiles cleanly and a variant
  that adds an unsequenced `count++` (gcc -Wsequence-point: bad) plus a few
  irrelevant changes;
- fixtures/ppr-figure1 and fixtures/ppr-figure3: the PPR paper's LLVM-21467
  pattern (Figure 1) and GCC-66691 example (Figure 3), rebuilt as small pairs
  whose test encodes the bug's rule, so the minimal change is known (see
  their READMEs).
"""

from __future__ import annotations

import difflib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import tree_sitter
import tree_sitter_c
from support import increments_itself

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"
PAIR = FIXTURES / "pairs" / "sequence-point"
FIGURE1 = FIXTURES / "ppr-figure1"
FIGURE3 = FIXTURES / "ppr-figure3"
GIT_REDUCE = Path(sys.executable).parent / "git-reduce"
TOKENS_PY = ROOT / "benchmarks" / "tools" / "tokens.py"  # the benchmarks' reference counter

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")


# --- helpers -----------------------------------------------------------------------------


def environment(tmpdir: Path) -> dict[str, str]:
    """Scratch dirs and the private verdict cache under `tmpdir`: runs never share a cache."""
    env = dict(os.environ)
    env["COLUMNS"] = "1000"
    env["TMPDIR"] = str(tmpdir)
    env["XDG_CACHE_HOME"] = str(tmpdir / "xdg-cache")
    return env


def run_cli(*args: str | Path, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    scratch = cwd / "tmp"
    scratch.mkdir(exist_ok=True)
    return subprocess.run(
        [str(GIT_REDUCE), *map(str, args)],
        cwd=cwd,
        env=environment(scratch),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def succeeded(process: subprocess.CompletedProcess[str]) -> dict:
    assert process.returncode == 0, process.stderr
    assert "Traceback" not in process.stderr
    return json.loads(process.stdout)


def check_one_line_error(process: subprocess.CompletedProcess[str], *expected: str) -> None:
    assert process.returncode == 2, (process.returncode, process.stderr)
    assert "Traceback" not in process.stderr
    lines = process.stderr.strip().splitlines()
    assert len(lines) == 1, process.stderr
    assert lines[0].startswith("error:"), lines
    for fragment in expected:
        assert fragment in lines[0], lines


def workdir(base: Path, fixture: Path) -> Path:
    """`base` holding the fixture's seed.c and variant.c (the test script stays where it is)."""
    base.mkdir(parents=True, exist_ok=True)
    for name in ("seed.c", "variant.c"):
        shutil.copy(fixture / name, base / name)
    return base


def reduce_pair(
    fixture: Path, cwd: Path, *more: str | Path, jobs: int = 2
) -> tuple[dict, subprocess.CompletedProcess]:
    process = run_cli(
        "--seed", "seed.c", "--variant", "variant.c", "--test", fixture / "test.sh",
        "--jobs", jobs, "--json", *more, cwd=workdir(cwd, fixture),
    )  # fmt: skip
    return succeeded(process), process


def status(test: Path, path: Path) -> int:
    return subprocess.run([str(test), str(path)], capture_output=True).returncode


def tokens_py(seed: Path, variant: Path) -> tuple[int, int, int]:
    """The benchmark's own count: seed tokens, variant tokens, token diff."""
    out = subprocess.run(
        [sys.executable, str(TOKENS_PY), str(seed), str(variant)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return int(out[0]), int(out[1]), int(out[2])


_C = tree_sitter.Parser(tree_sitter.Language(tree_sitter_c.language()))


def c_tokens(text: bytes) -> list[bytes]:
    """Leaves of the tree-sitter C tree that are not comments (as tokens.py counts them)."""
    tree = _C.parse(text)
    leaves, pending = [], [tree.root_node]
    while pending:
        node = pending.pop()
        if node.child_count == 0:
            if "comment" not in node.type and node.end_byte > node.start_byte:
                leaves.append(text[node.start_byte : node.end_byte])
        else:
            pending.extend(reversed(node.children))
    return leaves


def flat(text: bytes) -> str:
    """The text without blanks: what the figure fixtures' test scripts match on."""
    return re.sub(rb"\s+", b"", text).decode()


def changed_lines(seed: bytes, variant: bytes) -> list[str]:
    return [
        line
        for line in difflib.unified_diff(
            seed.decode().splitlines(), variant.decode().splitlines(), lineterm="", n=0
        )
        if line[:1] in ("+", "-") and not line.startswith(("+++", "---"))
    ]


def test_fixtures_are_good_seeds_and_bad_variants():
    assert GIT_REDUCE.exists(), GIT_REDUCE
    assert TOKENS_PY.exists(), TOKENS_PY
    for fixture in (PAIR, FIGURE1, FIGURE3):
        assert status(fixture / "test.sh", fixture / "seed.c") == 0, fixture
        assert status(fixture / "test.sh", fixture / "variant.c") == 1, fixture
        for name in ("seed.c", "variant.c"):
            assert len((fixture / name).read_text().splitlines()) < 150


# --- the sequence-point pair: PPR, --jobs, DD ---------------------------------------------


@pytest.fixture(scope="module")
def ppr(tmp_path_factory):
    """The pair reduced by PPR with --jobs 2 and with --jobs 1, in separate dirs and caches."""
    runs = {}
    for jobs in (2, 1):
        cwd = tmp_path_factory.mktemp(f"ppr-jobs{jobs}")
        summary, process = reduce_pair(PAIR, cwd, jobs=jobs)
        runs[jobs] = {"cwd": cwd, "summary": summary, "process": process}
    return runs


def test_ppr_writes_a_good_seed_and_a_bad_variant_one_small_change_apart(ppr):
    run = ppr[2]
    cwd, summary = run["cwd"], run["summary"]
    seed_out, variant_out = cwd / "variant.seed.c", cwd / "variant.variant.c"
    assert Path(summary["seed_output"]) == seed_out
    assert Path(summary["variant_output"]) == variant_out
    assert status(PAIR / "test.sh", seed_out) == 0
    assert status(PAIR / "test.sh", variant_out) == 1
    # the inputs are untouched, and nothing but the two results was written
    assert (cwd / "seed.c").read_bytes() == (PAIR / "seed.c").read_bytes()
    assert (cwd / "variant.c").read_bytes() == (PAIR / "variant.c").read_bytes()
    assert sorted(p.name for p in cwd.iterdir() if p.name != "tmp") == [
        "seed.c",
        "variant.c",
        "variant.seed.c",
        "variant.variant.c",
    ]
    assert list((cwd / "tmp").glob("gitreduce-*")) == []
    # the minimal change is the unsequenced modification
    assert increments_itself(variant_out.read_bytes())
    assert not increments_itself(seed_out.read_bytes())
    # outside a repository: no result branch; the cache is the private one
    assert summary["branch"] is None
    assert (cwd / "tmp" / "xdg-cache" / "gitreduce" / "cache.git").is_dir()


def test_ppr_summary_sizes_before_and_after(ppr):
    summary = ppr[2]["summary"]
    assert summary["algorithm"] == "ppr"
    assert summary["language"] == "c"
    for key in ("seed_tokens", "variant_tokens", "diff_tokens"):
        pair = summary[key]
        assert isinstance(pair, list) and len(pair) == 2, (key, pair)
        assert pair[0] > pair[1] > 0, (key, pair)
    assert summary["diff_tokens"][1] <= 10
    assert summary["variant_tokens"][1] * 5 < summary["variant_tokens"][0]
    assert summary["tests_run"] > 0
    assert summary["interrupted"] is False
    assert "difference" in ppr[2]["process"].stderr


def test_ppr_sizes_agree_with_the_benchmark_token_counter(ppr):
    cwd, summary = ppr[2]["cwd"], ppr[2]["summary"]
    seed, variant, diff = tokens_py(cwd / "variant.seed.c", cwd / "variant.variant.c")
    assert summary["diff_tokens"][1] == diff
    assert summary["seed_tokens"][1] == seed
    assert summary["variant_tokens"][1] == variant
    before = tokens_py(cwd / "seed.c", cwd / "variant.c")
    assert [summary["seed_tokens"][0], summary["variant_tokens"][0], summary["diff_tokens"][0]] == [
        *before
    ]


def test_jobs_do_not_change_the_pair(ppr):
    for name in ("variant.seed.c", "variant.variant.c"):
        assert (ppr[1]["cwd"] / name).read_bytes() == (ppr[2]["cwd"] / name).read_bytes(), name
    assert ppr[1]["summary"]["tests_run"] > 0  # each run did its own tests: no shared cache


def test_dd_baseline_narrows_the_difference_but_keeps_the_programs(ppr, tmp_path):
    dd, _ = reduce_pair(PAIR, tmp_path, "--algorithm", "dd")
    best = ppr[2]["summary"]
    assert dd["algorithm"] == "dd"
    assert status(PAIR / "test.sh", tmp_path / "variant.seed.c") == 0
    assert status(PAIR / "test.sh", tmp_path / "variant.variant.c") == 1
    assert dd["diff_tokens"][1] >= best["diff_tokens"][1]
    assert dd["diff_tokens"][1] < dd["diff_tokens"][0]
    assert dd["seed_tokens"][1] >= 5 * best["seed_tokens"][1]
    assert dd["variant_tokens"][1] >= 5 * best["variant_tokens"][1]
    seed, variant, diff = tokens_py(tmp_path / "variant.seed.c", tmp_path / "variant.variant.c")
    assert (dd["seed_tokens"][1], dd["variant_tokens"][1], dd["diff_tokens"][1]) == (
        seed,
        variant,
        diff,
    )


def test_dd_empty_grows_the_seed_from_nothing_and_keeps_the_variant_large(ppr, tmp_path):
    """The PPR paper's baseline: dd over the variant's tokens, the seed ignored."""
    dd, _ = reduce_pair(PAIR, tmp_path, "--algorithm", "dd-empty")
    best = ppr[2]["summary"]
    assert dd["algorithm"] == "dd-empty"
    seed_out, variant_out = tmp_path / "variant.seed.c", tmp_path / "variant.variant.c"
    assert status(PAIR / "test.sh", seed_out) == 0
    assert status(PAIR / "test.sh", variant_out) == 1
    assert [dd["seed_tokens"][1], dd["variant_tokens"][1], dd["diff_tokens"][1]] == [
        *tokens_py(seed_out, variant_out)
    ]
    assert dd["variant_tokens"][1] > best["variant_tokens"][1]


def test_dd_empty_refuses_a_test_that_does_not_pass_the_empty_file(tmp_path):
    picky = tmp_path / "picky.sh"
    picky.write_text(
        f'#!/bin/sh\ngrep -q \'[^[:space:]]\' "$1" || exit 125\nexec {PAIR / "test.sh"} "$1"\n'
    )
    picky.chmod(0o755)
    process = run_cli(
        "--seed", "seed.c", "--variant", "variant.c", "--algorithm", "dd-empty",
        "--test", f"{picky} {{}}", "--quiet", cwd=workdir(tmp_path / "run", PAIR),
    )  # fmt: skip
    check_one_line_error(process, "empty")


# --- known answers from the PPR paper -----------------------------------------------------


def test_a_name_the_difference_mentions_is_renamed_in_both_programs(tmp_path):
    """The difference is the bug's statement, so it spells the global's name; `--rename`
    (and identifier replacement) must respell it there too, or the variant is left
    with a name the seed's edits deleted and gcc refuses it."""
    cwd = tmp_path / "work"
    cwd.mkdir()
    (cwd / "seed.c").write_bytes(b"int wide_counter;\nint step(void) { return wide_counter; }\n")
    (cwd / "variant.c").write_bytes(
        b"int wide_counter;\n"
        b"int step(void) { wide_counter = wide_counter--; return wide_counter; }\n"
    )
    test = FIXTURES / "sequence-point" / "test.sh"
    process = run_cli(
        "--seed", "seed.c", "--variant", "variant.c", "--test", test, "--rename", "--json",
        "--output", "out", cwd=cwd,
    )  # fmt: skip
    summary = succeeded(process)
    seed, variant = (
        Path(cwd, summary[key]).read_bytes() for key in ("seed_output", "variant_output")
    )
    assert b"wide_counter" not in seed + variant
    assert status(test, cwd / summary["seed_output"]) == 0
    assert status(test, cwd / summary["variant_output"]) == 1


def test_a_global_only_the_difference_uses_becomes_the_parameter_in_both_programs(tmp_path):
    """The seed never reads the global, so the declaration cannot go from the seed, and
    only the seed's edits reach the variant: it moves into the seed's one function, and
    the variant's statement then reads the parameter."""
    cwd = tmp_path / "work"
    cwd.mkdir()
    (cwd / "seed.c").write_bytes(b"int g;\nint f(void) { return 0; }\n")
    (cwd / "variant.c").write_bytes(b"int g;\nint f(void) { g = g--; return 0; }\n")
    test = FIXTURES / "sequence-point" / "test.sh"
    process = run_cli(
        "--seed", "seed.c", "--variant", "variant.c", "--test", test, "--json",
        "--output", "out", cwd=cwd,
    )  # fmt: skip
    summary = succeeded(process)
    seed, variant = (
        Path(cwd, summary[key]).read_bytes() for key in ("seed_output", "variant_output")
    )
    assert seed.startswith(b"int f(int g)") and variant.startswith(b"int f(int g)")
    assert b"g = g--;" in variant
    assert summary["diff_tokens"] == [5, 5]
    assert status(test, cwd / summary["seed_output"]) == 0
    assert status(test, cwd / summary["variant_output"]) == 1


def test_figure1_llvm_21467_the_change_is_exactly_the_highlighted_one(tmp_path):
    """The paper highlights 11 inserted tokens: `b = g;` in the then-branch, the seed's
    statement wrapped in `else { ... }`, `b = g;` after the if (Figure 1c). Once the
    stock-phrase pass has made the seed's statement the empty statement `;`, the same
    change is 10 tokens: `b = g; else {` + `} b = g;` around nothing."""
    summary, _ = reduce_pair(FIGURE1, tmp_path)
    seed_out, variant_out = tmp_path / "variant.seed.c", tmp_path / "variant.variant.c"
    seed, variant = seed_out.read_bytes(), variant_out.read_bytes()
    assert status(FIGURE1 / "test.sh", seed_out) == 0
    assert status(FIGURE1 / "test.sh", variant_out) == 1
    diff = tokens_py(seed_out, variant_out)[2]
    assert summary["diff_tokens"] == [
        tokens_py(tmp_path / "seed.c", tmp_path / "variant.c")[2],
        diff,
    ]
    assert diff in (10, 11)
    # nothing deleted: the seed's tokens are the variant's minus the inserted ones
    seed_tokens, variant_tokens = c_tokens(seed), c_tokens(variant)
    assert len(variant_tokens) - len(seed_tokens) == diff
    # and they are the highlighted change: undo it and the seed is back
    pattern = r"\)b=g;else\{(.*?)\}b=g;"
    assert len(re.findall(pattern, flat(variant))) == 1, variant.decode()
    undone = re.sub(pattern, lambda match: ")" + (match[1] or ";"), flat(variant))
    assert undone == flat(seed), (seed.decode(), variant.decode())
    # the irrelevant changes are gone
    for noise in ("d&=a", "a+0", "x*5", "spare"):
        assert noise not in flat(variant), noise
    assert summary["variant_tokens"][1] < summary["variant_tokens"][0] / 2


def test_figure3_gcc_66691_the_change_is_deleting_break(tmp_path):
    """The paper: 'the deletion of break statement is proved to be the only critical change'
    (Figure 3d), and MinCommonality removes `if (b)` and the unused b, c, d."""
    summary, _ = reduce_pair(FIGURE3, tmp_path)
    seed_out, variant_out = tmp_path / "variant.seed.c", tmp_path / "variant.variant.c"
    seed, variant = seed_out.read_bytes(), variant_out.read_bytes()
    assert status(FIGURE3 / "test.sh", seed_out) == 0
    assert status(FIGURE3 / "test.sh", variant_out) == 1
    assert summary["diff_tokens"][1] == 1
    assert tokens_py(seed_out, variant_out)[2] == 1
    seed_tokens, variant_tokens = c_tokens(seed), c_tokens(variant)
    assert seed_tokens.count(b"break") == 1
    position = seed_tokens.index(b"break")
    assert seed_tokens[:position] + seed_tokens[position + 1 :] == variant_tokens
    for noise in ("e--", "g[0][9]", "while", "{{", "0x2474AFADL", "if(b)"):
        assert noise not in flat(seed) and noise not in flat(variant), noise


# --- what a reader of the result sees -----------------------------------------------------


def test_comments_do_not_leak_into_the_change(tmp_path):
    seed = (
        b"int tally(int limit) {\n"
        b"    int count = 0;\n"
        b"    for (int step = 1; step < limit; step++) {\n"
        b"        count = count + step;\n"
        b"    }\n"
        b"    return count;\n"
        b"}\n"
        b"/* a comment */\n"
    )
    variant = seed.replace(b"count = count + step;", b"count = count++ + step;")
    variant += b"int extra = 1;\n"
    (tmp_path / "seed.c").write_bytes(seed)
    (tmp_path / "variant.c").write_bytes(variant)
    process = run_cli(
        "--seed", "seed.c", "--variant", "variant.c", "--test", PAIR / "test.sh",
        "--jobs", 2, "--json", cwd=tmp_path,
    )  # fmt: skip
    summary = succeeded(process)
    assert summary["diff_tokens"][1] == 1
    reduced_seed = (tmp_path / "variant.seed.c").read_bytes()
    reduced_variant = (tmp_path / "variant.variant.c").read_bytes()
    changed = changed_lines(reduced_seed, reduced_variant)
    assert len(changed) == 2, changed  # -count = count; +count = count++;


def test_pair_inside_a_repository_is_recorded_as_a_branch_not_as_files(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
    variant = b"int tally(int limit) {\n    int count = 0;\n    count = count++ + limit;\n}\n"
    (repo / "seed.c").write_bytes(variant.replace(b"count++", b"count"))
    (repo / "bug.c").write_bytes(variant)
    process = run_cli(
        "--seed", "seed.c", "--variant", "bug.c", "--test", PAIR / "test.sh", "--json", cwd=repo
    )
    summary = succeeded(process)
    assert summary["branch"] == "reduce/bug"
    assert summary["seed_output"] is None and summary["variant_output"] is None
    assert sorted(p.name for p in repo.iterdir()) == [".git", "bug.c", "seed.c", "tmp"]

    def git(*args: str) -> bytes:
        return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True).stdout

    assert git("rev-list", "--count", "reduce/bug").strip() == b"2"
    assert git("rev-parse", "reduce/bug~1").strip().decode() == summary["commits"][0]
    assert (
        git("rev-list", "--max-parents=0", "reduce/bug").strip().decode() == summary["commits"][0]
    )
    seed_out, variant_out = tmp_path / "seed-out.c", tmp_path / "variant-out.c"
    seed_out.write_bytes(git("show", "reduce/bug~1:bug.c"))
    variant_out.write_bytes(git("show", "reduce/bug:bug.c"))
    assert status(PAIR / "test.sh", seed_out) == 0
    assert status(PAIR / "test.sh", variant_out) == 1


# --- bad input ---------------------------------------------------------------------------


def test_seed_that_is_not_good(tmp_path):
    shutil.copy(PAIR / "variant.c", tmp_path / "seed.c")  # shows the bug too
    (tmp_path / "variant.c").write_bytes((PAIR / "variant.c").read_bytes() + b"int more;\n")
    process = run_cli(
        "--seed", "seed.c", "--variant", "variant.c", "--test", PAIR / "test.sh", cwd=tmp_path
    )
    check_one_line_error(process, "seed")
    assert not (tmp_path / "variant.seed.c").exists()


def test_seed_that_does_not_compile(tmp_path):
    (tmp_path / "seed.c").write_bytes((PAIR / "seed.c").read_bytes() + b"int broken = ;\n")
    shutil.copy(PAIR / "variant.c", tmp_path / "variant.c")
    process = run_cli(
        "--seed", "seed.c", "--variant", "variant.c", "--test", PAIR / "test.sh", cwd=tmp_path
    )
    check_one_line_error(process, "seed")


def test_variant_that_is_not_bad(tmp_path):
    shutil.copy(PAIR / "seed.c", tmp_path / "seed.c")
    (tmp_path / "variant.c").write_bytes((PAIR / "seed.c").read_bytes() + b"int more;\n")
    process = run_cli(
        "--seed", "seed.c", "--variant", "variant.c", "--test", PAIR / "test.sh", cwd=tmp_path
    )
    check_one_line_error(process, "variant")
    assert "seed:" not in process.stderr


def test_identical_seed_and_variant(tmp_path):
    shutil.copy(PAIR / "variant.c", tmp_path / "seed.c")
    shutil.copy(PAIR / "variant.c", tmp_path / "variant.c")
    process = run_cli(
        "--seed", "seed.c", "--variant", "variant.c", "--test", PAIR / "test.sh", cwd=tmp_path
    )
    check_one_line_error(process, "identical")


@pytest.mark.parametrize("given", ["--seed", "--variant"])
def test_only_one_of_seed_and_variant(tmp_path, given):
    shutil.copy(PAIR / "variant.c", tmp_path / "variant.c")
    process = run_cli(given, "variant.c", "--test", PAIR / "test.sh", cwd=tmp_path)
    check_one_line_error(process, "--seed", "--variant")


def test_missing_seed_file(tmp_path):
    shutil.copy(PAIR / "variant.c", tmp_path / "variant.c")
    process = run_cli(
        "--seed", "nowhere.c", "--variant", "variant.c", "--test", PAIR / "test.sh", cwd=tmp_path
    )
    check_one_line_error(process, "nowhere.c")


def test_output_directory_is_created_with_its_parents(tmp_path):
    summary, _ = reduce_pair(FIGURE3, tmp_path, "--output", "results/figure3")
    written = tmp_path / "results" / "figure3"
    assert summary["seed_output"] == "results/figure3/variant.seed.c"
    assert status(FIGURE3 / "test.sh", written / "variant.seed.c") == 0
    assert status(FIGURE3 / "test.sh", written / "variant.variant.c") == 1


@pytest.mark.parametrize("output", ["taken", "taken/below"])
def test_output_that_is_a_file_is_refused_before_any_test(tmp_path, output):
    cwd = workdir(tmp_path, FIGURE3)
    (cwd / "taken").write_text("a file\n")
    process = run_cli(
        "--seed", "seed.c", "--variant", "variant.c", "--test", FIGURE3 / "test.sh",
        "--output", output, cwd=cwd,
    )  # fmt: skip
    check_one_line_error(process, "taken exists and is not a directory")
    assert not (cwd / "tmp" / "xdg-cache").exists()  # no test ran, no verdict was cached


def test_a_pair_ends_with_newlines_when_its_originals_did(tmp_path):
    """A Rust doc comment owns the newline that ends its line: reducing it away used to
    leave both programs without a final newline."""
    (tmp_path / "seed.rs").write_bytes(b"fn main() { let y = 2; let x = 1; } /// doc\n")
    (tmp_path / "variant.rs").write_bytes(b"fn main() { let y = 2; let x = 1/0; } /// doc\n")
    divides = tmp_path / "divides.sh"
    divides.write_text("#!/bin/sh\ngrep -q '1/0' \"$1\" && exit 1; exit 0\n")
    divides.chmod(0o755)
    process = run_cli(
        "--seed", "seed.rs", "--variant", "variant.rs", "--test", f"{divides} {{}}",
        "--output", "out", "--json", cwd=tmp_path,
    )  # fmt: skip
    summary = succeeded(process)
    seed, variant = (tmp_path / "out" / f"variant.{side}.rs" for side in ("seed", "variant"))
    assert b"1/0" in variant.read_bytes() and b"1/0" not in seed.read_bytes()
    assert seed.read_bytes().endswith(b"\n") and variant.read_bytes().endswith(b"\n")
    assert summary["diff_tokens"][1] == 2  # `/` `0`: the newlines changed no token


def test_a_test_that_hangs_on_the_variant_is_announced_before_its_timeout(tmp_path):
    """The seed's test is quick, the variant's hangs: the line says which one it waits for."""
    cwd = workdir(tmp_path, PAIR)
    hang = cwd / "hang.sh"
    hang.write_text(
        f'#!/bin/sh\ngrep -q \'count++\' "$1" && sleep 60\nexec {PAIR / "test.sh"} "$1"\n'
    )
    hang.chmod(0o755)
    process = run_cli(
        "--seed", "seed.c", "--variant", "variant.c", "--test", f"{hang} {{}}",
        "--timeout", "5", cwd=cwd, timeout=60,
    )  # fmt: skip
    assert process.returncode == 2, process.stderr
    assert process.stderr.splitlines() == [
        "waiting for the test on the original variant (timeout 5 s)",
        "error: variant: the test timed out on the original after 5 s",
    ]
