"""Interrupts: the deferral itself with real signals, then the installed `git-reduce` end to
end with SIGINT and SIGTERM at random moments, during calibration and a bisect, and kill -9.

Most runs reduce a small text under a shell test that sleeps a little in a
background child (so each test has a process group worth killing) and logs
the pids of its shell and of that child. The stress test delivers SIGINT or
SIGTERM to git-reduce's process group (as a terminal's Ctrl-C does) at a
random moment once the program has its signal handlers in place, and checks
each run's ending: exit 130 (or 0 when it finished first), no traceback and
no "internal error", the best result so far recorded, no scratch directory
and no test process left behind.

More deliveries, another seed, or the gcc case (fixtures/sequence-point), for the figures:
`GITREDUCE_STRESS_DELIVERIES=300 GITREDUCE_STRESS_SEED=12 GITREDUCE_STRESS_CASE=sequence-point
pytest -s tests/sessions/test_interrupts.py -k random`.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from support import (
    eventually,
    git,
    git_env,
    group_members,
    processes,
    sleep_marker,
    sleeping,
)

from gitreduce.oracle.runner import Oracle, OracleClosed, stop_all
from gitreduce.oracle.spec import TestSpec
from gitreduce.sessions.interrupts import deferred, deferring

GIT_REDUCE = Path(sys.executable).parent / "git-reduce"
SEED = int(os.environ.get("GITREDUCE_STRESS_SEED", "12"))
DELIVERIES = int(os.environ.get("GITREDUCE_STRESS_DELIVERIES", "40"))
AT_ONCE = 4  # runs in flight together, to keep the suite's time reasonable


# -- the deferral, in this process -------------------------------------------------------


def test_a_signal_is_a_request_whose_stops_run_in_the_watcher_thread():
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    stopped_in: list[str] = []
    done = threading.Event()

    def stop() -> None:
        stopped_in.append(threading.current_thread().name)
        done.set()

    with deferred() as interrupts, interrupts.stopping(stop):
        os.kill(os.getpid(), signal.SIGINT)  # no KeyboardInterrupt: only a request
        assert done.wait(5)
        assert interrupts.requested
        with deferred() as inner:
            assert inner is interrupts  # nested blocks share one request
    assert stopped_in[0] == "interrupts"
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before


def test_a_stop_registered_after_the_request_runs_at_once():
    with deferred() as interrupts:
        os.kill(os.getpid(), signal.SIGTERM)
        assert eventually(lambda: interrupts.requested)
        stops: list[int] = []
        with interrupts.stopping(lambda: stops.append(1)):
            assert stops


def test_an_oracle_opened_after_the_request_is_stopped_too(tmp_path):
    """Calibration opens its oracle after the session looked at the flag: the request must
    reach it all the same, not after its test ran to the end."""
    with deferred() as interrupts, interrupts.stopping(stop_all):
        os.kill(os.getpid(), signal.SIGTERM)
        assert eventually(lambda: interrupts.requested)
        spec = TestSpec("sleep 30", "v.c", timeout=60)
        with Oracle(spec, jobs=1, scratch_root=tmp_path) as oracle:
            start = time.monotonic()
            with pytest.raises(OracleClosed):
                oracle.run(b"")
            assert time.monotonic() - start < 2
    assert list(tmp_path.iterdir()) == []


def test_outside_a_session_a_second_signal_raises_keyboard_interrupt():
    @deferring
    def session(interrupts_seen: list[bool]) -> None:
        os.kill(os.getpid(), signal.SIGINT)
        os.kill(os.getpid(), signal.SIGINT)  # inside a session: never raised
        time.sleep(0.05)
        interrupts_seen.append(True)

    seen: list[bool] = []
    with pytest.raises(KeyboardInterrupt), deferred():
        session(seen)
        os.kill(os.getpid(), signal.SIGINT)  # asked again, and no session is running
        time.sleep(1)
    assert seen == [True]


# -- helpers for the real program --------------------------------------------------------


def input_text() -> str:
    lines = [f"line {i}: alpha beta gamma delta {i * 7}" for i in range(60)]
    lines[23] = "line 23: the bug is here"
    lines[41] = "line 41: and the trigger is here"
    return "\n".join(lines) + "\n"


def reproduces(text: str) -> bool:
    return "bug" in text and "trigger" in text


def logging_test(path: Path, pids: Path, sleep: str = "0.02") -> Path:
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
    env = {key: value for key, value in git_env().items() if key != "COLUMNS"}
    env["TMPDIR"] = str(scratch)
    env["XDG_CACHE_HOME"] = str(scratch.parent / "xdg-cache")  # no verdicts shared between runs
    return env


def default_sigint() -> None:
    # A shell without job control starts background jobs with SIGINT ignored, and
    # Python keeps an inherited SIG_IGN; the user's interactive git-reduce would not.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start(cwd: Path, scratch: Path, *args: str) -> subprocess.Popen[str]:
    """git-reduce in a session of its own, so that signals for its group reach it alone."""
    return subprocess.Popen(
        [str(GIT_REDUCE), *args],
        cwd=cwd,
        env=environment(scratch),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=default_sigint,
    )


def catches(pid: int, signum: int) -> bool:
    """Whether the process has a handler for `signum` (False once it is gone)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    mask = next(line for line in status.splitlines() if line.startswith("SigCgt:"))
    return bool(int(mask.split()[1], 16) >> (signum - 1) & 1)


def logged_pids(log: Path) -> set[int]:
    return {int(pid) for pid in log.read_text().split()} if log.exists() else set()


def leftovers(log: Path, within: float = 3.0) -> list[int]:
    """Test processes still alive `within` seconds after git-reduce ended.

    Each test's shell leads its own process group, so the groups of the logged
    shells hold every process a test started, logged or not.
    """
    groups = logged_pids(log)
    eventually(lambda: not group_members(groups), within)
    return group_members(groups)


def kill_all(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def scratch_dirs(scratch: Path) -> list[str]:
    return sorted(path.name for path in scratch.glob("gitreduce-*"))


def result_branch(cwd: Path, name: str = "reduce/input", path: str = "input.txt") -> str | None:
    shown = git(cwd, "show", f"{name}:{path}", check=False)
    return shown.stdout if shown.returncode == 0 else None


# -- random interrupts ---------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """What the stress runs reduce: an input, a test that logs its pids, what still fails,
    and how many seconds after the handlers are in place a signal may come."""

    name: str
    text: str
    script: Callable[[Path, Path], Path]  # (where, pid log) -> the test
    reproduces: Callable[[str], bool]
    moments: float


SEQUENCE_POINT = Path(__file__).resolve().parents[2] / "fixtures" / "sequence-point"


def gcc_test(path: Path, pids: Path) -> Path:
    """The sequence-point fixture's test (gcc), logging the pid of its shell."""
    path.write_text(
        f'#!/bin/sh\necho $$ >> "{pids}"\nexec "{SEQUENCE_POINT / "test.sh"}" "$GITREDUCE_FILE"\n'
    )
    path.chmod(0o755)
    return path


def gcc_reproduces(text: str) -> bool:
    with tempfile.NamedTemporaryFile("w", suffix=".c") as file:
        file.write(text)
        file.flush()
        return subprocess.run([SEQUENCE_POINT / "test.sh", file.name]).returncode == 1


CASES = {
    "words": Case("input.txt", input_text(), logging_test, reproduces, 3.5),
    "sequence-point": Case(
        "variant.c", (SEQUENCE_POINT / "variant.c").read_text(), gcc_test, gcc_reproduces, 6.0
    ),
}
CASE = CASES[os.environ.get("GITREDUCE_STRESS_CASE", "words")]


@dataclass
class Run:
    """One git-reduce on the case in its own directory, in a repository or on a plain file."""

    base: Path
    case: Case
    in_repo: bool
    jobs: int
    process: subprocess.Popen[str] = field(init=False)

    def __post_init__(self) -> None:
        self.cwd = self.base / "work"
        self.cwd.mkdir(parents=True)
        self.scratch = self.base / "tmp"
        self.scratch.mkdir()
        self.pids = self.base / "pids"
        test = self.case.script(self.base / "test.sh", self.pids)
        name = self.case.name
        (self.cwd / name).write_text(self.case.text)
        if self.in_repo:
            git(self.cwd, "init", "-q")
            git(self.cwd, "add", name)
            git(self.cwd, "commit", "-q", "-m", "input")
        output = [] if self.in_repo else ["-o", "out"]
        arguments = [name, "--test", str(test), "--jobs", str(self.jobs), *output]
        self.process = start(self.cwd, self.scratch, *arguments, "--quiet")

    def result(self) -> str | None:
        """The recorded result: the result branch's file, or the output file."""
        if self.in_repo:
            return result_branch(self.cwd, f"reduce/{Path(self.case.name).stem}", self.case.name)
        output = self.cwd / "out"
        return output.read_text() if output.exists() else None

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
        elif not self.case.reproduces(result):
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


def deliveries(count: int, seed: int, moments: float) -> list[Delivery]:
    """Random moments (up to `moments` s), signals and settings, the same ones every time."""
    rng = random.Random(seed)
    return [
        Delivery(
            signum=rng.choice([signal.SIGINT, signal.SIGTERM]),
            delay=rng.uniform(0.0, moments),
            in_repo=rng.random() < 0.5,
            jobs=rng.choice([1, 2]),
        )
        for _ in range(count)
    ]


def stress(base: Path, planned: list[Delivery], case: Case, at_once: int = AT_ONCE) -> list[Ending]:
    """Run every delivery, `at_once` runs in flight, from one thread (for preexec_fn).

    The random delay counts from the moment git-reduce has a handler for
    SIGTERM: before that, any process dies of it.
    """
    endings: list[Ending] = []
    waiting = list(enumerate(planned))
    # index -> (run, delivery, when to deliver (None until its handlers are in place), sent)
    flying: dict[int, tuple[Run, Delivery, float | None, bool]] = {}
    while waiting or flying:
        while waiting and len(flying) < at_once:
            index, delivery = waiting.pop(0)
            flying[index] = (
                Run(base / str(index), case, delivery.in_repo, delivery.jobs),
                delivery,
                None,
                False,
            )
        for index, (run, delivery, when, sent) in list(flying.items()):
            now = time.monotonic()
            if run.process.poll() is not None:
                _, stderr = run.process.communicate()
                code = run.process.returncode
                endings.append(Ending(delivery, code, stderr, run.problems(code, stderr)))
                kill_all(group_members(logged_pids(run.pids)))
                del flying[index]
            elif when is None:
                if catches(run.process.pid, signal.SIGTERM):
                    flying[index] = (run, delivery, now + delivery.delay, False)
            elif not sent and now >= when:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(run.process.pid, delivery.signum)
                flying[index] = (run, delivery, when, True)
            elif sent and now >= when + 30:
                run.process.kill()  # hung: reported as its exit by signal
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


def undisturbed_seconds(base: Path, case: Case) -> float:
    """How long one run of `case` at two jobs, alone and left in peace, lasts from the moment
    it has its handlers in place: signals drawn from a fixed span would mostly come after
    the end on a machine fast enough, and test little."""
    run = Run(base, case, in_repo=False, jobs=2)
    handled = None
    while run.process.poll() is None:
        if handled is None and catches(run.process.pid, signal.SIGTERM):
            handled = time.monotonic()
        time.sleep(0.002)
    ended = time.monotonic()
    run.process.communicate()
    kill_all(group_members(logged_pids(run.pids)))
    assert run.process.returncode == 0 and handled is not None
    return ended - handled


def test_random_interrupts_always_end_in_the_best_result(tmp_path):
    started = time.monotonic()
    # a span a little longer than a run, so that some signals come as it ends
    moments = min(CASE.moments, 1.5 * undisturbed_seconds(tmp_path / "undisturbed", CASE))
    print(f"\nsignals within {moments:.2f} s")
    endings = stress(tmp_path / "stress", deliveries(DELIVERIES, SEED, moments), CASE)
    counts = figures(endings)
    print(f"\n{counts} in {time.monotonic() - started:.0f} s")
    bad = [
        f"{e.delivery.signum.name} after {e.delivery.delay:.2f}s (jobs {e.delivery.jobs}, "
        f"{'repo' if e.delivery.in_repo else 'file'}): {', '.join(e.problems)}; "
        f"exit {e.returncode}; {e.stderr.strip()[-300:]!r}"
        for e in endings
        if e.problems
    ]
    assert not bad, f"{counts}\n" + "\n".join(bad)
    assert counts["exit 130"] >= len(endings) // 2, counts  # most landed while it ran


# -- interrupts at chosen moments ----------------------------------------------------------


def wait_for(condition: Callable[[], object], process: subprocess.Popen[str], what: str) -> None:
    deadline = time.monotonic() + 30
    while not condition():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, f"{what} never happened"
        time.sleep(0.02)


def ended(process: subprocess.Popen[str], within: float = 5.0) -> tuple[int, str]:
    try:
        _, stderr = process.communicate(timeout=within)
    except subprocess.TimeoutExpired:
        state = still_running(process.pid)
        process.kill()
        pytest.fail(f"git-reduce still running {within} s after the signal:\n{state}")
    return process.returncode, stderr


def still_running(pid: int) -> str:
    """What a git-reduce that did not end was doing: where each of its threads waits in the
    kernel, and every process below it, for a failure that a rerun does not show."""
    lines = []
    for task in sorted(Path(f"/proc/{pid}/task").glob("*")):
        with contextlib.suppress(OSError):
            name = (task / "comm").read_text().strip()
            lines.append(f"thread {task.name} {name}: waits in {(task / 'wchan').read_text()}")
    pending = [pid]
    while pending:
        parent = pending.pop()
        for task in Path(f"/proc/{parent}/task").glob("*"):
            with contextlib.suppress(OSError):
                for child in (task / "children").read_text().split():
                    pending.append(int(child))
                    with contextlib.suppress(OSError):
                        command = Path(f"/proc/{child}/cmdline").read_bytes()
                        status = Path(f"/proc/{child}/stat").read_text().split(")")[-1].split()
                        lines.append(f"child {child} of {parent} ({status[0]}): {command!r}")
    return "\n".join(lines)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_an_interrupt_during_calibration_records_the_original(tmp_path, signum):
    cwd, scratch, pids = tmp_path / "work", tmp_path / "tmp", tmp_path / "pids"
    cwd.mkdir()
    scratch.mkdir()
    (cwd / "input.txt").write_text(input_text())
    git(cwd, "init", "-q")
    git(cwd, "add", "input.txt")
    git(cwd, "commit", "-q", "-m", "input")
    test = logging_test(tmp_path / "test.sh", pids, sleep="30")  # calibration never ends
    process = start(cwd, scratch, "input.txt", "--test", str(test), "--jobs", "2")
    try:
        wait_for(lambda: logged_pids(pids), process, "calibration")
        process.send_signal(signum)
        code, stderr = ended(process)
        assert code == 130, stderr
        assert "Traceback" not in stderr and "internal error" not in stderr
        assert "interrupted" in stderr
        assert result_branch(cwd) == input_text()
        assert scratch_dirs(scratch) == []
        assert leftovers(pids) == []
    finally:
        process.kill()
        process.communicate()
        kill_all(group_members(logged_pids(pids)))


def test_an_interrupt_during_the_bisect_records_the_pair_at_good_and_bad(tmp_path):
    """GOOD..BAD with versions between: the test is slow on those only, so the signal comes
    while the bisect waits for one of them."""
    cwd, scratch, pids = tmp_path / "work", tmp_path / "tmp", tmp_path / "pids"
    cwd.mkdir()
    scratch.mkdir()
    git(cwd, "init", "-q")
    versions = ["one\n", "one\ntwo\n", "one\ntwo\nthree\n", "one\ntwo\nthree\nbug\n"]
    for number, text in enumerate(versions):
        (cwd / "input.txt").write_text(text)
        git(cwd, "add", "input.txt")
        git(cwd, "commit", "-q", "-m", f"version {number}")
    test = tmp_path / "test.sh"
    test.write_text(
        "#!/bin/sh\n"
        'grep -q bug "$GITREDUCE_FILE" && exit 1\n'
        'grep -q two "$GITREDUCE_FILE" || exit 0\n'
        f'echo $$ >> "{pids}"\n'
        "sleep 30\n"
    )
    test.chmod(0o755)
    process = start(cwd, scratch, "HEAD~3..HEAD", "--", "input.txt", "--test", str(test))
    try:
        wait_for(lambda: logged_pids(pids), process, "the bisect's first test")
        process.send_signal(signal.SIGINT)
        code, stderr = ended(process)
        assert code == 130, stderr
        assert "Traceback" not in stderr and "internal error" not in stderr
        branches = git(cwd, "for-each-ref", "--format=%(refname:short)", "refs/heads/reduce/")
        [branch] = branches.stdout.split()
        assert result_branch(cwd, branch) == versions[-1]
        assert result_branch(cwd, f"{branch}~1") == versions[0]
        assert scratch_dirs(scratch) == []
        assert leftovers(pids) == []
    finally:
        process.kill()
        process.communicate()
        kill_all(group_members(logged_pids(pids)))


def test_a_signal_once_the_result_is_written_changes_nothing(tmp_path):
    """The output file is written before the result is recorded and the program exits: a
    signal from then on lands in the recording, the summary or the exit itself, none of
    which it may cut. Six runs at once, each signalled the moment its output appears."""
    runs = [
        (Run(tmp_path / str(index), CASES["words"], in_repo=False, jobs=2), signum)
        for index, signum in enumerate([signal.SIGINT, signal.SIGTERM] * 3)
    ]
    signalled: set[int] = set()
    deadline = time.monotonic() + 60
    while any(run.process.poll() is None for run, _ in runs) and time.monotonic() < deadline:
        for index, (run, signum) in enumerate(runs):
            if index not in signalled and (run.cwd / "out").exists():
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(run.process.pid, signum)
                signalled.add(index)
        time.sleep(0.001)
    endings = []
    for run, signum in runs:
        code, stderr = ended(run.process)
        endings.append((signum.name, code, run.problems(code, stderr), stderr[-300:]))
    assert len(signalled) == len(runs), endings
    assert all(code == 0 and not problems for _, code, problems, _ in endings), endings


# -- kill -9 -----------------------------------------------------------------------------


def sleeping_test(path: Path, marker: str) -> Path:
    """A test that runs `sleep 1000 MARKER` (see `support.sleep_marker`)."""
    path.write_text(f"#!/bin/sh\nsleep 1000 {marker}\nexit 1\n")
    path.chmod(0o755)
    return path


def reaper_of(pid: int) -> int:
    [reaper] = [
        child
        for child, (_, parent, _, command) in processes().items()
        if parent == pid and b"\0-I\0-S\0-c\0" in command
    ]
    return reaper


def test_kill_9_takes_the_running_test_and_its_children_along(tmp_path):
    cwd, scratch = tmp_path / "work", tmp_path / "tmp"
    cwd.mkdir()
    scratch.mkdir()
    (cwd / "input.txt").write_text(input_text())
    marker = sleep_marker()
    test = sleeping_test(tmp_path / "test.sh", marker)
    process = start(cwd, scratch, "input.txt", "--test", str(test), "-o", "out.txt")
    try:
        wait_for(lambda: sleeping(marker), process, "the test's sleep")
        assert scratch_dirs(scratch)
        process.kill()
        process.communicate()
        assert eventually(lambda: not sleeping(marker)), "the test's sleep outlived git-reduce"
        assert eventually(lambda: not scratch_dirs(scratch)), scratch_dirs(scratch)
    finally:
        process.kill()
        process.communicate()
        kill_all(sleeping(marker))


def test_the_next_run_removes_a_scratch_dir_no_live_run_owns(tmp_path):
    """Everything killed at once (git-reduce and its reaper, as an OOM kill or a crash of the
    machine would): the scratch dir stays behind until the next run in the same TMPDIR."""
    cwd, scratch = tmp_path / "work", tmp_path / "tmp"
    cwd.mkdir()
    scratch.mkdir()
    (cwd / "input.txt").write_text(input_text())
    marker = sleep_marker()
    test = sleeping_test(tmp_path / "test.sh", marker)
    process = start(cwd, scratch, "input.txt", "--test", str(test), "-o", "out.txt")
    try:
        wait_for(lambda: sleeping(marker), process, "the test's sleep")
        os.kill(reaper_of(process.pid), signal.SIGKILL)
        process.kill()
        process.communicate()
        kill_all(sleeping(marker))
        stale = scratch_dirs(scratch)  # the calibration's, and the runner made beside it
        assert stale and all((scratch / each / ".owner").exists() for each in stale)
        pids = tmp_path / "pids"
        quick = logging_test(tmp_path / "quick.sh", pids, sleep="0")
        rerun = start(cwd, scratch, "input.txt", "--test", str(quick), "-o", "out.txt", "-q")
        code, stderr = ended(rerun, within=60)
        assert code == 0, stderr
        assert scratch_dirs(scratch) == []
        assert reproduces((cwd / "out.txt").read_text())
    finally:
        process.kill()
        process.communicate()
        kill_all(sleeping(marker))
