"""The oracle: runs the user's test command on one candidate and classifies the run.

This is the only place that spawns the user's test. Everything a reduction
learns about a candidate comes from here, so the edge cases live here too:
scratch directories per parallel worker, timeouts that kill whole process
groups, and prompt shutdown on interruption. What decides a verdict lives in
`spec`; checking the test on the originals before a reduction, in `calibration`;
who owns a scratch root, in `scratch`; what happens to the tests when gitreduce
is killed outright, in `reaper`.
"""

import contextlib
import math
import os
import re
import select
import shlex
import subprocess
import threading
import time
import weakref
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, Protocol

from gitreduce.core import fileset, tickets
from gitreduce.core.errors import Interrupted, UserError
from gitreduce.core.outcome import Outcome, Verdict
from gitreduce.oracle import output as output_file
from gitreduce.oracle.direct import direct_argv, shell_status
from gitreduce.oracle.process_tree import kill_group, kill_tree
from gitreduce.oracle.reaper import reaper
from gitreduce.oracle.scratch import ScratchRoot, sweep_once
from gitreduce.oracle.signature import extract_signature
from gitreduce.oracle.slot_files import SlotFiles, empty_temporary
from gitreduce.oracle.spec import TestSpec, anchored

# Long enough for any sane test on the original input; calibration replaces it.
PROVISIONAL_TIMEOUT = 300.0

_PLACEHOLDER = re.compile(r"""(['"]?)\{\}\1""")

# Characters no shell expands or splits on, in any quoting: a name of only these may
# stand anywhere in the command.
_INERT_NAME = re.compile(r"[A-Za-z0-9_./+,:@%=-]*")


def _with_candidate(command: str, candidate: Path, name: str) -> str:
    """`command` with each `{}` replaced by the candidate's path, quoted for the shell.

    The quoting holds where `{}` is a word of its own. Inside a quoted word
    (`sh -c "gcc {}"`, `"{}.o"`) it does not, and the name is the file's name
    in a repository, which a stranger may have chosen (`$(...).c`): such a
    name is refused there, before any test, rather than run as a command.
    """
    quoted = shlex.quote(str(candidate))
    if not _INERT_NAME.fullmatch(name):
        for match in _PLACEHOLDER.finditer(command):
            if not _stands_alone(command, match.start(), match.end()):
                raise UserError(
                    f"the file name {name!r} cannot be put inside a quoted word of "
                    "the test command: write {} as a word of its own (it then arrives as "
                    'one argument), or "$GITREDUCE_FILE" quoted where the test uses the name'
                )
    return _PLACEHOLDER.sub(lambda _: quoted, command)


def _stands_alone(command: str, start: int, end: int) -> bool:
    """Whether `command[start:end]` is a whole shell word where the shell's quoting applies:
    outside quotes, or inside a command substitution (`"$(cat {})"`), where it starts over."""
    separators = " \t\n;&|()<>"
    if start > 0 and command[start - 1] not in separators:
        return False
    if end < len(command) and command[end] not in separators:
        return False
    contexts = [""]  # "" unquoted, "(" a substitution or subshell, or the open quote
    index = 0
    while index < start:
        char, context = command[index], contexts[-1]
        opens = command.startswith("$(", index)
        if context == "'":
            if char == "'":
                contexts.pop()
        elif char == "\\":
            index += 1
        elif context == '"':
            if char == '"':
                contexts.pop()
            elif opens:
                contexts.append("(")
                index += 1
        elif char in "'\"":
            contexts.append(char)
        elif char == "(" or opens:
            contexts.append("(")
            index += opens
        elif char == ")" and context == "(":
            contexts.pop()
        index += 1
    return index == start and contexts[-1] in ("", "(")


# How long close() waits for runs in flight to let go of their slots: they were
# killed, so this is the time to reap a process and close a file.
_SETTLE_SECONDS = 5.0


class OracleClosed(Interrupted):
    """Raised by `Oracle.run` once `stop()` or `close()` has begun.

    A run cut short that way says nothing about its candidate, so it must not
    come back as a verdict that a cache could store.
    """


@dataclass(frozen=True)
class _Slot:
    """One worker's private scratch dir and everything precomputed for running in it."""

    workdir: Path
    candidate: Path
    output: Path
    files: SlotFiles
    temporary: Path  # the test's $TMPDIR
    argv: tuple[str, ...]  # the shell's, running the command
    env: Mapping[str, str]
    # The program and words that start the test without the shell, if it needs none
    # (`oracle/direct.py`), and its environment: `env` with PWD the directory it runs
    # in, which the shell would have exported (it sets PWD as it starts).
    direct: tuple[str, tuple[str, ...]] | None
    direct_env: Mapping[str, str]


# Set to 0, every test is placed by the scheduler (see `Oracle._pins`).
PIN_VARIABLE = "GITREDUCE_PIN"


def _pinnable_cpus() -> list[int]:
    """The processors this process may run on, if its tests may be pinned to them: where a
    thread can set its own affinity (Linux), and unless GITREDUCE_PIN=0."""
    if not hasattr(os, "sched_getaffinity") or os.environ.get(PIN_VARIABLE) == "0":
        return []
    try:
        return sorted(os.sched_getaffinity(0))
    except OSError:  # a sandbox that refuses the call: the scheduler places every test
        return []


class _Processors:
    """The pinned tests running on each processor, for all oracles of this process (a
    triage runs several): each new one goes to the processor with the fewest."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: dict[int, int] = {}

    @contextlib.contextmanager
    def least_busy(self, cpus: list[int]) -> Iterator[int]:
        with self._lock:
            cpu = min(cpus, key=lambda each: self._running.get(each, 0))
            self._running[cpu] = self._running.get(cpu, 0) + 1
        try:
            yield cpu
        finally:
            with self._lock:
                self._running[cpu] -= 1


_PROCESSORS = _Processors()


@contextlib.contextmanager
def _started_on(cpu: int | None) -> Iterator[None]:
    """Processes started inside run on `cpu` only (None: anywhere): the calling thread's
    affinity, which a child inherits, is `cpu` for the while and restored after."""
    if cpu is None:
        yield
        return
    try:
        before = os.sched_getaffinity(0)
        os.sched_setaffinity(0, {cpu})
    except OSError:  # taken away since (a cpuset changed): the scheduler places the test
        yield
        return
    try:
        yield
    finally:
        with contextlib.suppress(OSError):  # a processor of `before` went away meanwhile
            os.sched_setaffinity(0, before)


class Oracle:
    """Runs the test on candidates, up to `jobs` at a time, each in a private scratch dir.

    `run()` is thread-safe. `stop()` (idempotent, from any thread) kills every
    running test's process group; runs in flight then raise `OracleClosed`
    promptly, and so do later calls. `close()` stops, waits for the runs in
    flight to end and removes the scratch root. A spec without a timeout runs
    with `PROVISIONAL_TIMEOUT`. The first oracle of a process removes the
    scratch roots of dead runs in the same parent directory.
    """

    def __init__(self, spec: TestSpec, jobs: int, scratch_root: Path | None = None) -> None:
        if jobs < 1:
            raise ValueError(f"jobs must be at least 1, not {jobs}")
        relative = PurePosixPath(spec.relative_path)
        if not spec.file_set and (
            relative.is_absolute() or not relative.parts or ".." in relative.parts
        ):
            raise ValueError(f"not a relative path inside the scratch dir: {spec.relative_path!r}")
        self.spec = spec
        self.timeout = spec.timeout if spec.timeout is not None else PROVISIONAL_TIMEOUT
        self._regex = _compile_signature(spec.signature_regex)
        command = anchored(spec.command, spec.relative_path, Path.cwd())
        environment = {**os.environ, **(spec.env or {})}
        sweep_once(scratch_root)
        self._reaper = reaper()
        self._scratch = ScratchRoot(scratch_root)
        self._root = self._scratch.path
        self._reaper.watch_root(str(self._root))
        self._slot_parts = (relative, command, environment)
        try:
            self._slots = [
                self._make_slot(index, relative, command, environment) for index in range(jobs)
            ]
        except BaseException:
            self._remove_root()
            raise
        self._free = list(self._slots)
        self._cond = threading.Condition()
        self._running: set[subprocess.Popen[bytes]] = set()
        self._closed = False
        self._removed = False
        track(self)

    def _make_slot(
        self, index: int, relative: PurePosixPath, command: str, environment: Mapping[str, str]
    ) -> _Slot:
        workdir = self._root / str(index)
        workdir.mkdir()
        candidate = workdir if self.spec.file_set else workdir.joinpath(*relative.parts)
        name = "" if self.spec.file_set else str(relative)  # a set's {} is our own directory
        temporary = self._root / f"{index}.tmp"
        temporary.mkdir()
        command = _with_candidate(command, candidate, name)
        env = {**environment, "GITREDUCE_FILE": str(candidate), "TMPDIR": str(temporary)}
        return _Slot(
            workdir=workdir,
            candidate=candidate,
            output=self._root / f"{index}.out",
            files=SlotFiles(workdir, candidate),
            temporary=temporary,
            argv=("/bin/sh", "-c", command),
            env=env,
            direct=direct_argv(command, environment),
            direct_env={**env, "PWD": os.path.realpath(workdir)},
        )

    def set_timeout(self, seconds: float) -> None:
        """Give the runs that start from now on `seconds` each."""
        self.timeout = seconds

    def set_jobs(self, jobs: int) -> None:
        """Take up to `jobs` runs at once: new slots as needed (never fewer than before)."""
        with self._cond:
            if self._closed:
                return
            while len(self._slots) < jobs:
                slot = self._make_slot(len(self._slots), *self._slot_parts)
                self._slots.append(slot)
                self._free.append(slot)
            self._cond.notify_all()

    def _pins(self) -> list[int]:
        """The processors to pin tests to: with a slot for every processor this process may
        use, each test runs on one of its own; otherwise (none) wherever the scheduler puts
        it.

        Measured on two cores at two jobs: started from one process, the two
        tests' short-lived processes (a shell, the compiler and its passes)
        often shared a core for part of their run, and each test took 9-12 %
        longer than at one job (an independent loop per core: 4 %); pinned, it
        took no longer, and a reduction was 8-10 % faster (gcc and rustc
        benchmark cases). Only when the slots cover the processors exactly: with
        fewer, two reductions side by side would pin to the same ones, and a
        test that runs threads would lose the idle processors it could borrow.
        A test goes to the processor with the fewest pinned tests of this
        process, so a lone test never waits on a processor another holds.
        `GITREDUCE_PIN=0` leaves placement to the scheduler.
        """
        cpus = _pinnable_cpus()
        return cpus if len(cpus) == len(self._slots) else []

    def __enter__(self) -> "Oracle":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def run(self, content: bytes) -> Outcome:
        """Classify one candidate; raises `OracleClosed` if the oracle is or gets closed."""
        return self.run_with_output(content)[0]

    def stop(self) -> None:
        """Kill all running tests with their process groups and refuse new runs."""
        with self._cond:
            if self._closed:
                return
            self._closed = True
            # Killed under the lock: run() unregisters a process before reaping
            # it, so no pid here can have been reused by an unrelated process.
            for process in self._running:
                kill_tree(process.pid)
            self._cond.notify_all()

    def close(self) -> None:
        """Stop, wait for the runs in flight to let go of their slots, delete the scratch root.

        Waiting first means no run can write into the root while it is removed
        (and so leave it behind); the wait is bounded, since the runs were killed.
        """
        self.stop()
        deadline = time.monotonic() + _SETTLE_SECONDS
        with self._cond:
            while len(self._free) < len(self._slots):
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
            if self._removed:
                return
            self._removed = True
        self._remove_root()
        untrack(self)

    def _remove_root(self) -> None:
        self._scratch.remove()
        self._reaper.forget_root(str(self._root))

    def run_with_output(self, content: bytes) -> tuple[Outcome, str]:
        """Like run(), also returning the captured output (for calibration messages)."""
        slot = self._acquire()
        try:
            return self._run_in(slot, content)
        except OSError:
            # A run close() gave up waiting for: the scratch dir went under its feet.
            if self._closed:
                raise OracleClosed from None
            raise
        finally:
            self._release(slot)

    def _acquire(self) -> _Slot:
        """A free slot; `tickets.Abandoned` once this thread's judgement is given up, even
        while waiting for one: an abandoned judgement must not hold its job until a slot
        frees only to start a test and kill it."""
        ticket = tickets.current()
        wakes = ticket.stoppable(self._wake) if ticket else contextlib.nullcontext()
        with wakes, self._cond:
            while not self._closed and not self._free:
                if ticket is not None and ticket.abandoned:
                    raise tickets.Abandoned
                self._cond.wait()
            if self._closed:
                raise OracleClosed
            if ticket is not None and ticket.abandoned:
                raise tickets.Abandoned
            return self._free.pop()

    def _wake(self) -> None:
        with self._cond:
            self._cond.notify_all()

    def _release(self, slot: _Slot) -> None:
        with self._cond:
            self._free.append(slot)
            self._cond.notify_all()  # a run waiting for a slot, or close() for all of them

    def _run_in(self, slot: _Slot, content: bytes) -> tuple[Outcome, str]:
        if self.spec.file_set:
            slot.files.place_files(fileset.unpack(content))
        else:
            slot.files.place_file(content)
        empty_temporary(slot.temporary)
        # A file rather than pipes: a stray background child holding a pipe
        # open would make us wait for it; a file is read once sh has exited.
        pins = self._pins()
        with open(slot.output, "w+b") as out, contextlib.ExitStack() as placement:
            cpu = placement.enter_context(_PROCESSORS.least_busy(pins)) if pins else None
            start = time.monotonic()
            with _started_on(cpu):
                process, direct = _start(slot, out)
            finished = self._wait(process, out)
            seconds = time.monotonic() - start
            output = output_file.read(out)
        if self._closed:
            raise OracleClosed
        ticket = tickets.current()
        if ticket is not None and ticket.abandoned:
            raise tickets.Abandoned  # killed or not, its verdict is not the candidate's to keep
        output = output.replace(f"{slot.workdir}{os.sep}", "").replace(str(slot.workdir), ".")
        if not finished:
            return Outcome(Verdict.TIMEOUT, None, seconds), output
        code = shell_status(process.returncode) if direct else process.returncode
        verdict = _classify(self.spec.polarity, code)
        signature = self._signature(code, output) if verdict is Verdict.BAD else None
        return Outcome(verdict, code, seconds, signature), output

    def _wait(self, process: subprocess.Popen[bytes], out: IO[bytes]) -> bool:
        """Wait for the test within the timeout; True if it exited by itself (or was stopped).

        Either way its whole process group is killed afterwards, with every group
        its processes made (`process_tree`), so that background children cannot
        outlive the run and write into the slot.
        The reaper knows the group from its start until just before the test
        is reaped, when its id could start naming another process's group.
        Every `TRIM_SECONDS` meanwhile, the middle of the test's output `out`
        is given back to the disk (`oracle/output.py`).
        """
        self._reaper.watch_group(process.pid)
        pidfd = _pidfd(process.pid)  # before anyone else could reap the pid
        ticket = tickets.current()
        exited = False  # by itself, or killed by a stop: nothing is left below it
        try:
            with self._cond:
                stopped = self._closed
                if not stopped:
                    self._running.add(process)
            if stopped:
                return True  # _run_in sees the oracle closed
            stoppable = ticket.stoppable(lambda: self._kill(process)) if ticket else None
            with stoppable or contextlib.nullcontext():
                tickets.test_under_way()
                deadline = time.monotonic() + self.timeout
                while (left := deadline - time.monotonic()) > 0:
                    if _exited(process, pidfd, min(left, output_file.TRIM_SECONDS)):
                        exited = True
                        return True
                    output_file.trim(out)
                return False
        finally:
            if exited:
                kill_group(process.pid)  # its background children, in its group
            else:
                kill_tree(process.pid)
            with self._cond:
                self._running.discard(process)
            self._reaper.forget_group(process.pid)
            process.wait()
            if pidfd is not None:
                os.close(pidfd)

    def _kill(self, process: subprocess.Popen[bytes]) -> None:
        """Kill one test's process group, if it is still registered (so not yet reaped, and
        its pid not free to name another process)."""
        with self._cond:
            if process in self._running:
                kill_tree(process.pid)

    def _signature(self, code: int, output: str) -> str | None:
        if self._regex is not None:
            match = self._regex.search(output)
            if match is None:
                return None
            return match.group(1) if self._regex.groups else match.group(0)
        if self.spec.polarity == "interesting":
            return "interesting"
        line = extract_signature(output, candidate=self.spec.relative_path)
        return f"exit {code}" if line is None else f"exit {code}: {line}"


def _start(slot: _Slot, out: IO[bytes]) -> tuple[subprocess.Popen[bytes], bool]:
    """The test's process, started without the shell where it needs none; and whether it
    was. Where the program cannot be started after all (deleted, or its mode changed since
    the oracle opened), the shell starts it and reports that as it always did."""
    if slot.direct is not None:
        program, words = slot.direct
        with contextlib.suppress(OSError):
            return _popen(slot, out, words, program, slot.direct_env), True
    return _popen(slot, out, slot.argv, None, slot.env), False


class _Started:
    """How many test processes this process has started: work that would take the
    processor from the first of them waits until it is under way (`sessions.run.Hold`)."""

    count = 0


def started_tests() -> int:
    """How many test processes this process has started so far."""
    return _Started.count


def _popen(
    slot: _Slot,
    out: IO[bytes],
    argv: tuple[str, ...],
    program: str | None,
    env: Mapping[str, str],
) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(
        argv,
        executable=program,
        cwd=slot.workdir,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=out,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    _Started.count += 1  # a lost count from a race only shortens a `Hold`'s wait
    return process


def _compile_signature(pattern: str | None) -> re.Pattern[str] | None:
    """Multiline, so that `^` and `$` anchor at the output's lines as users expect."""
    if pattern is None:
        return None
    try:
        return re.compile(pattern, re.MULTILINE)
    except re.error as error:
        raise UserError(f"invalid signature pattern {pattern!r}: {error}") from None


def _classify(polarity: str, code: int) -> Verdict:
    """The `git bisect run` convention, or C-Reduce's where exit 0 means "still buggy"."""
    if polarity == "interesting":
        return Verdict.BAD if code == 0 else Verdict.SKIP
    if code == 0:
        return Verdict.GOOD
    if code == 125:
        return Verdict.SKIP
    if 1 <= code <= 127:
        return Verdict.BAD
    return Verdict.BROKEN  # >= 128, or negative: killed by a signal


def _exited(process: subprocess.Popen[bytes], pidfd: int | None, seconds: float) -> bool:
    """Whether the test exits within `seconds`."""
    if pidfd is None:
        try:
            process.wait(seconds)
        except subprocess.TimeoutExpired:
            return False
        return True
    poller = select.poll()
    poller.register(pidfd, select.POLLIN)
    return bool(poller.poll(math.ceil(seconds * 1000)))


def _pidfd(pid: int) -> int | None:
    """A pollable handle on the child (Linux): waking exactly at its exit, unlike Popen.wait's
    sleep-polling, keeps per-run overhead low for fast tests."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


class Stoppable(Protocol):
    def stop(self) -> None: ...


_open: weakref.WeakSet[Stoppable] = weakref.WeakSet()  # every runner not yet closed
_open_lock = threading.Lock()


def track(runner: Stoppable) -> None:
    """Have `stop_all` stop `runner` until `untrack(runner)`: every oracle, and the runners
    that run tests elsewhere (`gitreduce.oracle.cluster`), which an interrupt stops alike."""
    with _open_lock:
        _open.add(runner)


def untrack(runner: Stoppable) -> None:
    with _open_lock:
        _open.discard(runner)


def stop_all() -> None:
    """Stop every open oracle (and tracked runner) of this process: what an interrupt does,
    from any thread.

    Process-wide like the signal that asks for it; a calibration's oracle is
    as much this run's as the reduction's.
    """
    with _open_lock:
        oracles = list(_open)
    for oracle in oracles:
        oracle.stop()
