"""Shared helpers: in-process reductions with plain predicates, tree-sitter queries, and
test scripts on disk, and scratch git repositories with verdict caches for the git layer's
tests."""

from __future__ import annotations

import hashlib
import itertools
import os
import pty
import re
import select
import shutil
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pygit2
import pytest
import tree_sitter

from gitreduce.core import tickets
from gitreduce.core.current import Current
from gitreduce.core.engine import Engine
from gitreduce.core.outcome import Outcome, Verdict
from gitreduce.core.stats import Stats
from gitreduce.git.verdicts import GitVerdictCache
from gitreduce.lang import grammars
from gitreduce.lang.syntax import Syntax
from gitreduce.pair.alignment import Alignment
from gitreduce.pair.current import PairCurrent
from gitreduce.pair.state import PairState
from gitreduce.passes.schedule import reduce_program

Predicate = Callable[[bytes], bool]
# The machine's C compiler, the real test of the passes' end-to-end checks.
GCC = shutil.which("gcc-12") or shutil.which("gcc")
# The schedule but its one pass that tests candidates the syntax check rejects: for
# properties of the check (every tested candidate parses).
GATED_ONLY = ("lenient",)


@dataclass
class Reduction:
    """What one in-process reduction did."""

    text: bytes
    stats: Stats
    tested: list[bytes] = field(default_factory=list)
    accepted: list[bytes] = field(default_factory=list)
    passes: list[str] = field(default_factory=list)  # the pass that found each accepted text


def make_engine(
    predicate: Predicate,
    jobs: int,
    tested: list[bytes] | None = None,
    skipped_passes: tuple[str, ...] = (),
) -> Engine:
    lock = threading.Lock()

    def run_test(text: bytes) -> Outcome:
        if tested is not None:
            with lock:
                tested.append(text)
        if predicate(text):
            return Outcome(Verdict.BAD, 1, 0.0, "exit 1")
        return Outcome(Verdict.GOOD, 0, 0.0)

    return Engine(
        run_test,
        lambda outcome: outcome.verdict is Verdict.BAD,
        jobs=jobs,
        skipped_passes=skipped_passes,
    )


def reduce_text(
    text: bytes,
    language: str | None,
    predicate: Predicate,
    *,
    jobs: int = 1,
    skipped_passes: tuple[str, ...] = (),
) -> Reduction:
    """Run the whole single-program schedule on `text` (no grammar when `language` is None),
    but the passes named in `skipped_passes`."""
    assert predicate(text), "the original must be interesting"
    tested: list[bytes] = []
    accepted: list[bytes] = []
    passes: list[str] = []
    engine = make_engine(predicate, jobs, tested, skipped_passes)
    grammar = grammars.load(language) if language else None
    if language:
        assert grammar is not None, language
    syntax = Syntax(grammar, text) if grammar else None

    def on_change(now: Current) -> None:
        accepted.append(now.text)
        passes.append(now.label)

    current = Current(text, engine, syntax, on_change)
    try:
        reduce_program(current)
    finally:
        engine.close()
    return Reduction(current.text, engine.stats, tested, accepted, passes)


def current_for(text: bytes, language: str, predicate: Predicate = lambda text: True) -> Current:
    grammar = grammars.load(language)
    assert grammar is not None
    return Current(text, make_engine(predicate, jobs=1), Syntax(grammar, text))


def derived(
    candidates_of: Callable[[Current], Iterable[bytes]], text: bytes, language: str
) -> list[bytes]:
    """What a pass's candidate generator derives from `text`, as plain bytes."""
    current = current_for(text, language)
    try:
        return [bytes(candidate) for candidate in candidates_of(current)]
    finally:
        current.engine.close()


def bisect_pair(
    seed: bytes,
    variant: bytes,
    grammar: grammars.Grammar,
    engine: Engine,
    *,
    syntax: bool = True,
) -> PairCurrent:
    """The pair as `git bisect run` judges it: the seed good, the variant bad (`syntax`:
    with the variant's syntax check, or none)."""
    return PairCurrent(
        PairState.full(Alignment.of(seed, variant, grammar)),
        engine,
        Syntax(grammar, variant) if syntax else None,
        lambda outcome: outcome.verdict is Verdict.GOOD,
        lambda outcome: outcome.verdict is Verdict.BAD,
    )


class LookaheadLog(Engine):
    """An engine that notes, for every batch, the pass it is for, what was read from it,
    the start of its lookahead, whether it had a winner, and the start of what its caller
    said it tries after that winner."""

    def __init__(self, predicate: Predicate) -> None:
        def run_test(text: bytes) -> Outcome:
            return Outcome(Verdict.BAD if predicate(text) else Verdict.GOOD, 0, 0.0)

        super().__init__(run_test, lambda outcome: outcome.verdict is Verdict.BAD, jobs=1)
        self.batches: list[tuple[str, list[bytes], list[bytes] | None, bool]] = []
        self.after_winners: list[list[bytes] | None] = []

    def first_judged(self, candidates, judge, *, label, lookahead=None, after=None):
        read: list[bytes] = []

        def reading():
            for candidate in candidates:
                read.append(bytes(candidate))
                yield candidate

        ahead = None
        if lookahead is not None:
            ahead = [bytes(text) for text in itertools.islice(lookahead(), 12)]
        found = super().first_judged(reading(), judge, label=label)
        self.batches.append((label, read, ahead, found is not None))
        following = None
        if found is not None and after is not None:
            following = [bytes(text) for text in itertools.islice(after(found[0]), 12)]
        self.after_winners.append(following)
        return found

    def afters_compared(self) -> dict[str, int]:
        """Asserts that after every batch with a winner, the candidates read next begin
        with what its caller said it tries after that winner, byte for byte; returns how
        many candidates were compared, by pass."""
        compared: dict[str, int] = {}
        for position, following in enumerate(self.after_winners):
            if following is None or position + 1 == len(self.batches):
                continue
            label = self.batches[position][0]
            read = self.batches[position + 1][1]
            length = min(len(following), len(read))
            assert read[:length] == following[:length], (position, label)
            compared[label] = compared.get(label, 0) + length
        return compared

    def lookaheads_compared(self) -> dict[str, int]:
        """Asserts that after every batch that took nothing, the candidates read next
        (until one is taken) begin with the batch's lookahead, byte for byte; returns how
        many candidates were compared, by pass."""
        compared: dict[str, int] = {}
        for position, (label, _, ahead, won) in enumerate(self.batches):
            if ahead is None or won:
                continue
            following: list[bytes] = []
            for _, read, _, later_won in self.batches[position + 1 :]:
                following.extend(read)
                if later_won or len(following) >= len(ahead):
                    break
            length = min(len(ahead), len(following))
            assert following[:length] == ahead[:length], (position, label)
            compared[label] = compared.get(label, 0) + length
        return compared


LOOKAHEAD_PROGRAMS = {
    "c": b"""int g(int x) { return x * 2 + 1; }
int h(int y, int z) { if (y > z) { return y - z; } return g(z) + y; }
int main(void) {
    int a = 1, b = 2, c = 3;
    for (int i = 0; i < 3; i++) { a += h(b, c) * i; }
    return a + b + c + g(a);
}
""",
    "python": b"""def g(x):
    return x * 2 + 1

def h(y, z):
    if y > z:
        return y - z
    return g(z) + y

def main():
    a, b, c = 1, 2, 3
    for i in range(3):
        a += h(b, c) * i
    return a + b + c + g(a)
""",
}


def replayed(language: str) -> LookaheadLog:
    """A whole reduction of the language's lookahead program at one job, logged; the test
    wants the calls of `h` and `g` kept."""
    return logged_reduction(
        language,
        LOOKAHEAD_PROGRAMS[language],
        lambda text: parses_cleanly(language, text) and b"h(" in text and b"g(" in text,
    )


def logged_reduction(language: str, program: bytes, predicate: Predicate) -> LookaheadLog:
    """A whole reduction of `program` at one job under `predicate`, logged."""
    engine = LookaheadLog(predicate)
    try:
        reduce_program(Current(program, engine, Syntax(grammars.load(language), program)))
    finally:
        engine.close()
    return engine


def parser(language: str) -> tree_sitter.Parser:
    grammar = grammars.load(language)
    assert grammar is not None
    return grammar.parser()


def parses_cleanly(language: str, text: bytes) -> bool:
    return not parser(language).parse(text).root_node.has_error


def nodes(language: str, text: bytes) -> list[tree_sitter.Node]:
    tree = parser(language).parse(text)
    found, pending = [], [tree.root_node]
    while pending:
        node = pending.pop()
        found.append(node)
        pending.extend(reversed(node.children))
    return found


CALL_KINDS = {"call_expression", "call"}


def calls(language: str, name: bytes) -> Predicate:
    """'parses without errors and contains a call of `name`'."""

    def predicate(text: bytes) -> bool:
        tree = parser(language).parse(text)
        if tree.root_node.has_error:
            return False
        pending = [tree.root_node]
        while pending:
            node = pending.pop()
            if node.type in CALL_KINDS:
                function = node.child_by_field_name("function")
                if function is not None and function.text == name:
                    return True
            pending.extend(node.children)
        return False

    return predicate


def run_on_a_terminal(
    args: list[str], cwd: Path, env: dict[str, str], columns: int
) -> tuple[int, str]:
    """Run with stderr on a pseudo-terminal `columns` wide; its exit status and what it drew."""
    controller, terminal = pty.openpty()
    child = subprocess.Popen(
        args,
        cwd=cwd,
        env=env | {"COLUMNS": str(columns), "LINES": "50", "TERM": "xterm-256color"},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=terminal,
    )
    os.close(terminal)
    chunks: list[bytes] = []
    try:
        while True:
            ready, _, _ = select.select([controller], [], [], 300)
            if not ready:
                child.kill()
                raise AssertionError("no output from the terminal run for 300 s")
            try:
                chunk = os.read(controller, 65536)
            except OSError:  # EIO: the child closed its end
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(controller)
    return child.wait(timeout=60), b"".join(chunks).decode(errors="replace")


def script(path: Path, body: str, executable: bool = True) -> Path:
    """A shell script at `path` running `body`, executable unless told otherwise."""
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755 if executable else 0o644)
    return path


# -- scratch git repositories and verdict caches ----------------------------------------

PACKAGE_ROOT = Path(__file__).resolve().parents[1]
FINGERPRINT = hashlib.sha1(b"test fingerprint").hexdigest()


def git_env() -> dict[str, str]:
    """git with no user or system config, and a fixed identity."""
    env = dict(os.environ)
    env.update(
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_CONFIG_NOSYSTEM="1",
        GIT_OPTIONAL_LOCKS="0",  # `git status` must not refresh the index we compare
        GIT_AUTHOR_NAME="Ada Tester",
        GIT_AUTHOR_EMAIL="ada@example.com",
        GIT_COMMITTER_NAME="Ada Tester",
        GIT_COMMITTER_EMAIL="ada@example.com",
        PYTHONPATH=str(PACKAGE_ROOT),
    )
    return env


def git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    process = subprocess.run(
        ["git", *args], cwd=cwd, env=git_env(), capture_output=True, text=True, check=False
    )
    if check and process.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed:\n{process.stderr}")
    return process


def fsck_clean(path: Path) -> None:
    process = git(path, "fsck", "--full", "--strict", check=False)
    assert process.returncode == 0, process.stdout + process.stderr
    assert "error" not in process.stderr.lower(), process.stderr
    assert "missing" not in process.stdout + process.stderr


def isolate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A private verdict cache, and a cwd that has nothing to do with the inputs: a session
    reuses no verdict of another test, and finds no repository or file by the cwd."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)


def make_user_repo(path: Path) -> Path:
    """A working repository with history, a staged change, an edit and an untracked file."""
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    (path / "src").mkdir()
    (path / "src" / "prog.c").write_text("int main(void) { return 0; }\n")
    (path / "README").write_text("hello\n")
    git(path, "add", ".")
    git(path, "commit", "-q", "-m", "first")
    (path / "README").write_text("hello again\n")
    git(path, "commit", "-q", "-am", "second")
    git(path, "branch", "topic")
    (path / "README").write_text("staged\n")
    git(path, "add", "README")
    (path / "src" / "prog.c").write_text("int main(void) { return 1; }\n")
    (path / "untracked.txt").write_text("mine\n")
    return path


def outcome_for(index: int) -> Outcome:
    kinds = [
        Outcome(Verdict.GOOD, 0, 0.25),
        Outcome(Verdict.BAD, 1, 1.5, "internal compiler error: in f, at g.c"),
        Outcome(Verdict.SKIP, 125, 0.125),
        Outcome(Verdict.TIMEOUT, None, 10.0),
        Outcome(Verdict.BAD, 139, 0.5, "panic: ünïcode — message"),
    ]
    return kinds[index % len(kinds)]


def quiet_cache(repo: pygit2.Repository, **options: float) -> GitVerdictCache:
    """A cache whose background checkpoints never fire on their own: the test decides."""
    settings: dict[str, float] = {"checkpoint_seconds": 3600, "checkpoint_verdicts": 10**9}
    settings.update(options)
    return GitVerdictCache(repo, FINGERPRINT, **settings)  # type: ignore[arg-type]


# -- processes, as /proc shows them ----------------------------------------------------


def processes() -> dict[int, tuple[str, int, int, bytes]]:
    """Every process: pid -> (state, parent, process group, command line)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        found[int(entry.name)] = (fields[0], int(fields[1]), int(fields[2]), command)
    return found


def group_members(groups: set[int]) -> list[int]:
    """Live (not zombie) processes whose process group is one of `groups`."""
    return [
        pid for pid, (state, _, group, _) in processes().items() if group in groups and state != "Z"
    ]


def sleep_marker() -> str:
    """A number to run as `sleep 1000 MARKER`: GNU sleep adds it to its 1000 seconds, and
    `sleeping` tells that process apart from every other."""
    return f"0.{uuid.uuid4().int % 10**12:012d}1"


def sleeping(marker: str) -> list[int]:
    """Live `sleep 1000 MARKER` processes."""
    command = b"sleep\x001000\x00" + marker.encode() + b"\x00"
    return [
        pid for pid, (state, _, _, cmd) in processes().items() if cmd == command and state != "Z"
    ]


def eventually(condition: Callable[[], object], within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def gcc(path: Path, text: bytes, *flags: str) -> subprocess.CompletedProcess[bytes]:
    """`text` written to `path` and compiled by gcc with `flags`: a real compiler as the
    test of an in-process reduction."""
    path.write_bytes(text)
    return subprocess.run([GCC or "gcc", *flags, str(path)], capture_output=True)


def run_until_abandoned(seconds: float = 30.0) -> None:
    """An in-process test that lasts until its judgement is given up (at most `seconds`),
    then says so as the oracle would; returns if it was not."""
    ticket = tickets.current()
    assert ticket is not None
    stopped = threading.Event()
    with ticket.stoppable(stopped.set):
        stopped.wait(seconds)
    if ticket.abandoned:
        raise tickets.Abandoned


def increments_itself(text: bytes) -> bool:
    """Whether `text` still assigns a variable its own post-increment (`count = count++`),
    whatever the rename pass called the variable."""
    return re.search(rb"\b(\w+) = \1\+\+", text) is not None
