"""End to end, git-native (issue 3): `git reduce GOOD..BAD -- PATH` on real repositories.

Every repository here is built in a temp dir with `git fast-import` and the git
CLI; every reduction runs the installed `git-reduce` as a subprocess; every
verdict comes from gcc. The pair is fixtures/pairs/sequence-point: a seed that
compiles cleanly (good) and a variant that adds `count = count++ + step`, which
gcc warns about (bad), plus a few irrelevant changes.

The test command is that fixture's logged-test.sh: test.sh, plus one line per
run in $REDUCE_TEST_LOG ("start SHA256 WHERE" / "done SHA256 EXIT"), so that tests
can count the runs and tell which content each run saw. The log's path comes
from the environment, so the script's bytes, and with them the cache's test
fingerprint, stay the same from run to run.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support import increments_itself

ROOT = Path(__file__).resolve().parents[2]
PAIR = ROOT / "fixtures" / "pairs" / "sequence-point"
SEED = PAIR / "seed.c"
VARIANT = PAIR / "variant.c"
TEST_SH = PAIR / "test.sh"
LOGGED = PAIR / "logged-test.sh"
GIT_REDUCE = Path(sys.executable).parent / "git-reduce"
PATH = "src/prog.c"
BUG_FREE = b"count = count + step;"
BUG = b"count = count++ + step;"
# a smaller pair, for the runs whose reduction is not the point
SMALL_SEED = b"""int printf(const char *format, ...);

static int tally(int limit) {
    int count = 0;
    int step = 2;
    while (step < limit) {
        step = step * 2;
        count = count + step;
    }
    return count;
}

int main(void) {
    printf("%d\\n", tally(100));
    return 0;
}
"""
SMALL_VARIANT = SMALL_SEED.replace(BUG_FREE, BUG)
TINY = b"""int tally(int limit) {
    int count = 0;
    count = count++ + limit;
    return count;
}
"""

pytestmark = pytest.mark.skipif(
    shutil.which("gcc") is None or shutil.which("git") is None, reason="needs gcc and git"
)


# --- helpers -----------------------------------------------------------------------------


def environment(home: Path, **extra: str) -> dict[str, str]:
    """The child's environment: scratch dirs and the plain-file cache live under `home`."""
    env = dict(os.environ)
    for name in (
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_INDEX_FILE",
        "GIT_OBJECT_DIRECTORY",
        "REDUCE_TEST_LOG",
        "REDUCE_TEST_SLEEP",
    ):
        env.pop(name, None)
    env["COLUMNS"] = "1000"
    scratch = home / "tmp"
    scratch.mkdir(parents=True, exist_ok=True)
    env["TMPDIR"] = str(scratch)
    env["XDG_CACHE_HOME"] = str(home / "xdg-cache")
    env.update(extra)
    return env


def run_cli(
    *args: str | Path, cwd: Path, home: Path, log: Path | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    extra = {"REDUCE_TEST_LOG": str(log)} if log is not None else {}
    return subprocess.run(
        [str(GIT_REDUCE), *map(str, args)],
        cwd=cwd,
        env=environment(home, **extra),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def succeeded(process: subprocess.CompletedProcess[str]) -> dict:
    assert process.returncode == 0, process.stderr
    assert "Traceback" not in process.stderr
    return json.loads(process.stdout)


GIT_ENV = {
    "GIT_AUTHOR_NAME": "Tester",
    "GIT_AUTHOR_EMAIL": "tester@example.com",
    "GIT_COMMITTER_NAME": "Tester",
    "GIT_COMMITTER_EMAIL": "tester@example.com",
}


def git_process(*args: str | Path, cwd: Path, check: bool = True) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")} | GIT_ENV
    return subprocess.run(
        ["git", *map(str, args)], cwd=cwd, env=env, capture_output=True, check=check
    )


def git(*args: str | Path, cwd: Path) -> str:
    return git_process(*args, cwd=cwd).stdout.decode().strip()


def git_bytes(*args: str | Path, cwd: Path) -> bytes:
    return git_process(*args, cwd=cwd).stdout


Commit = tuple[str, dict[str, bytes | None]]  # message, {path: content or None to delete}


def build_repo(path: Path, commits: list[Commit]) -> list[str]:
    """A repository at `path` whose `main` is `commits`, checked out; their shas, oldest first."""
    path.mkdir(parents=True)
    git("init", "-q", "-b", "main", cwd=path)
    stream = bytearray()
    for number, (message, changes) in enumerate(commits):
        text = message.encode() + b"\n"
        stream += b"commit refs/heads/main\n"
        stream += b"committer Tester <tester@example.com> %d +0000\n" % (1_700_000_000 + number)
        stream += b"data %d\n%s\n" % (len(text), text)
        for name, content in changes.items():
            if content is None:
                stream += b"D %s\n" % name.encode()
            else:
                stream += b"M 100644 inline %s\ndata %d\n%s\n" % (
                    name.encode(),
                    len(content),
                    content,
                )
    subprocess.run(["git", "fast-import", "--quiet"], cwd=path, input=bytes(stream), check=True)
    git("reset", "-q", "--hard", cwd=path)
    return git("rev-list", "--reverse", "main", cwd=path).split()


def pair_commits() -> list[Commit]:
    return [
        (
            "Add the program",
            {
                "README": b"A project.\n",
                PATH: SEED.read_bytes(),
                "src/other.c": b"int other;\n",
            },
        ),
        ("Tune the program", {PATH: VARIANT.read_bytes()}),
    ]


def make_user_state_dirty(repo: Path) -> None:
    """Unstaged and staged changes and an untracked file: all must survive a run as they are.

    The work tree's src/prog.c does not even compile: the run must read PATH from the
    commits, not from the work tree.
    """
    (repo / "README").write_text("A project, being edited.\n")
    prog = repo / PATH
    prog.write_bytes(prog.read_bytes() + b"int work_in_progress = ;\n")
    (repo / "src" / "other.c").write_text("int other = 1;\n")
    git("add", "src/other.c", cwd=repo)
    (repo / "notes.txt").write_text("not tracked\n")


def user_state(repo: Path) -> dict[str, object]:
    """HEAD, the index's bytes, every work tree file, and what `git status` says."""
    index = (repo / ".git" / "index").read_bytes()  # before any git command can refresh it
    files = {
        str(p.relative_to(repo)): p.read_bytes()
        for p in sorted(repo.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(repo).parts
    }
    return {
        "HEAD": (repo / ".git" / "HEAD").read_text(),
        "head_commit": git("rev-parse", "HEAD", cwd=repo),
        "main": git("rev-parse", "refs/heads/main", cwd=repo),
        "index": index,
        "files": files,
        "status": git(
            "--no-optional-locks",
            "status",
            "--porcelain=v1",
            "--untracked-files=all",
            "--ignored",
            cwd=repo,
        ),
    }


def verdict(content: bytes, where: Path) -> int:
    """test.sh's exit status on `content` (as prog.c in a fresh dir under `where`)."""
    where.mkdir(parents=True, exist_ok=True)
    candidate = where / "prog.c"
    candidate.write_bytes(content)
    return subprocess.run([str(TEST_SH), str(candidate)], capture_output=True).returncode


def blob(repo: Path, rev: str, path: str = PATH) -> bytes:
    return git_bytes("show", f"{rev}:{path}", cwd=repo)


def blob_ids(repo: Path, branch: str) -> tuple[str, str]:
    return (
        git("rev-parse", f"{branch}~1:{PATH}", cwd=repo),
        git("rev-parse", f"{branch}:{PATH}", cwd=repo),
    )


def fsck_clean(repo: Path) -> None:
    process = git_process("fsck", "--full", "--strict", cwd=repo, check=False)
    output = (process.stdout + process.stderr).decode()
    assert process.returncode == 0, output
    for word in ("error", "missing", "broken", "corrupt", "bad ", "invalid"):
        assert word not in output.lower(), output
    for ref in git("for-each-ref", "--format=%(refname)", "refs/reduce", cwd=repo).split():
        git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", cwd=repo)


def log_lines(log: Path) -> list[list[str]]:
    return [line.split() for line in log.read_text().splitlines()] if log.exists() else []


def started(log: Path) -> list[str]:
    """The content hash of every run the log saw begin."""
    return [fields[1] for fields in log_lines(log) if fields[0] == "start"]


def finished(log: Path) -> list[str]:
    return [fields[1] for fields in log_lines(log) if fields[0] == "done"]


def sha256(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()


def count_objects(repo: Path) -> dict[str, int]:
    lines = git("count-objects", "-v", cwd=repo).splitlines()
    return {key: int(value) for key, value in (line.split(": ") for line in lines)}


def changed_lines(repo: Path, rev: str) -> list[str]:
    diff = git("show", "--format=", rev, cwd=repo)
    return [
        line
        for line in diff.splitlines()
        if line[:1] in ("+", "-") and not line.startswith(("+++", "---"))
    ]


def reduce_args(revisions: str = "main~1..main", *more: str | Path) -> list[str | Path]:
    return [revisions, "--", PATH, "--test", LOGGED, "--jobs", "2", "--json", *more]


BISECT_LINE = re.compile(r"^([0-9a-f]{12}) (good|bad|skip|timeout)\s", re.MULTILINE)


def test_fixture_pair_is_good_and_bad(tmp_path):
    assert GIT_REDUCE.exists(), GIT_REDUCE
    assert verdict(SEED.read_bytes(), tmp_path / "seed") == 0
    assert verdict(VARIANT.read_bytes(), tmp_path / "variant") == 1
    assert BUG_FREE in SEED.read_bytes() and BUG in VARIANT.read_bytes()
    assert verdict(SMALL_SEED, tmp_path / "small-seed") == 0
    assert verdict(SMALL_VARIANT, tmp_path / "small-variant") == 1
    assert verdict(TINY, tmp_path / "tiny") == 1


# --- GOOD..BAD -- PATH: the result, the user's state, reruns -----------------------------


@pytest.fixture(scope="module")
def reduced(tmp_path_factory):
    """A repo with seed then variant of src/prog.c and a dirty work tree, reduced once."""
    base = tmp_path_factory.mktemp("range")
    repo = base / "repo"
    shas = build_repo(repo, pair_commits())
    make_user_state_dirty(repo)
    before = user_state(repo)
    objects_before = count_objects(repo)
    log = base / "first.log"
    process = run_cli(*reduce_args(), cwd=repo, home=base / "home", log=log)
    after = user_state(repo)
    return {
        "base": base,
        "repo": repo,
        "good": shas[0],
        "bad": shas[1],
        "process": process,
        "summary": succeeded(process),
        "before": before,
        "after": after,
        "log": log,
        "objects_before": objects_before,
        "objects_after": count_objects(repo),
    }


def test_range_records_the_minimal_change_as_two_orphan_commits(reduced, tmp_path):
    repo, summary = reduced["repo"], reduced["summary"]
    branch = summary["branch"]
    assert branch.startswith("reduce/prog"), branch
    tip = git("rev-parse", "--verify", f"refs/heads/{branch}", cwd=repo)
    assert summary["commits"] == [git("rev-parse", f"{branch}~1", cwd=repo), tip]
    # orphan history: the reduced seed, then the reduced variant on top
    assert git("rev-list", "--count", branch, cwd=repo) == "2"
    assert git("rev-list", "--max-parents=0", branch, cwd=repo) == summary["commits"][0]
    for rev in (branch, f"{branch}~1"):
        assert git("ls-tree", "-r", "--name-only", rev, cwd=repo).split() == [PATH]
    # `git show` of the tip is the minimal failure-inducing change
    changed = changed_lines(repo, branch)
    assert 1 <= len(changed) <= 2, changed
    assert any(line.startswith("+") and "++" in line[1:] for line in changed), changed
    # the reduced seed is good and the reduced variant bad, checked out of the objects
    seed, variant = blob(repo, f"{branch}~1"), blob(repo, branch)
    assert verdict(seed, tmp_path / "seed") == 0
    assert verdict(variant, tmp_path / "variant") == 1
    assert len(variant) * 5 < len(VARIANT.read_bytes())
    # the summary agrees
    assert summary["diff_tokens"][0] > summary["diff_tokens"][1] >= 1
    assert summary["diff_tokens"][1] <= 3
    assert summary["seed_tokens"][1] < summary["seed_tokens"][0]
    assert summary["first_bad_commit"] == reduced["bad"]
    assert f"{reduced['bad']} is the first bad commit" in reduced["process"].stderr
    assert summary["tests_run"] > 0


def test_result_messages_name_the_sources_the_test_and_the_sizes(reduced):
    repo, branch = reduced["repo"], reduced["summary"]["branch"]
    seed_message = git("log", "-1", "--format=%B", f"{branch}~1", cwd=repo)
    variant_message = git("log", "-1", "--format=%B", branch, cwd=repo)
    assert reduced["good"] in seed_message
    assert reduced["bad"] in variant_message
    for text in (seed_message, variant_message):
        assert PATH in text
        assert str(LOGGED) in text
        assert re.search(r"Tokens: \d+ -> \d+", text), text


def test_candidates_are_kept_and_packed(reduced):
    """Every tested candidate is a blob in the object store, packed: few loose objects left."""
    before, after = reduced["objects_before"], reduced["objects_after"]
    assert after["count"] - before["count"] <= 10, after
    assert after["packs"] >= 1
    assert after["in-pack"] >= reduced["summary"]["tests_run"]
    assert git("for-each-ref", "--format=%(refname)", "refs/reduce/cache", cwd=reduced["repo"])


def test_range_leaves_head_index_work_tree_and_branch_alone(reduced):
    before, after = reduced["before"], reduced["after"]
    assert after == before
    assert before["HEAD"] == "ref: refs/heads/main\n"
    repo = reduced["repo"]
    for pattern in ("*.seed.*", "*.variant.*", "*.reduced.*"):
        assert [p for p in repo.rglob(pattern) if ".git" not in p.parts] == []
    assert list((reduced["base"] / "home" / "tmp").glob("gitreduce-*")) == []


def test_candidates_sit_at_their_repository_relative_path(reduced):
    """Each candidate is materialised in a private scratch directory at its
    repository-relative PATH, the test running with that directory as its cwd."""
    where = {fields[2] for fields in log_lines(reduced["log"]) if fields[0] == "start"}
    assert where == {PATH}


def test_rerun_runs_no_test_and_gc_keeps_the_cache(reduced, tmp_path):
    """Run again (from a subdirectory, path relative to it), then after `git gc --prune=now`."""
    repo, summary = reduced["repo"], reduced["summary"]
    branch = summary["branch"]
    first = blob_ids(repo, branch)
    for attempt in ("again", "after-gc"):
        if attempt == "after-gc":
            git("gc", "-q", "--prune=now", cwd=repo)
            assert git("count-objects", "-v", cwd=repo).splitlines()[0] == "count: 0"
        log = tmp_path / f"{attempt}.log"
        again = succeeded(
            run_cli(
                "main~1..main", "--", "prog.c", "--test", LOGGED, "--jobs", "2", "--json",
                "--force", cwd=repo / "src", home=tmp_path / "home", log=log,
            )
        )  # fmt: skip
        assert again["tests_run"] == 0, attempt
        assert started(log) == [], attempt
        assert again["branch"] == branch
        assert blob_ids(repo, branch) == first, attempt
        for key in ("seed_tokens", "variant_tokens", "diff_tokens", "first_bad_commit"):
            assert again[key] == summary[key], (attempt, key)
    fsck_clean(repo)


def test_existing_result_branch_is_not_overwritten_without_force(reduced, tmp_path):
    repo, branch = reduced["repo"], reduced["summary"]["branch"]
    tip = git("rev-parse", branch, cwd=repo)
    process = run_cli(*reduce_args(), cwd=repo, home=tmp_path)
    assert "already exists" in process.stderr
    assert "Traceback" not in process.stderr
    assert git("rev-parse", branch, cwd=repo) == tip


def test_patch_applies_with_git_am_onto_the_reduced_seed(reduced, tmp_path):
    repo = reduced["repo"]
    patch = tmp_path / "minimal.patch"
    summary = succeeded(
        run_cli(
            *reduce_args(
                "main~1..main", "--branch", "reduce/patched", "--patch", patch, "--output", tmp_path
            ),
            cwd=repo,
            home=tmp_path / "home",
        )
    )
    assert summary["tests_run"] == 0
    # --output DIR: the two files as well
    assert (tmp_path / "prog.seed.c").read_bytes() == blob(repo, "reduce/patched~1")
    assert (tmp_path / "prog.variant.c").read_bytes() == blob(repo, "reduce/patched")
    text = patch.read_text()
    assert text.startswith("From ") and "\nSubject: [PATCH] " in text
    clone = tmp_path / "clone"
    git("clone", "-q", repo, clone, cwd=tmp_path)
    git("checkout", "-q", "-b", "apply", "origin/reduce/patched~1", cwd=clone)
    git("am", "-q", patch, cwd=clone)
    assert blob(clone, "HEAD") == blob(repo, "reduce/patched")
    assert git("rev-parse", "HEAD^{tree}", cwd=clone) == git(
        "rev-parse", "reduce/patched^{tree}", cwd=repo
    )
    assert git("log", "-1", "--format=%s", "HEAD", cwd=clone) == git(
        "log", "-1", "--format=%s", "reduce/patched", cwd=repo
    )


def test_clone_that_fetched_the_cache_runs_only_the_confirmations(reduced, tmp_path):
    """Fetched verdicts save every rejected candidate's test; what accepts a candidate, the
    originals and the result's re-verification run in the clone once, and then never again."""
    clone = tmp_path / "clone"
    git("clone", "-q", reduced["repo"], clone, cwd=tmp_path)
    assert git("for-each-ref", "refs/reduce", cwd=clone) == ""  # not fetched by default
    git("fetch", "-q", "origin", "refs/reduce/*:refs/reduce/*", cwd=clone)
    assert git("for-each-ref", "refs/reduce", cwd=clone) != ""
    log = tmp_path / "clone.log"
    summary = succeeded(
        run_cli(
            *reduce_args(f"{reduced['good']}..{reduced['bad']}"),
            cwd=clone,
            home=tmp_path / "home",
            log=log,
        )
    )
    assert summary["contradicted"] == 0 and summary["foreign_verdicts_used"] > 0
    # With --jobs 2, a confirmation may run next to one speculative run the origin never made.
    confirming = summary["confirmations"] + summary["tests_by_pass"]["verify"]
    assert confirming <= summary["tests_run"] <= confirming + summary["confirmations"]
    assert summary["tests_run"] < reduced["summary"]["tests_run"]
    origin_branch = reduced["summary"]["branch"]
    assert blob_ids(clone, summary["branch"]) == blob_ids(reduced["repo"], origin_branch)
    again_log = tmp_path / "again.log"
    again = succeeded(
        run_cli(
            *reduce_args(f"{reduced['good']}..{reduced['bad']}", "--force"),
            cwd=clone,
            home=tmp_path / "home",
            log=again_log,
        )
    )
    assert again["tests_run"] == 0 and again["confirmations"] == 0
    assert not again_log.exists() or started(again_log) == []
    fsck_clean(clone)


# --- bisect ------------------------------------------------------------------------------


def history(bug_at: int, broken_at: int | None = None, steps: int = 64) -> list[Commit]:
    """A small program, then `steps` commits that each add a harmless line to src/prog.c.

    The lines are mostly comments (every 8th a global), so that the reduction
    after the bisect stays quick.
    Each also bumps `revision`, so no version is a reduction of another (the
    reduction after the bisect never tests an old version by chance). Commit
    `bug_at` brings in the bug, kept from then on; commit `broken_at`, if any,
    leaves the file uncompilable (test: 125) until the next.
    """
    commits: list[Commit] = [("Start", {"README": b"A project.\n", PATH: SMALL_SEED})]
    tail = b""
    for step in range(1, steps + 1):
        tail += b"int harmless_%d = %d;\n" % (step, step) if step % 8 == 0 else b"// %d\n" % step
        text = (SMALL_VARIANT if step >= bug_at else SMALL_SEED) + tail
        text += b"int revision = %d;\n" % step
        if step == broken_at:
            text += b"int broken = ;\n"
        commits.append((f"Step {step}", {PATH: text}))
    return commits


def bisect_run(base: Path, bug_at: int, broken_at: int | None, more: tuple[str, ...] = ()) -> dict:
    commits = history(bug_at, broken_at)
    repo = base / "repo"
    shas = build_repo(repo, commits)
    log = base / "run.log"
    process = run_cli(*reduce_args("main~64..main", *more), cwd=repo, home=base / "home", log=log)
    # the runs on versions strictly between GOOD and BAD: the bisect's tests
    between = {sha256(changes[PATH]) for _, changes in commits[1:-1]}
    return {
        "repo": repo,
        "shas": shas,
        "process": process,
        "summary": succeeded(process),
        "bisect_runs": [run for run in started(log) if run in between],
        "bisect_lines": BISECT_LINE.findall(process.stderr),
    }


def test_fixture_history_for_bisect_is_what_it_claims(tmp_path):
    commits = history(bug_at=41, broken_at=32)
    assert len(commits) == 65
    verdicts = [verdict(changes[PATH], tmp_path / str(i)) for i, (_, changes) in enumerate(commits)]
    assert verdicts == [0] * 32 + [125] + [0] * 8 + [1] * 24


def test_bisect_finds_the_first_bad_commit_in_six_tests(tmp_path):
    run = bisect_run(tmp_path, bug_at=41, broken_at=None)
    first_bad = run["shas"][41]
    stderr = run["process"].stderr
    assert f"{first_bad} is the first bad commit" in stderr
    assert "Step 41" in stderr
    assert run["summary"]["first_bad_commit"] == first_bad
    # 64 versions to search: log2(64) = 6 tests, one stderr line per test
    assert len(run["bisect_runs"]) <= 6, run["bisect_runs"]
    assert len(run["bisect_lines"]) == len(run["bisect_runs"]), stderr
    assert (first_bad[:12], "bad") in run["bisect_lines"]
    assert (run["shas"][40][:12], "good") in run["bisect_lines"]
    # then the pair reduced is (parent's version, first bad version)
    repo, branch = run["repo"], run["summary"]["branch"]
    assert run["shas"][40] in git("log", "-1", "--format=%B", f"{branch}~1", cwd=repo)
    assert first_bad in git("log", "-1", "--format=%B", branch, cwd=repo)
    assert verdict(blob(repo, f"{branch}~1"), tmp_path / "seed") == 0
    assert verdict(blob(repo, branch), tmp_path / "variant") == 1
    assert run["summary"]["diff_tokens"][1] <= 3


def test_bisect_steps_around_a_commit_that_does_not_compile(tmp_path):
    run = bisect_run(tmp_path, bug_at=41, broken_at=32)
    first_bad = run["shas"][41]
    assert f"{first_bad} is the first bad commit" in run["process"].stderr
    assert run["summary"]["first_bad_commit"] == first_bad
    assert (run["shas"][32][:12], "skip") in run["bisect_lines"]
    assert len(run["bisect_runs"]) <= 8, run["bisect_runs"]
    assert len(run["bisect_lines"]) == len(run["bisect_runs"])


def test_no_bisect_reduces_good_against_bad_directly(tmp_path):
    run = bisect_run(tmp_path, bug_at=41, broken_at=None, more=("--no-bisect",))
    stderr = run["process"].stderr
    assert "first bad commit" not in stderr
    assert run["bisect_lines"] == [] and run["bisect_runs"] == []
    assert run["summary"]["first_bad_commit"] is None
    repo, branch, shas = run["repo"], run["summary"]["branch"], run["shas"]
    assert shas[0] in git("log", "-1", "--format=%B", f"{branch}~1", cwd=repo)
    assert shas[64] in git("log", "-1", "--format=%B", branch, cwd=repo)
    assert run["summary"]["diff_tokens"][0] > 30  # all 64 commits' changes
    assert run["summary"]["diff_tokens"][1] <= 3
    assert verdict(blob(repo, f"{branch}~1"), tmp_path / "seed") == 0
    assert verdict(blob(repo, branch), tmp_path / "variant") == 1


# --- kill -9, concurrency ----------------------------------------------------------------


def kill_after(repo: Path, home: Path, log: Path, finished_runs: int) -> dict[str, float]:
    """Start a slow reduction in its own session; SIGKILL the session once enough runs ended.

    Returns how long before the kill each finished run was first seen done (polled every
    10 ms), so that a test can tell the verdicts the cache had time to checkpoint."""
    process = subprocess.Popen(
        [str(GIT_REDUCE), *map(str, reduce_args())],
        cwd=repo,
        env=environment(home, REDUCE_TEST_LOG=str(log), REDUCE_TEST_SLEEP="0.1"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    seen_done: dict[str, float] = {}
    try:
        deadline = time.monotonic() + 60
        while len(seen_done) < finished_runs:
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "the tests never ran"
            now = time.monotonic()
            for run in finished(log):
                seen_done.setdefault(run, now)
            time.sleep(0.01)
        os.killpg(process.pid, signal.SIGKILL)
        killed_at = time.monotonic()
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate()
    assert process.returncode == -signal.SIGKILL
    time.sleep(0.5)  # the test runs in flight (own process groups) end on their own
    return {run: killed_at - seen for run, seen in seen_done.items()}


def start_cli(*args: str | Path, cwd: Path, home: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [str(GIT_REDUCE), *map(str, args)],
        cwd=cwd,
        env=environment(home),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(process: subprocess.Popen[str]) -> dict:
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 0, stderr
    assert "Traceback" not in stderr and "warning" not in stderr, stderr
    return json.loads(stdout)


@pytest.fixture(scope="module")
def killed(tmp_path_factory):
    """One run killed with SIGKILL mid-reduction; then two runs at once on that repository,
    the rerun (default branch) and another (branch reduce/two)."""
    base = tmp_path_factory.mktemp("kill")
    repo = base / "repo"
    build_repo(repo, pair_commits())
    first_log = base / "killed.log"
    done_before_kill = kill_after(repo, base / "home", first_log, finished_runs=24)
    fsck_after_kill = git_process("fsck", "--full", cwd=repo, check=False)
    rerun_log = base / "rerun.log"
    other = start_cli(
        *reduce_args("main~1..main", "--branch", "reduce/two"), cwd=repo, home=base / "home-two"
    )
    rerun = run_cli(*reduce_args(), cwd=repo, home=base / "home", log=rerun_log)
    return {
        "repo": repo,
        "fsck_after_kill": fsck_after_kill,
        "done_before_kill": done_before_kill,
        "rerun_runs": started(rerun_log),
        "rerun": succeeded(rerun),
        "other": finish(other),
    }


def test_kill_9_then_rerun_gives_the_uninterrupted_result(killed, reduced):
    """The same commits (fast-import with fixed dates: same shas) as `reduced`, uninterrupted."""
    assert killed["fsck_after_kill"].returncode == 0, killed["fsck_after_kill"].stderr
    rerun, uninterrupted = killed["rerun"], reduced["summary"]
    assert rerun["interrupted"] is False
    assert rerun["branch"] == uninterrupted["branch"]
    assert blob_ids(killed["repo"], rerun["branch"]) == blob_ids(
        reduced["repo"], uninterrupted["branch"]
    )
    for key in ("seed_tokens", "variant_tokens", "diff_tokens", "first_bad_commit"):
        assert rerun[key] == uninterrupted[key]
    fsck_clean(killed["repo"])


def test_kill_9_loses_at_most_the_last_checkpoint_interval(killed):
    """The cache checkpoints verdicts at most every 0.5 s (docs/cache.md): a kill -9 may lose
    the runs in flight and those that ended since the last checkpoint, never older ones.
    A run seen done a full second before the kill (the interval, plus time to write the
    checkpoint on a loaded machine) is not run again."""
    done = killed["done_before_kill"]
    settled = {run for run, age in done.items() if age > 1.0}
    assert len(settled) >= 5, f"only {len(settled)} of {len(done)} runs ended 1 s before the kill"
    repeated = [run for run in killed["rerun_runs"] if run in settled]
    assert repeated == [], f"{len(repeated)} of {len(settled)} checkpointed runs repeated"
    assert len([run for run in killed["rerun_runs"] if run in done]) < len(done)


def test_two_concurrent_runs_on_one_repository(killed, tmp_path):
    repo = killed["repo"]
    assert killed["other"]["interrupted"] is False
    assert killed["other"]["branch"] == "reduce/two"
    fsck_clean(repo)
    assert blob_ids(repo, "reduce/two") == blob_ids(repo, killed["rerun"]["branch"])
    # nobody's verdicts were lost: a third run finds them all
    third = succeeded(
        run_cli(*reduce_args("main~1..main", "--branch", "reduce/three"), cwd=repo, home=tmp_path)
    )
    assert third["tests_run"] == 0
    assert blob_ids(repo, "reduce/three") == blob_ids(repo, "reduce/two")


# --- bad input ---------------------------------------------------------------------------


def check_one_line_error(process: subprocess.CompletedProcess[str], *expected: str) -> None:
    assert process.returncode == 2, (process.returncode, process.stderr)
    assert "Traceback" not in process.stderr
    lines = process.stderr.strip().splitlines()
    assert len(lines) == 1, process.stderr
    assert lines[0].startswith("error:"), lines
    for fragment in expected:
        assert fragment in lines[0], lines


@pytest.fixture(scope="module")
def error_repo(tmp_path_factory):
    """HEAD~1..HEAD: prog.c changes; new.c appears; blob.c turns from binary into text;
    same.c stays the same."""
    repo = tmp_path_factory.mktemp("errors") / "repo"
    build_repo(
        repo,
        [
            (
                "One",
                {
                    PATH: SEED.read_bytes(),
                    "src/blob.c": b"int x;\0\1\2\n",
                    "src/same.c": b"int same;\n",
                },
            ),
            (
                "Two",
                {
                    PATH: VARIANT.read_bytes(),
                    "src/new.c": b"int y;\n",
                    "src/blob.c": b"int x;\n",
                },
            ),
        ],
    )
    return repo


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["nosuchrev..HEAD", "--", PATH], ["unknown revision", "nosuchrev"]),
        (["HEAD~1..nosuchrev", "--", PATH], ["unknown revision", "nosuchrev"]),
        (["HEAD~1..HEAD", "--", "src/new.c"], ["src/new.c", "does not exist"]),
        (["HEAD~1..HEAD", "--", "src/nowhere.c"], ["src/nowhere.c", "does not exist"]),
        (["HEAD~1..HEAD", "--", "src/blob.c"], ["src/blob.c", "binary"]),
        (["HEAD~1..HEAD", "--", "src/same.c"], ["src/same.c", "identical"]),
        (["HEAD~1..HEAD"], ["path"]),
    ],
    ids=["unknown-good", "unknown-bad", "added-path", "no-such-path", "binary", "identical",
         "no-path"],
)  # fmt: skip
def test_bad_revisions_and_paths(error_repo, tmp_path, args, expected):
    log = tmp_path / "run.log"
    process = run_cli(*args, "--test", LOGGED, cwd=error_repo, home=tmp_path, log=log)
    check_one_line_error(process, *expected)
    assert not log.exists(), "no test may run before the inputs are checked"
    assert git("for-each-ref", "refs/heads/reduce", cwd=error_repo) == ""


def test_not_a_repository(tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    assert git_process("rev-parse", "--git-dir", cwd=plain, check=False).returncode != 0
    log = tmp_path / "run.log"
    process = run_cli(
        "HEAD~1..HEAD", "--", "prog.c", "--test", LOGGED, cwd=plain, home=tmp_path, log=log
    )
    check_one_line_error(process, "not a git repository")
    assert not log.exists()


# --- single-file mode records its result the same way ------------------------------------


def test_single_file_in_a_repository_records_one_commit_and_writes_no_file(tmp_path):
    repo = tmp_path / "repo"
    build_repo(repo, [("Add the program", {PATH: TINY})])
    before = user_state(repo)
    args = [PATH, "--test", LOGGED, "--jobs", "2", "--json"]
    summary = succeeded(run_cli(*args, cwd=repo, home=tmp_path / "home"))
    assert user_state(repo) == before  # no prog.reduced.c, nothing else touched
    assert summary["branch"] == "reduce/prog"
    assert summary["output"] is None
    assert git("rev-list", "--count", "reduce/prog", cwd=repo) == "1"
    assert git("rev-list", "--max-parents=0", "reduce/prog", cwd=repo) == summary["commits"][0]
    assert git("ls-tree", "-r", "--name-only", "reduce/prog", cwd=repo).split() == [PATH]
    reduced_text = blob(repo, "reduce/prog")
    assert verdict(reduced_text, tmp_path / "check") == 1
    assert len(reduced_text) == summary["bytes_after"] < summary["bytes_before"]
    message = git("log", "-1", "--format=%B", "reduce/prog", cwd=repo)
    assert PATH in message and str(LOGGED) in message
    # --output writes the file too (and the rerun is free)
    out = tmp_path / "out.c"
    again = succeeded(run_cli(*args, "--output", out, "--force", cwd=repo, home=tmp_path / "home"))
    assert again["tests_run"] == 0
    assert out.read_bytes() == reduced_text


def test_single_file_outside_a_repository_writes_name_reduced_ext(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    (work / "prog.c").write_bytes(TINY)
    summary = succeeded(
        run_cli("prog.c", "--test", LOGGED, "--jobs", "2", "--json", cwd=work, home=tmp_path)
    )
    output = work / "prog.reduced.c"
    assert (work / summary["output"]).resolve() == output.resolve()
    assert summary["branch"] is None
    assert verdict(output.read_bytes(), tmp_path / "check") == 1
    assert (work / "prog.c").read_bytes() == TINY
    assert not (work / ".git").exists()
    assert sorted(p.name for p in work.iterdir()) == ["prog.c", "prog.reduced.c"]
    # verdicts went to the private cache repository under XDG_CACHE_HOME
    cache = tmp_path / "xdg-cache" / "gitreduce" / "cache.git"
    assert git("for-each-ref", "refs/reduce", cwd=cache) != ""


def test_a_test_that_needs_the_file_as_argument_bisects_and_reduces(tmp_path):
    repo = tmp_path / "repo"
    shas = build_repo(repo, history(bug_at=5, broken_at=None)[:9])
    script = tmp_path / "needs-argument.sh"
    script.write_text(
        f'#!/bin/sh\n[ -n "$1" ] || exit 125\nunset GITREDUCE_FILE\nexec {TEST_SH} "$1"\n'
    )
    script.chmod(0o755)
    process = run_cli(
        "main~8..main", "--", PATH, "--test", script, "--json", cwd=repo, home=tmp_path / "home"
    )
    summary = succeeded(process)
    assert summary["first_bad_commit"] == shas[5]
    assert summary["test"] == f"{script} {{}}"
    assert summary["diff_tokens"][1] < summary["diff_tokens"][0]
    assert "only with the file as its argument" in process.stderr
    assert f"Reduced-With: {script} {{}}" in git(
        "log", "-1", "--format=%B", summary["branch"], cwd=repo
    )


def test_a_path_that_starts_with_a_dash_is_a_path_after_the_separator(tmp_path: Path) -> None:
    """`-- -dash.c` names a file, as `git log -- -dash.c` does; options may still follow."""
    repo = tmp_path / "repo"
    build_repo(
        repo,
        [("seed", {"-dash.c": SMALL_SEED}), ("variant", {"-dash.c": SMALL_VARIANT})],
    )
    process = run_cli(
        "main~1..main",
        "--",
        "-dash.c",
        "--test",
        f"{TEST_SH} {{}}",
        "--json",
        cwd=repo,
        home=tmp_path,
    )
    summary = succeeded(process)
    assert summary["diff_tokens"][1] <= 3
    assert increments_itself(git_bytes("show", f"{summary['branch']}:-dash.c", cwd=repo))
