"""Interrupts end to end: the installed `git-reduce`, real signals at random moments, kill -9.

Every run reduces a small text under a shell test that sleeps a little in a
background child (so each test has a process group worth killing) and logs
the pids of its shell and of that child. The stress test delivers SIGINT or
SIGTERM to git-reduce's process group (as a terminal's Ctrl-C does) at a
random moment once the program has its signal handlers in place, and checks
each run's ending: exit 130 (or 0 when it finished first), no traceback and
no "internal error", the best result so far recorded, no scratch directory
and no test process left behind.

Run as a script for the figures on more deliveries:
`python tests/sessions/test_interrupts.py 200`.
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

GIT_REDUCE = Path(sys.executable).parent / "git-reduce"
SEED = 12
DELIVERIES = 60
AT_ONCE = 4  # runs in flight together, to keep the suite's time reasonable


def input_text() -> str:
    lines = [f"line {i}: alpha beta gamma delta {i * 7}" for i in range(60)]
    lines[23] = "line 23: the bug is here"
    lines[41] = "line 41: and the trigger is here"
    return "\n".join(lines) + "\n"


def reproduces(text: str) -> bool:
    return "bug" in text and "trigger" in text


def test_script(path: Path, pids: Path, sleep: str = "0.02") -> Path:
    """Bad (exit 1) while the text has both words; each run logs its shell's and child's pid."""
    path.write_text(
        "#!/bin/sh\n"
        f'echo $$ >> "{pids}"\n'
        f"sleep {sleep} &\n"
        f'echo $! >> "{pids}"\n'
        "wait $!\n"
        'grep -q bug "$GITREDUCE_FILE" && grep -q trigger "$GITREDUCE_FILE" && exit 1\n'
        "exit 0\n"
    )
    path.chmod(0o755)
    return path


def environment(scratch: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key != "COLUMNS"}
    env["TMPDIR"] = str(scratch)
    env["XDG_CACHE_HOME"] = str(scratch.parent / "xdg-cache")  # no verdicts shared between runs
    env["GIT_CONFIG_NOSYSTEM"] = "1"
    return env


def git(cwd: Path, *args: str) -> str:
    identity = ["-c", "user.name=t", "-c", "user.email=t@example.com"]
    return subprocess.run(
        ["git", *identity, *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout


def default_sigint() -> None:
    # A shell without job control starts background jobs with SIGINT ignored, and
    # Python keeps an inherited SIG_IGN; the user's interactive git-reduce would not.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def catches(pid: int, signum: int) -> bool:
    """Whether the process has a handler for `signum` (False once it is gone)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    mask = next(line for line in status.splitlines() if line.startswith("SigCgt:"))
    return bool(int(mask.split()[1], 16) >> (signum - 1) & 1)


def group_members(groups: set[int]) -> list[int]:
    """Live (not zombie) processes whose process group is one of `groups`."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[2]) in groups:
            members.append(int(entry.name))
    return members


def logged_pids(log: Path) -> set[int]:
    return {int(pid) for pid in log.read_text().split()} if log.exists() else set()


def leftovers(log: Path, within: float = 3.0) -> list[int]:
    """Test processes still alive `within` seconds after git-reduce ended.

    Each test's shell leads its own process group, so the groups of the logged
    shells hold every process a test started, logged or not.
    """
    groups = logged_pids(log)
    deadline = time.monotonic() + within
    while (alive := group_members(groups)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return alive


def kill_groups(log: Path) -> None:
    for member in group_members(logged_pids(log)):
        with contextlib.suppress(ProcessLookupError):
            os.kill(member, signal.SIGKILL)


def scratch_dirs(scratch: Path) -> list[str]:
    return sorted(path.name for path in scratch.glob("gitreduce-*"))


@dataclass
class Run:
    """One git-reduce on the case in its own directory, in a repository or on a plain file."""

    base: Path
    in_repo: bool
    jobs: int
    sleep: str = "0.02"
    process: subprocess.Popen[str] = field(init=False)

    def __post_init__(self) -> None:
        self.cwd = self.base / "work"
        self.cwd.mkdir(parents=True)
        self.scratch = self.base / "tmp"
        self.scratch.mkdir()
        self.pids = self.base / "pids"
        self.test = test_script(self.base / "test.sh", self.pids, self.sleep)
        (self.cwd / "input.txt").write_text(input_text())
        if self.in_repo:
            git(self.cwd, "init", "-q")
            git(self.cwd, "add", "input.txt")
            git(self.cwd, "commit", "-q", "-m", "input")
        output = [] if self.in_repo else ["-o", "out.txt"]
        command = ["input.txt", "--test", str(self.test), "--jobs", str(self.jobs), *output]
        self.process = subprocess.Popen(
            [str(GIT_REDUCE), *command, "--quiet"],
            cwd=self.cwd,
            env=environment(self.scratch),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
            preexec_fn=default_sigint,
        )

    def result(self) -> str | None:
        """The recorded result: the result branch's file, or the output file."""
        if not self.in_repo:
            output = self.cwd / "out.txt"
            return output.read_text() if output.exists() else None
        try:
            return git(self.cwd, "show", "reduce/input:input.txt")
        except subprocess.CalledProcessError:
            return None

    def problems(self, returncode: int, stderr: str) -> list[str]:
        """What is wrong with how this run ended; empty when it ended well."""
        found = []
        if returncode not in (0, 130):
            found.append("other exit")
        if "Traceback" in stderr or "internal error" in stderr:
            found.append("crash")
        result = self.result()
        if result is None:
            found.append("no result")
        elif not reproduces(result):
            found.append("wrong result")
        if scratch_dirs(self.scratch):
            found.append("scratch dir left")
        if leftovers(self.pids):
            found.append("test process left")
        return found


@dataclass
class Delivery:
    signum: signal.Signals
    delay: float
    in_repo: bool
    jobs: int


@dataclass
class Ending:
    delivery: Delivery
    returncode: int
    stderr: str
    problems: list[str]


def deliveries(count: int, seed: int = SEED) -> list[Delivery]:
    """Random moments, signals and settings, the same ones every time."""
    rng = random.Random(seed)
    return [
        Delivery(
            signum=rng.choice([signal.SIGINT, signal.SIGTERM]),
            delay=rng.uniform(0.0, 2.5),
            in_repo=rng.random() < 0.5,
            jobs=rng.choice([1, 2]),
        )
        for _ in range(count)
    ]


def stress(base: Path, planned: list[Delivery], at_once: int = AT_ONCE) -> list[Ending]:
    """Run every delivery, `at_once` runs in flight, from one thread (for preexec_fn)."""
    endings: list[Ending] = []
    waiting = list(enumerate(planned))
    # run -> (delivery, when to deliver: None until its handlers are in place, sent)
    flying: dict[int, tuple[Run, Delivery, float | None, bool]] = {}
    while waiting or flying:
        while waiting and len(flying) < at_once:
            index, delivery = waiting.pop(0)
            run = Run(base / str(index), delivery.in_repo, delivery.jobs)
            flying[index] = (run, delivery, None, False)
        for index, (run, delivery, when, sent) in list(flying.items()):
            now = time.monotonic()
            if run.process.poll() is not None:
                _, stderr = run.process.communicate()
                code = run.process.returncode
                endings.append(Ending(delivery, code, stderr, run.problems(code, stderr)))
                kill_groups(run.pids)
                del flying[index]
            elif when is None:
                if catches(run.process.pid, signal.SIGTERM):
                    flying[index] = (run, delivery, now + delivery.delay, False)
            elif not sent and now >= when:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(run.process.pid, delivery.signum)
                flying[index] = (run, delivery, when, True)
            elif sent and now >= when + 30:
                run.process.kill()
        time.sleep(0.002)
    return endings


def figures(endings: list[Ending]) -> dict[str, int]:
    counts = {"deliveries": len(endings), "exit 130": 0, "exit 0": 0}
    for ending in endings:
        key = f"exit {ending.returncode}"
        counts[key] = counts.get(key, 0) + 1
        for problem in ending.problems:
            counts[problem] = counts.get(problem, 0) + 1
    return counts


def test_random_interrupts_always_end_in_the_best_result(tmp_path):
    endings = stress(tmp_path, deliveries(DELIVERIES))
    counts = figures(endings)
    bad = [
        f"{e.delivery.signum.name} after {e.delivery.delay:.2f}s (jobs {e.delivery.jobs}, "
        f"{'repo' if e.delivery.in_repo else 'file'}): {', '.join(e.problems)}; "
        f"exit {e.returncode}; {e.stderr.strip()[-300:]!r}"
        for e in endings
        if e.problems
    ]
    assert not bad, f"{counts}\n" + "\n".join(bad)
    assert counts["exit 130"] >= DELIVERIES // 2, counts  # most landed while it ran


if __name__ == "__main__":
    import json
    import tempfile

    count = int(sys.argv[1]) if len(sys.argv) > 1 else DELIVERIES
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else SEED
    base = Path(tempfile.mkdtemp(prefix="interrupt-stress-"))
    try:
        started = time.monotonic()
        endings = stress(base, deliveries(count, seed))
        result = figures(endings) | {"seconds": round(time.monotonic() - started)}
        print(json.dumps(result, indent=2))
        for ending in endings:
            if ending.problems:
                print(ending.delivery, ending.returncode, ending.problems, ending.stderr[-400:])
    finally:
        shutil.rmtree(base, ignore_errors=True)
