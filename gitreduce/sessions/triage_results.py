"""What becomes of a triage's finding: its result taken from an earlier triage's record or
from its child reduction's end, saved as a record, and noted on its commit.

Job: settle each finding from what is known. Before anything runs, a finding
an earlier triage settled for the same test takes over that record (if its
result branch still holds the recorded commits); when a child reduction
ends, its exit code and `--json` summary say the finding's status and
figures, and the reduced pair and diff are read back from the result commits.
A settled finding's record is written after its result branch, and a
finding's commit gets the note the post-commit hook writes.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from pathlib import PurePosixPath

import pygit2

from gitreduce.git import triage_records as records
from gitreduce.sessions.batch import Ended
from gitreduce.sessions.triage_findings import TriageJob, TriageSettings
from gitreduce.sessions.triage_state import (
    FAILED,
    INTERRUPTED,
    NOT_REPRODUCED,
    NOT_RUN,
    REDUCED,
    SETTLED,
    FindingResult,
    TriageState,
)

_REFUSED = 2  # `git reduce`'s exit code for an input or a test it cannot use
_INTERRUPTED_EXIT = 130


def settle_known(repo: pygit2.Repository, jobs: list[TriageJob], settings: TriageSettings) -> None:
    """Take over what earlier triages settled for the same test; write not-run notes."""
    for job in jobs:
        result = job.result
        if result.status == NOT_RUN:
            if result.commit is not None and result.reason is not None:
                _note_once(repo, result.commit, _not_run_note(result))
            continue
        record = records.load_record(repo, result.key)
        if record is None or record.get("fingerprint") != result.fingerprint:
            continue
        status = record.get("status")
        if status not in SETTLED or (settings.retry and status != REDUCED):
            continue
        if status == REDUCED and not _branch_holds(repo, result.branch, record.get("commits")):
            continue  # the branch was deleted or moved since: redo (from the cache)
        _take_record(result, record)
        _take_reduced(repo, result)


def _take_record(result: FindingResult, record: dict[str, object]) -> None:
    for name in (
        "status",
        "reason",
        "signature",
        "commits",
        "seed_tokens",
        "variant_tokens",
        "diff_tokens",
        "diff",
        "report",
    ):
        if name in record:
            setattr(result, name, record[name])
    wall = record.get("wall_seconds")
    result.wall_seconds = float(wall) if isinstance(wall, int | float) else 0.0


def _branch_holds(repo: pygit2.Repository, branch: str | None, commits: object) -> bool:
    if branch is None or not isinstance(commits, list) or not commits:
        return False
    reference = repo.references.get(f"refs/heads/{branch}")
    return reference is not None and str(reference.target) == commits[-1]


def conclude(repo: pygit2.Repository, job: TriageJob, ended: Ended, state: TriageState) -> None:
    """What the child's end means for its finding: status, figures, record and note."""
    result = job.result
    summary = ended.summary or {}
    result.wall_seconds = ended.seconds
    tests, hits = summary.get("tests_run"), summary.get("cache_hits")
    result.tests_run = tests if isinstance(tests, int) else 0
    result.cache_hits = hits if isinstance(hits, int) else 0
    state.tests_done += result.tests_run
    if ended.code in (0, _INTERRUPTED_EXIT) and summary:
        _take_summary(result, summary)
        _take_reduced(repo, result)
        result.status = REDUCED if ended.code == 0 else INTERRUPTED
        if result.status == INTERRUPTED:
            result.reason = "interrupted; a rerun resumes from the cached verdicts"
    elif ended.code == _INTERRUPTED_EXIT:
        result.status, result.reason = INTERRUPTED, "interrupted before its first result"
    elif ended.code == _REFUSED and _misclassified(ended.error):
        result.status, result.reason = NOT_REPRODUCED, _without_prefix(ended.error)
    else:
        result.status = FAILED
        result.reason = f"git reduce exited with {ended.code}: {_without_prefix(ended.error)}"
    if result.status in SETTLED:
        records.save_record(repo, result.key, result.record())
    if result.commit is not None:
        _note_once(repo, result.commit, _note(repo, result))


def _take_summary(result: FindingResult, summary: dict[str, object]) -> None:
    for name in ("seed_tokens", "variant_tokens", "diff_tokens"):
        value = summary.get(name)
        if isinstance(value, list):
            setattr(result, name, value)
    signature = summary.get("signature")
    if isinstance(signature, str):
        result.signature = signature
    commits = summary.get("commits")
    if isinstance(commits, list):
        result.commits = [str(commit) for commit in commits]
    branch = summary.get("branch")
    result.branch = branch if isinstance(branch, str) else result.branch


def _take_reduced(repo: pygit2.Repository, result: FindingResult) -> None:
    """The reduced pair and its unified diff, from the result commits (in the repository
    they were recorded in). For a finding of several files, the diff between the reduced
    sets, file by file, as `git show` of the result branch has it."""
    if len(result.commits) != 2:
        return
    commits: list[pygit2.Commit] = []
    for commit_id in result.commits:
        try:
            commit = repo.get(commit_id)
        except ValueError:
            commit = None
        if not isinstance(commit, pygit2.Commit):
            return
        commits.append(commit)
    if result.path is None:
        if len(result.paths) > 1:
            result.diff = repo.diff(commits[0], commits[1]).patch or ""
        return
    texts: list[str] = []
    for version in commits:
        blob = next(_blobs(repo, version.tree), None)
        if blob is None:
            return
        texts.append(blob.data.decode("utf-8", "replace"))
    result.reduced = (texts[0], texts[1])
    name = PurePosixPath(result.path).name
    lines = difflib.unified_diff(
        texts[0].splitlines(keepends=True),
        texts[1].splitlines(keepends=True),
        f"a/{name}",
        f"b/{name}",
    )
    result.diff = "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def _blobs(repo: pygit2.Repository, tree: pygit2.Tree) -> Iterator[pygit2.Blob]:
    """The blobs of a result commit's tree (it holds one file, maybe under directories)."""
    for entry in tree:
        obj = repo.get(entry.id)
        if isinstance(obj, pygit2.Blob):
            yield obj
        elif isinstance(obj, pygit2.Tree):
            yield from _blobs(repo, obj)


def _misclassified(error: str) -> bool:
    """Whether a refused reduction's reason is the originals' verdicts (see `calibrate_pair`),
    not a problem of the environment that a rerun could find fixed."""
    reason = _without_prefix(error)
    return reason.startswith(("seed:", "variant:")) and "the original input is not" in reason


def _without_prefix(line: str) -> str:
    return line.removeprefix("error:").strip() or "no reason given"


def _note(repo: pygit2.Repository, result: FindingResult) -> str:
    if result.status in (REDUCED, INTERRUPTED) and result.branch is not None:
        text = records.result_note(repo, result.branch, result.status == INTERRUPTED)
        if text is not None:
            return text
    test = f" (gitreduce.test.{result.test_name}.command)" if result.test_name else ""
    return (
        f"git reduce: {result.status.replace('-', ' ')}: {result.label} -- {result.where}\n\n"
        f"{result.reason or ''}\n\nTest: {result.command}{test}\n"
    )


def _not_run_note(result: FindingResult) -> str:
    return (
        f"not run: {result.reason}\n\n"
        "A Reduce-Test: trailer names a test; its command is defined in your git config:\n\n"
        "    git config gitreduce.test.NAME.command 'CMD'\n\n"
        "and the commit says Reduce-Test: NAME. A commit message never says what runs.\n"
    )


def _note_once(repo: pygit2.Repository, sha: str, text: str) -> None:
    """Attach `text` unless the commit's note already says exactly that."""
    try:
        existing = repo.lookup_note(sha, records.NOTES_REF).message
    except (KeyError, pygit2.GitError):
        existing = None
    if existing != text:
        records.attach_note(repo, sha, text)
