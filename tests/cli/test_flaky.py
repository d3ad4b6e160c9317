"""End to end: flaky and timing-dependent tests, with real shell scripts and processes.

Each script counts its runs in a file, so "random" is deterministic per run
index. Inputs are plain text in a repository (reduced by lines and tokens),
so no compiler is needed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support import git, script

GIT_REDUCE = Path(sys.executable).parent / "git-reduce"
COUNT = 'n=$(cat "$HERE/counter" 2>/dev/null || echo 0); echo $((n + 1)) > "$HERE/counter"\n'
TEXT = "".join(f"line {index}\n" for index in range(12))


def reduce(repo: Path, test: Path, *args: str) -> subprocess.CompletedProcess[str]:
    scratch = repo.parent / "tmp"
    scratch.mkdir(exist_ok=True)
    env = {key: value for key, value in os.environ.items() if not key.startswith("GIT_")}
    env.update(TMPDIR=str(scratch), XDG_CACHE_HOME=str(repo.parent / "xdg"), COLUMNS="1000")
    env["HERE"] = str(repo.parent)
    return subprocess.run(
        [str(GIT_REDUCE), "input.txt", "--test", str(test), "--json", "--force", *args],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def repository(base: Path, text: str = TEXT) -> Path:
    repo = base / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "input.txt").write_text(text)
    git(repo, "add", "input.txt")
    git(repo, "commit", "-q", "-m", "input")
    return repo


def refused_as_flaky(done: subprocess.CompletedProcess[str], reason: str) -> None:
    assert done.returncode == 2, done.stderr
    assert done.stdout == "" and "reduced" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and lines[0].startswith("error: the test is flaky: " + reason), lines
    assert "Traceback" not in done.stderr


def runs(base: Path) -> int:
    return int((base / "counter").read_text())


def test_a_test_that_agrees_twice_then_flips_is_refused_every_time(tmp_path):
    """Before: two agreeing calibration runs let it through; the reduction ended at an
    arbitrary text and the cached original made every later run replay it."""
    repo = repository(tmp_path)
    test = script(tmp_path / "flaky.sh", COUNT + "[ $n -lt 2 ] && exit 1\nexit $((n % 2))\n")
    refused_as_flaky(reduce(repo, test, "--jobs", "1"), "it classified the original input bad")
    assert git(repo, "for-each-ref", "refs/reduce/").stdout == ""  # nothing was cached
    refused_as_flaky(reduce(repo, test, "--jobs", "1"), "it classified the original input")


def test_a_flaky_run_that_passes_calibration_is_caught_and_not_replayed(tmp_path):
    """Five agreeing runs of the original, then a coin: the final re-verification catches
    it, nothing can be backed off to, and the run's verdicts are revoked."""
    repo = repository(tmp_path)
    test = script(tmp_path / "flaky.sh", COUNT + "[ $n -lt 5 ] && exit 1\nexit $((n % 2))\n")
    refused_as_flaky(
        reduce(repo, test, "--jobs", "1"),
        "not even the original input is stable when re-run alone (it was classified ",
    )
    revoked = (repo / ".git" / "gitreduce" / "revoked").read_text().split()
    assert len(revoked) == 1
    refused_as_flaky(reduce(repo, test, "--jobs", "1"), "it classified the original input")


def test_repeat_reduces_with_a_test_that_fails_most_of_the_time(tmp_path):
    repo = repository(tmp_path, TEXT.replace("line 7", "BUG 7"))
    test = script(
        tmp_path / "mostly.sh",
        COUNT + 'grep -q BUG "$GITREDUCE_FILE" || exit 0\n[ $((n % 5)) -eq 4 ] && exit 0\nexit 1\n',
    )
    refused_as_flaky(reduce(repo, test, "--jobs", "1"), "it classified the original input bad")
    done = reduce(repo, test, "--jobs", "1", "--repeat", "5")
    assert done.returncode == 0, done.stderr
    summary: dict[str, Any] = json.loads(done.stdout)
    assert summary["verified"] is True and 3 <= summary["tests_by_pass"]["verify"] <= 5
    assert git(repo, "show", "reduce/input:input.txt").stdout == "BUG\n"
    before = runs(tmp_path)
    again = json.loads(reduce(repo, test, "--jobs", "1", "--repeat", "5").stdout)
    assert again["tests_run"] == 0 and runs(tmp_path) == before  # verified alone, cached


def test_a_result_bad_only_under_load_is_backed_off_from(tmp_path):
    """A timing-dependent test, made deterministic: a candidate with `slow` in it is bad the
    first time it runs (the compile took too long next to another one) and good when run
    again alone; `keep` is the real bug."""
    repo = repository(tmp_path, "keep\n" + TEXT + "slow\n")
    test = script(
        tmp_path / "timing.sh",
        'grep -q keep "$GITREDUCE_FILE" && exit 1\n'
        'grep -q slow "$GITREDUCE_FILE" || exit 0\n'
        'seen="$HERE/seen-$(cksum < "$GITREDUCE_FILE" | cut -d" " -f1)"\n'
        '[ -e "$seen" ] && exit 0\ntouch "$seen"\nexit 1\n',
    )
    done = reduce(repo, test, "--jobs", "2")
    assert done.returncode == 0, done.stderr
    summary: dict[str, Any] = json.loads(done.stdout)
    (warning,) = summary["warnings"][1:]  # after the one about plain text
    assert warning.startswith(
        "the result was not stably bad: re-run alone, it was classified good in 1 run; backed off "
    )
    assert warning.endswith("this run's verdicts are not kept for later runs")
    assert "was not stably bad: re-run alone" in done.stderr
    backed = git(repo, "show", "reduce/input:input.txt").stdout
    assert "keep" in backed and summary["verified"] is True
    # The next run replays none of those verdicts: it finds the stable result itself.
    again = json.loads(reduce(repo, test, "--jobs", "2").stdout)
    assert again["warnings"][1:] == [] and again["verified"] is True
    assert git(repo, "show", "reduce/input:input.txt").stdout == "keep\n"


@pytest.mark.parametrize("value", ["0", "-2", "x", "100", "1000000"])
def test_repeat_must_be_a_positive_count_a_reduction_can_afford(tmp_path, value):
    repo = repository(tmp_path)
    done = reduce(repo, script(tmp_path / "t.sh", "exit 1\n"), "--repeat", value)
    assert done.returncode == 2 and done.stderr.startswith("error: ")
    assert "--repeat" in done.stderr and "Traceback" not in done.stderr


def test_a_pair_bad_only_under_load_is_backed_off_from(tmp_path):
    """The same for a pair: the variant's `slow2` line looks like the failure-inducing
    change while the runs are side by side; `keep` is."""
    (tmp_path / "seed.txt").write_text("alpha\nbeta\ngamma\n")
    (tmp_path / "variant.txt").write_text("alpha\nkeep\nbeta\nslow2\ngamma\n")
    test = script(
        tmp_path / "timing.sh",
        'grep -q keep "$GITREDUCE_FILE" && exit 1\n'
        'grep -q slow2 "$GITREDUCE_FILE" || exit 0\n'
        'seen="$HERE/seen-$(cksum < "$GITREDUCE_FILE" | cut -d" " -f1)"\n'
        '[ -e "$seen" ] && exit 0\ntouch "$seen"\nexit 1\n',
    )
    env = {key: value for key, value in os.environ.items() if not key.startswith("GIT_")}
    env.update(HERE=str(tmp_path), XDG_CACHE_HOME=str(tmp_path / "xdg"), TMPDIR=str(tmp_path))
    done = subprocess.run(
        [
            str(GIT_REDUCE),
            *("--seed", "seed.txt", "--variant", "variant.txt", "--test", str(test)),
            *("--jobs", "2", "--json"),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    summary: dict[str, Any] = json.loads(done.stdout)
    assert summary["warnings"][1].startswith(
        "the result was not stably bad: re-run alone, the variant was classified good in 1 run"
    )
    assert summary["verified"] is True
    assert "keep" in (tmp_path / "variant.variant.txt").read_text()
