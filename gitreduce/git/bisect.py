"""Find the first bad version of a file by binary search, the way `git bisect run` does.

`first_bad` is the pure algorithm over any sequence; `bisect_path` is the small
adapter that feeds it the versions of one path along GOOD..BAD, read from the
object store (no checkout), and words the outcome like git.

Contract of `first_bad`: versions[0] is known good and versions[-1] known bad
(the caller has already classified both; they are never tested again). The
search keeps the invariant "`good` is good, `bad` is bad, good < bad" and
tests a version strictly between them, the one nearest the middle that is not
known to be untestable. GOOD moves `good` up, BAD moves `bad` down, SKIP (exit
125) and TIMEOUT mark the version untestable so the next pick steps around
it. It stops when nothing testable is left between the two: then
`bad == good + 1` (the first bad version, exact) or everything between is
skipped, and the first bad version is one of those skipped versions or `bad`
(git: "The first bad commit could be any of"). Either way (versions[good],
versions[bad]) is a pair known good and bad. With nothing skipped it runs
ceil(log2(len - 1)) tests at most, each skip costing one more.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import pygit2

from gitreduce.core.errors import UserError
from gitreduce.core.outcome import Verdict
from gitreduce.git.revisions import BINARY_PROBE, blob_id_at, commits_changing, resolve_commit

T = TypeVar("T")

_UNTESTABLE = (Verdict.SKIP, Verdict.TIMEOUT)


class BisectAborted(Exception):
    """The test broke (exit >= 128) on a version: like `git bisect run`, stop rather than guess."""

    def __init__(self, index: int, verdict: Verdict) -> None:
        super().__init__(f"the test broke on version {index} ({verdict.value})")
        self.index = index
        self.verdict = verdict


@dataclass(frozen=True)
class BisectResult:
    """Where the search ended: `good` < `bad` are indices known good and bad."""

    good: int
    bad: int
    skipped: tuple[int, ...]  # every index strictly between good and bad: all untestable
    tests: int
    log: tuple[tuple[int, Verdict], ...]  # (index, verdict) in the order tested

    @property
    def exact(self) -> bool:
        return self.bad == self.good + 1

    @property
    def first_bad(self) -> int | None:
        """The first bad index, or None when skips leave it ambiguous (see `suspects`)."""
        return self.bad if self.exact else None

    @property
    def suspects(self) -> tuple[int, ...]:
        """The indices that may be the first bad one: just `bad` when exact."""
        return (*self.skipped, self.bad)


def first_bad(
    versions: Sequence[T],
    classify: Callable[[T], Verdict],
    on_result: Callable[[int, Verdict], None] | None = None,
) -> BisectResult:
    """Binary search for the first bad version; see the module docstring for the contract.

    `classify` returns GOOD, BAD, SKIP or TIMEOUT (both: untestable); BROKEN
    raises `BisectAborted`. `on_result(index, verdict)` hears every test.
    """
    if len(versions) < 2:
        raise ValueError("bisect needs a good and a bad version")
    good, bad = 0, len(versions) - 1
    untestable: set[int] = set()
    log: list[tuple[int, Verdict]] = []
    while True:
        candidates = [i for i in range(good + 1, bad) if i not in untestable]
        if not candidates:
            break
        middle = (good + bad) / 2
        pick = min(candidates, key=lambda i: (abs(i - middle), i))
        verdict = classify(versions[pick])
        log.append((pick, verdict))
        if on_result is not None:
            on_result(pick, verdict)
        if verdict is Verdict.GOOD:
            good = pick
        elif verdict is Verdict.BAD:
            bad = pick
        elif verdict in _UNTESTABLE:
            untestable.add(pick)
        else:
            raise BisectAborted(pick, verdict)
    return BisectResult(good, bad, tuple(range(good + 1, bad)), len(log), tuple(log))


@dataclass(frozen=True)
class PathBisect:
    """The outcome of bisecting the versions of one path, in commits."""

    path: str
    commits: tuple[pygit2.Commit, ...]  # GOOD, then each commit that changed `path`
    result: BisectResult

    @property
    def seed_commit(self) -> pygit2.Commit:
        """A commit holding the last good version: the first bad commit's parent's version."""
        return self.commits[self.result.good]

    @property
    def variant_commit(self) -> pygit2.Commit:
        """The first bad commit when exact, else the first commit known bad."""
        return self.commits[self.result.bad]

    @property
    def first_bad_commit(self) -> pygit2.Commit | None:
        index = self.result.first_bad
        return self.commits[index] if index is not None else None

    def report(self) -> list[str]:
        """What `git bisect run` prints at the end, line by line."""
        if self.result.exact:
            commit = self.variant_commit
            return [f"{commit.id} is the first bad commit", f"    {_subject(commit)}"]
        return [
            "There are only 'skip'ped commits left to test.",
            "The first bad commit could be any of:",
            *(str(self.commits[index].id) for index in self.result.suspects),
            "We cannot bisect more!",
        ]


def _subject(commit: pygit2.Commit) -> str:
    return commit.message.partition("\n")[0]


def bisect_path(
    repo: pygit2.Repository,
    good: str,
    bad: str,
    path: str,
    classify: Callable[[bytes], Verdict],
    echo: Callable[[str], None] | None = None,
) -> PathBisect:
    """Bisect the versions of `path` (repository-relative) along GOOD..BAD's first-parent history.

    GOOD and BAD themselves must already be classified good and bad by the
    caller; they are not tested here. A version where `path` is absent or
    binary counts as SKIP without running the test. `echo` hears one line
    per test ("<sha> good|bad|skip|timeout  <subject>").
    """
    commits = (resolve_commit(repo, good), *commits_changing(repo, good, bad, path))

    def classify_commit(commit: pygit2.Commit) -> Verdict:
        if blob_id_at(commit, path) is None:
            return Verdict.SKIP
        entry = commit.tree[path]
        if not isinstance(entry, pygit2.Blob) or b"\0" in entry.data[:BINARY_PROBE]:
            return Verdict.SKIP
        return classify(entry.data)

    def tell(index: int, verdict: Verdict) -> None:
        if echo is not None:
            commit = commits[index]
            echo(f"{str(commit.id)[:12]} {verdict.value:<7} {_subject(commit)}")

    try:
        result = first_bad(commits, classify_commit, tell)
    except BisectAborted as stop:
        commit = commits[stop.index]
        raise UserError(
            f"bisect stopped: the test itself broke ({stop.verdict.value}) at {commit.id}"
        ) from None
    return PathBisect(path, commits, result)
