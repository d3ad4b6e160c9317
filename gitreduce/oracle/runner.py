"""The oracle: runs the user's test command on one candidate and classifies the run.

This is the only place that spawns the user's test. Everything a reduction
learns about a candidate comes from here, so the edge cases live here too:
scratch directories per parallel worker, timeouts that kill whole process
groups, prompt shutdown on interruption, and turning an unusable test into a
one-line `UserError` before a reduction starts.
"""

import contextlib
import hashlib
import json
import math
import os
import re
import select
import shlex
import shutil
import signal
import stat
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import IO, Literal

from gitreduce.core.errors import MisclassifiedOriginal, UserError
from gitreduce.core.outcome import Outcome, Verdict
from gitreduce.oracle.signature import (
    SIGNATURE_VERSION,
    extract_signature,
    signature_matches,
)

# Long enough for any sane test on the original input; calibration replaces it.
PROVISIONAL_TIMEOUT = 300.0

# Output kept per run: the head holds a compiler's first diagnostics, the tail a
# traceback's last line or a sanitizer report after a long program output.
_HEAD_BYTES = 64 * 1024
_TAIL_BYTES = 16 * 1024

_ASSIGNMENT = re.compile(r"[A-Za-z_]\w*=")
_PLAIN_WORD = re.compile(r"[\w./+@%,:-]+")
_INTERPRETER = re.compile(r"(?:ba|da|k|z)?sh|python[\d.]*|perl|ruby|node")
_PLACEHOLDER = re.compile(r"""(['"]?)\{\}\1""")


class OracleClosed(Exception):
    """Raised by `Oracle.run` once `close()` has begun.

    A run cut short by close() says nothing about its candidate, so it must not
    come back as a verdict that a cache could store.
    """


@dataclass(frozen=True)
class TestSpec:
    """Everything that decides how a candidate is tested, and hence keys cached verdicts.

    `command` runs under `/bin/sh -c` with the scratch dir as cwd; `{}` (bare
    or quoted) becomes the quoted candidate path. Because the scratch dir is
    not where the user typed the command, a relative test script path such as
    `./test.sh` (the first word, or the script argument of an interpreter like
    `python3 check.py`) is resolved against the directory gitreduce runs in.
    """

    __test__ = False  # not a pytest test class, despite the name

    command: str
    relative_path: str
    polarity: Literal["bisect", "interesting"] = "bisect"
    timeout: float | None = None
    signature_regex: str | None = None
    any_failure: bool = False
    env: Mapping[str, str] | None = None

    def with_file_argument(self) -> "TestSpec | None":
        """This test with the candidate's path as its last argument; None if the command
        already places it with `{}`."""
        if "{}" in self.command:
            return None
        return replace(self, command=f"{self.command} {{}}")

    def fingerprint(self) -> str:
        """Hex sha1 of all that can change a verdict, including the test scripts' bytes.

        Editing the test script must invalidate cached verdicts even when the
        command line stays the same. A timeout derived by `calibrate` varies
        from run to run, so a cache that must survive reruns keys on the spec
        as the user gave it.
        """
        digest = hashlib.sha1()
        record = {
            "command": self.command,
            "relative_path": self.relative_path,
            "polarity": self.polarity,
            "timeout": self.timeout,
            "signature_regex": self.signature_regex,
            "any_failure": self.any_failure,
            "env": sorted((self.env or {}).items()),
            "signature_version": SIGNATURE_VERSION,
        }
        digest.update(json.dumps(record, sort_keys=True).encode())
        for path in _named_files(self.command, self.relative_path):
            with open(path, "rb") as script:
                digest.update(b"\0" + hashlib.file_digest(script, "sha1").digest())
        return digest.hexdigest()

    def is_interesting(self, original: Outcome, outcome: Outcome) -> bool:
        """Whether `outcome` shows the same failure as `original` (no slippage)."""
        return outcome.verdict is Verdict.BAD and (
            self.any_failure or signature_matches(original.signature, outcome.signature)
        )


@dataclass(frozen=True)
class _Slot:
    """One worker's private scratch dir and everything precomputed for running in it."""

    workdir: Path
    candidate: Path
    output: Path
    argv: tuple[str, ...]
    env: Mapping[str, str]


class Oracle:
    """Runs the test on candidates, up to `jobs` at a time, each in a private scratch dir.

    `run()` is thread-safe. `close()` (idempotent, and safe to call from a
    signal handler in the main thread) kills every running test's process
    group and removes all scratch dirs; runs in flight then raise
    `OracleClosed` promptly, and so do later calls. A spec without a timeout
    runs with `PROVISIONAL_TIMEOUT`.
    """

    def __init__(self, spec: TestSpec, jobs: int, scratch_root: Path | None = None) -> None:
        if jobs < 1:
            raise ValueError(f"jobs must be at least 1, not {jobs}")
        relative = PurePosixPath(spec.relative_path)
        if relative.is_absolute() or not relative.parts or ".." in relative.parts:
            raise ValueError(f"not a relative path inside the scratch dir: {spec.relative_path!r}")
        self.spec = spec
        self.timeout = spec.timeout if spec.timeout is not None else PROVISIONAL_TIMEOUT
        self._regex = _compile_signature(spec.signature_regex)
        command = _anchored(spec.command, spec.relative_path, Path.cwd())
        environment = {**os.environ, **(spec.env or {})}
        self._root = Path(tempfile.mkdtemp(prefix="gitreduce-", dir=scratch_root)).resolve()
        self._slots = [
            self._make_slot(index, relative, command, environment) for index in range(jobs)
        ]
        self._free = list(self._slots)
        # Re-entrant so that close() from a signal handler cannot deadlock
        # against the main thread holding the lock inside run().
        self._cond = threading.Condition(threading.RLock())
        self._running: set[subprocess.Popen[bytes]] = set()
        self._closed = False

    def _make_slot(
        self, index: int, relative: PurePosixPath, command: str, environment: Mapping[str, str]
    ) -> _Slot:
        workdir = self._root / str(index)
        workdir.mkdir()
        candidate = workdir.joinpath(*relative.parts)
        quoted = shlex.quote(str(candidate))
        return _Slot(
            workdir=workdir,
            candidate=candidate,
            output=self._root / f"{index}.out",
            argv=("/bin/sh", "-c", _PLACEHOLDER.sub(lambda _: quoted, command)),
            env={**environment, "GITREDUCE_FILE": str(candidate)},
        )

    def __enter__(self) -> "Oracle":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def run(self, content: bytes) -> Outcome:
        """Classify one candidate; raises `OracleClosed` if the oracle is or gets closed."""
        return self._execute(content)[0]

    def close(self) -> None:
        """Kill all running tests with their process groups, then delete the scratch root."""
        with self._cond:
            if self._closed:
                return
            self._closed = True
            running = list(self._running)
            # Killed under the lock: run() unregisters a process before reaping
            # it, so no pid here can have been reused by an unrelated process.
            for process in running:
                _kill_group(process.pid)
            self._cond.notify_all()
        for process in running:
            # With a timeout Popen.wait never blocks on its internal lock, which
            # the interrupted main thread may hold.
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=2.0)
        _remove_tree(self._root)

    def _execute(self, content: bytes) -> tuple[Outcome, str]:
        """Like run(), also returning the captured output (for calibration messages)."""
        slot = self._acquire()
        try:
            return self._run_in(slot, content)
        except OSError:
            # close() removed the scratch dir under our feet.
            if self._closed:
                raise OracleClosed from None
            raise
        finally:
            self._release(slot)

    def _acquire(self) -> _Slot:
        with self._cond:
            while not self._closed and not self._free:
                self._cond.wait()
            if self._closed:
                raise OracleClosed
            return self._free.pop()

    def _release(self, slot: _Slot) -> None:
        with self._cond:
            if not self._closed:
                self._free.append(slot)
                self._cond.notify()
                return
        # close() may have raced with this run writing into the slot; whoever
        # is last removes what is left.
        _remove_tree(slot.workdir)
        with contextlib.suppress(OSError):
            slot.output.unlink()
        with contextlib.suppress(OSError):
            self._root.rmdir()

    def _run_in(self, slot: _Slot, content: bytes) -> tuple[Outcome, str]:
        _empty(slot.workdir)
        # Parents one by one, never parents=True: that would resurrect a
        # scratch root that close() has just removed.
        for parent in reversed(slot.candidate.relative_to(slot.workdir).parents[:-1]):
            (slot.workdir / parent).mkdir()
        slot.candidate.write_bytes(content)
        # A file rather than pipes: a stray background child holding a pipe
        # open would make us wait for it; a file is read once sh has exited.
        with open(slot.output, "w+b") as out:
            start = time.monotonic()
            process = subprocess.Popen(
                slot.argv,
                cwd=slot.workdir,
                env=slot.env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            finished = self._wait(process)
            seconds = time.monotonic() - start
            output = _read_capped(out)
        if self._closed:
            raise OracleClosed
        output = output.replace(f"{slot.workdir}{os.sep}", "").replace(str(slot.workdir), ".")
        if not finished:
            return Outcome(Verdict.TIMEOUT, None, seconds), output
        code = process.returncode
        verdict = _classify(self.spec.polarity, code)
        signature = self._signature(code, output) if verdict is Verdict.BAD else None
        return Outcome(verdict, code, seconds, signature), output

    def _wait(self, process: subprocess.Popen[bytes]) -> bool:
        """Wait for the test within the timeout; True if it exited by itself.

        Either way its whole process group is killed afterwards, so that
        background children cannot outlive the run and write into the slot.
        """
        pidfd = _pidfd(process.pid)  # before anyone else could reap the pid
        try:
            with self._cond:
                if self._closed:
                    _kill_group(process.pid)
                    process.wait()
                    raise OracleClosed
                self._running.add(process)
            try:
                if pidfd is None:
                    process.wait(self.timeout)
                    return True
                poller = select.poll()
                poller.register(pidfd, select.POLLIN)
                return bool(poller.poll(math.ceil(self.timeout * 1000)))
            except subprocess.TimeoutExpired:
                return False
            finally:  # also on KeyboardInterrupt: never leave a test running
                _kill_group(process.pid)
                with self._cond:
                    self._running.discard(process)
                process.wait()
        finally:
            if pidfd is not None:
                os.close(pidfd)

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


def calibrate(
    spec: TestSpec, content: bytes, expect: Verdict, jobs: int = 1
) -> tuple[TestSpec, Outcome]:
    """Check that the test classifies the original input as `expect`, reliably.

    Runs the test on `content` twice (at the same time when `jobs` >= 2, which
    also exposes tests that trip over their own parallel copies). Returns the
    spec with its timeout set (kept if given, else ten times the slower run,
    at least one second) and the first outcome, whose signature is the one
    every candidate must reproduce. Raises `UserError` when the test cannot
    serve as an oracle.
    """
    _require_executable(spec.command)
    provisional = replace(spec, timeout=spec.timeout or PROVISIONAL_TIMEOUT)
    with Oracle(provisional, jobs=min(jobs, 2)) as oracle:
        if jobs >= 2:
            pool = ThreadPoolExecutor(2)
            try:
                (first, output), (second, _) = pool.map(oracle._execute, [content, content])
            except BaseException:
                oracle.close()  # Ctrl-C: kill the tests now, not after they finish
                raise
            finally:
                pool.shutdown(wait=False)
            _require_runnable(spec, first, output, oracle.timeout)
        else:
            first, output = oracle._execute(content)
            _require_runnable(spec, first, output, oracle.timeout)
            second, _ = oracle._execute(content)
    if first.verdict is not second.verdict:
        raise UserError(
            f"flaky test: the original input was classified {first.verdict.value} then "
            f"{second.verdict.value}; make the test deterministic"
        )
    if not spec.any_failure and first.signature != second.signature:
        raise UserError(
            f"flaky test: the original input failed as {first.signature!r} then as "
            f"{second.signature!r}; make the test deterministic, or pass a signature "
            "pattern or --any-failure"
        )
    if first.verdict is not expect:
        excerpt = _last_line(output)
        wanted = expect.value
        if spec.polarity == "interesting" and expect is Verdict.BAD:
            wanted = "interesting"
        raise MisclassifiedOriginal(
            f"the original input is not {wanted} under the test ({_describe(first)})"
            + (f": {excerpt}" if excerpt else "")
        )
    if expect is Verdict.BAD and spec.signature_regex is not None and first.signature is None:
        raise UserError(
            f"the signature pattern {spec.signature_regex!r} matches nothing in the test's "
            "output on the original input"
        )
    timeout = spec.timeout or max(1.0, float(math.ceil(10 * max(first.seconds, second.seconds))))
    return replace(spec, timeout=timeout), first


def _compile_signature(pattern: str | None) -> re.Pattern[str] | None:
    """Multiline, so that `^` and `$` anchor at the output's lines as users expect."""
    if pattern is None:
        return None
    try:
        return re.compile(pattern, re.MULTILINE)
    except re.error as error:
        raise UserError(f"invalid signature pattern {pattern!r}: {error}") from None


def _require_executable(command: str) -> None:
    word = _first_word(command)
    if word is not None and "/" in word:
        path = Path(word).expanduser()
        if path.is_file() and not os.access(path, os.X_OK):
            raise UserError(f"test script {word} is not executable (chmod +x {word})")


def _require_runnable(spec: TestSpec, outcome: Outcome, output: str, timeout: float) -> None:
    if outcome.verdict is Verdict.TIMEOUT:
        raise UserError(f"the test timed out on the original after {timeout:g} s")
    cannot_run = {127: ("not found",), 126: ("permission denied", "cannot execute")}
    markers = cannot_run.get(outcome.exit_code or 0)
    lowered = output.lower()
    if markers is not None and any(marker in lowered for marker in markers):
        word = _first_word(spec.command)
        hint = ""
        if word is not None and "/" not in word and Path(word).is_file():
            hint = f" (to run the file in the current directory, write ./{word})"
        raise UserError(
            f"the test command could not run (exit {outcome.exit_code}): {_last_line(output)}{hint}"
        )


def _describe(outcome: Outcome) -> str:
    if outcome.exit_code is not None and outcome.exit_code < 0:
        try:
            return f"killed by {signal.Signals(-outcome.exit_code).name}"
        except ValueError:
            return f"killed by signal {-outcome.exit_code}"
    return f"exit {outcome.exit_code}"


def _last_line(output: str, limit: int = 200) -> str:
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    if not lines:
        return ""
    return lines[-1] if len(lines[-1]) <= limit else lines[-1][: limit - 3] + "..."


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


def _words(command: str) -> list[str]:
    try:
        return shlex.split(command)
    except ValueError:  # unbalanced quotes: sh will complain, we only look
        return command.split()


def _first_word(command: str) -> str | None:
    return next((word for word in _words(command) if not _ASSIGNMENT.match(word)), None)


def _named_files(command: str, relative_path: str) -> list[Path]:
    """Existing files the command names, except the candidate (which lives in the scratch dir)."""
    files: dict[Path, None] = {}
    for word in _words(command):
        if "{}" in word or word == relative_path:
            continue
        path = Path(word).expanduser()
        if path.is_file():
            files[path.resolve()] = None
    return list(files)


def _anchored(command: str, relative_path: str, base: Path) -> str:
    """The command with a relative test script path made absolute.

    Only the script word is touched: other relative words may well name files
    the test creates in the scratch dir (`./a.out`), or the candidate itself.
    """
    words = list(re.finditer(r"\S+", command))
    index = next((i for i, m in enumerate(words) if not _ASSIGNMENT.match(m.group())), None)
    if index is None:
        return command
    targets = [words[index]] if "/" in words[index].group() else []
    if _INTERPRETER.fullmatch(os.path.basename(words[index].group())):
        script = next((m for m in words[index + 1 :] if not m.group().startswith("-")), None)
        if script is not None:
            targets.append(script)
    for match in reversed(targets):
        word = match.group()
        if (
            _PLAIN_WORD.fullmatch(word)
            and not os.path.isabs(word)
            and word != relative_path
            and (base / word).is_file()
        ):
            absolute = shlex.quote(os.path.normpath(base / word))
            command = command[: match.start()] + absolute + command[match.end() :]
    return command


def _pidfd(pid: int) -> int | None:
    """A pollable handle on the child (Linux): waking exactly at its exit, unlike Popen.wait's
    sleep-polling, keeps per-run overhead low for fast tests."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _read_capped(out: IO[bytes]) -> str:
    size = os.fstat(out.fileno()).st_size
    out.seek(0)
    if size <= _HEAD_BYTES + _TAIL_BYTES:
        data = out.read()
    else:
        head = out.read(_HEAD_BYTES)
        head = head[: head.rfind(b"\n") + 1] or head
        out.seek(size - _TAIL_BYTES)
        tail = out.read(_TAIL_BYTES)
        tail = tail[tail.find(b"\n") + 1 :]
        omitted = size - len(head) - len(tail)
        data = head + f"[... {omitted} bytes omitted ...]\n".encode() + tail
    return data.decode("utf-8", "replace")


def _empty(directory: Path) -> None:
    """Remove what the previous run left in a slot; cheaper than recreating the dir."""
    try:
        _remove_entries(directory)
    except PermissionError:  # the test made something read-only
        _make_writable(directory)
        _remove_entries(directory)


def _remove_entries(directory: Path) -> None:
    with os.scandir(directory) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path)
            else:
                os.unlink(entry.path)


def _remove_tree(path: Path) -> None:
    """Best-effort removal: called while shutting down, where raising helps nobody."""
    try:
        shutil.rmtree(path)
    except PermissionError:
        with contextlib.suppress(OSError):
            _make_writable(path)
        shutil.rmtree(path, ignore_errors=True)
    except OSError:
        shutil.rmtree(path, ignore_errors=True)


def _make_writable(path: Path) -> None:
    pending = [str(path)]
    while pending:
        directory = pending.pop()
        os.chmod(directory, stat.S_IRWXU)
        with os.scandir(directory) as entries:
            pending.extend(e.path for e in entries if e.is_dir(follow_symlinks=False))
