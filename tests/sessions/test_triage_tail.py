"""The jobs a triage gives each reduction: more for the last ones, to keep the workers busy."""

from __future__ import annotations

from hook_support import run_git
from triage_support import findings_repo, triage

from gitreduce.sessions.triage import _tail_jobs
from gitreduce.sessions.triage_state import TriageState


def jobs_by_position(findings: int, workers: int, jobs: int) -> list[int]:
    state = TriageState([], workers=workers, jobs=jobs)
    return [_tail_jobs(state, findings - position) for position in range(findings)]


def test_every_reduction_but_the_last_workers_keeps_its_jobs():
    given = jobs_by_position(24, workers=8, jobs=1)
    assert given[:17] == [1] * 17
    assert given[17:] == [2, 2, 2, 2, 3, 4, 8]


def test_the_last_one_alone_may_use_every_worker():
    assert jobs_by_position(3, workers=2, jobs=2) == [2, 2, 4]
    assert jobs_by_position(1, workers=4, jobs=1) == [4]


def test_one_worker_changes_nothing():
    assert jobs_by_position(5, workers=1, jobs=3) == [3] * 5


def test_the_workers_of_an_ended_reduction_go_to_the_one_still_running(tmp_path):
    """Two findings on two workers, one job each at first; the second, started last, gets
    both workers' jobs and ends first; the first is then widened to two jobs as it runs."""
    repo, env, _ = findings_repo(tmp_path, ["div", "shift"])
    runs = tmp_path / "runs"
    runs.mkdir()
    seen = tmp_path / "seen"
    counting = tmp_path / "counting.sh"
    counting.write_text(
        "#!/bin/sh\n"
        'name=$(basename "$1")\n'
        # a marker per run, named by its pid: a run killed as abandoned speculation leaves
        # its marker behind, so only markers of processes still alive (not zombies) count
        f'mine="{runs}/$name.$$"\n'
        'touch "$mine"\n'
        "live=0\n"
        f'for marker in "{runs}/$name".*; do\n'
        '  state=$(cut -d" " -f3 "/proc/${marker##*.}/stat" 2>/dev/null)\n'
        '  case "$state" in ""|Z|X) ;; *) live=$((live + 1));; esac\n'
        "done\n"
        f'echo "$name $live" >> "{seen}"\n'
        # f1.c's tests take far longer, so it still runs when f2.c (two jobs) is done
        'case "$name" in f1.c) sleep 0.4;; *) sleep 0.05;; esac\n'
        f'"{tmp_path / "gcc-test.sh"}" "$1"\n'
        "code=$?\n"
        'rm -f "$mine"\n'
        'exit "$code"\n'
    )
    counting.chmod(0o755)
    run_git(repo, env, "config", "gitreduce.test.gcc.command", f"{counting} {{}}")
    process = triage(repo, env, "--workers", "2", "--jobs", "1", "--commit-order")
    assert process.returncode == 0, process.stderr
    most: dict[str, int] = {}
    for line in seen.read_text().splitlines():
        name, count = line.split()
        most[name] = max(most.get(name, 0), int(count))
    assert most["f1.c"] == 2  # started with one job, widened once f2.c was done
    assert most["f2.c"] == 2  # the last to start: both workers' jobs from the start
