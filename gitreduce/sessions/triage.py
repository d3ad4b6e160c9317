"""Triage: many findings reduced a bounded number at a time, then grouped into buckets.

Job: find the findings (commits with a `Reduce-Test:` trailer, see
`git.findings`; or variant files against one seed), skip those a previous
triage settled (its local records, see `git.triage_records`), learn how
each variant fails with one test run (its failure signature), reduce the
rest as child reductions (`batch`), the first finding of every signature
first so the distinct bugs are known early, and write what the hook writes:
the `reduce/<short>` branch and the note. Findings are grouped into buckets
by signature, each with the smallest reduced difference as representative.

Determinism: every finding is an ordinary reduction whose result does not
depend on `--jobs` or on the executor; the order findings run in changes
only when each result is known.

Kill -9, Ctrl-C, then a rerun: a finding is settled only once its record is
written, after its result branch; an interrupted child keeps its verdicts in
the repository's cache, so its rerun resumes instead of starting over.
"""

from __future__ import annotations

import difflib
import hashlib
import os
import re
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import pygit2

from gitreduce.core import fileset
from gitreduce.core.errors import Interrupted, UserError
from gitreduce.core.outcome import Outcome, Verdict
from gitreduce.git import triage_records as records
from gitreduce.git.config import branch_prefix
from gitreduce.git.findings import Finding, commits_in, examine, find_findings
from gitreduce.git.results import result_branch_name
from gitreduce.git.revisions import find_repository
from gitreduce.git.store import Store
from gitreduce.oracle.calibration import cannot_run
from gitreduce.oracle.executor import Executor, opened_executor, parse_executor
from gitreduce.oracle.runner import stop_all
from gitreduce.oracle.spec import TestSpec, anchored
from gitreduce.sessions.batch import Batch, Child, Ended
from gitreduce.sessions.fileset import read_revision_sets
from gitreduce.sessions.interrupts import deferred
from gitreduce.sessions.triage_state import (
    FAILED,
    INTERRUPTED,
    NOT_REPRODUCED,
    NOT_RUN,
    REDUCED,
    SETTLED,
    FindingResult,
    TriageProgress,
    TriageState,
    bucket_key,
)

_REFUSED = 2  # `git reduce`'s exit code for an input or a test it cannot use
_INTERRUPTED_EXIT = 130


@dataclass(frozen=True)
class TriageSettings:
    """`git reduce triage`: which findings, how many at once, where tests run."""

    revisions: str | None = None
    everything: bool = False
    test: str | None = None  # serves commits without a trailer; every variant in --variants
    seed: Path | None = None
    variants: Path | None = None
    output: Path | None = None  # where --variants results are written (default DIR.reduced)
    jobs: int | None = None  # tests per reduction (default: the executor's slots / workers)
    workers: int = 1  # reductions at once
    executor: str = "local"
    timeout: float | None = None
    representatives_first: bool = True
    retry: bool = False  # redo findings settled as not reproduced or failed
    reports: Path | None = None  # a directory for each finding's HTML report
    queue: bool = False  # the findings the post-commit hook queued, until none is left
    directory: Path | None = None


@dataclass
class _Job:
    """A finding with what its reduction needs: inputs for the probe, arguments for the child.

    A finding of several files is probed as the child tests it: `variant` is the
    packed set (`core.fileset`) and `name` the set's name, under `file_set`.
    """

    result: FindingResult
    seed: bytes = b""
    variant: bytes = b""
    argv: list[str] = field(default_factory=list)
    cwd: Path = field(default_factory=Path.cwd)
    name: str = ""
    file_set: bool = False


def triage(settings: TriageSettings, progress: TriageProgress | None = None) -> TriageState:
    """Reduce every unsettled finding, `settings.workers` at a time; the state at the end.

    Ctrl-C (or SIGTERM) stops every running reduction, which keeps its best
    result; the state then says `interrupted`.
    """
    if settings.workers < 1:
        raise UserError(f"--workers must be at least 1, not {settings.workers}")
    choice = parse_executor(settings.executor)
    with (
        deferred() as interrupts,
        opened_executor(choice, workers=None) as executor,
    ):
        base = settings.directory or Path.cwd()
        if settings.variants is not None or settings.seed is not None:
            store, jobs = _variant_jobs(settings, base)
        else:
            repo = find_repository(base)
            store = Store(repo, users=True)
            jobs = _commit_jobs(repo, settings) if not settings.queue else []
        state = TriageState(
            [job.result for job in jobs],
            executor=settings.executor,
            workers=settings.workers,
            jobs=_jobs_per_reduction(settings, executor),
            address=executor.address,
        )
        batch = Batch(settings.workers)
        stopping = _Stopping(batch)
        with interrupts.stopping(stopping.stop):
            try:
                if settings.queue:
                    _drain(store.repo, settings, state, batch, progress)
                else:
                    _settle_known(store.repo, jobs, settings)
                    _report(state, progress)
                    runnable = [job for job in jobs if job.result.status == "queued"]
                    probed = _probe(runnable, executor, state, stopping, settings.timeout)
                    order = _ordered(probed, settings.representatives_first)
                    _run(store.repo, order, settings, state, batch, progress)
            except Interrupted:
                pass
        state.interrupted = stopping.requested or interrupts.requested
        for finding in state.findings:
            if finding.status == "queued" and state.interrupted:
                finding.status = INTERRUPTED
        state.buckets()
        return state


class _Stopping:
    """What an interrupt stops: the batch's children and the probes still to start."""

    def __init__(self, batch: Batch) -> None:
        self.batch = batch
        self.requested = False

    def stop(self) -> None:
        self.requested = True
        self.batch.stop()
        stop_all()  # the probes' oracles


def _jobs_per_reduction(settings: TriageSettings, executor: Executor) -> int:
    if settings.jobs is not None:
        return settings.jobs
    slots = executor.worker_threads() or os.cpu_count() or 1
    return max(1, slots // settings.workers)


def _commit_jobs(repo: pygit2.Repository, settings: TriageSettings) -> list[_Job]:
    commits = commits_in(repo, settings.revisions, settings.everything)
    findings = find_findings(repo, commits, settings.test)
    if not findings:
        raise UserError(
            "no findings: no commit in the range has a Reduce-Test: trailer"
            + ("" if settings.test else " (or give --test CMD to reduce every commit)")
        )
    return [_commit_job(repo, finding, settings) for finding in findings]


def _commit_job(repo: pygit2.Repository, finding: Finding, settings: TriageSettings) -> _Job:
    branch = finding.branch(branch_prefix(repo))
    result = FindingResult(
        key=finding.commit,
        label=finding.short,
        commit=finding.commit,
        path=finding.path,
        paths=list(finding.paths),
        test_name=finding.test_name,
        command=finding.command,
        branch=branch,
    )
    cwd = Path(repo.workdir or repo.path)
    job = _Job(result, cwd=cwd)
    if finding.problem is not None or not finding.paths or finding.command is None:
        result.status, result.reason = NOT_RUN, finding.problem
        return job
    revisions = f"{finding.commit}^..{finding.commit}"
    if finding.path is not None:
        commit = repo.get(finding.commit)
        assert isinstance(commit, pygit2.Commit)
        job.seed = commit.parents[0].tree[finding.path].data
        job.variant = commit.tree[finding.path].data
        job.name = finding.path
    else:
        try:
            sets = read_revision_sets(revisions, finding.paths, cwd, deleted=True)
        except UserError as error:
            result.status, result.reason = NOT_RUN, str(error)
            return job
        job.seed, job.variant = fileset.pack(sets.seed), fileset.pack(sets.variant)
        job.name = PurePosixPath(sets.root).name or PurePosixPath(sets.paths[0]).name
        job.file_set = True
    result.fingerprint = _fingerprint(finding.command, job.name, cwd, job.file_set)
    job.argv = [
        revisions,
        "--",
        *finding.paths,
        "--test",
        finding.command,
        "--no-bisect",
        "--branch",
        branch,
        "--force",
        *_common_options(settings, result, with_report=not job.file_set),
    ]
    return job


def _variant_jobs(settings: TriageSettings, base: Path) -> tuple[Store, list[_Job]]:
    if settings.seed is None or settings.variants is None:
        raise UserError("give both --seed FILE and --variants DIR")
    if settings.test is None:
        raise UserError("--seed/--variants needs the test: --test CMD")
    if settings.revisions is not None or settings.everything:
        raise UserError("give a revision range or --seed/--variants, not both")
    seed_path = (base / settings.seed).resolve()
    if not seed_path.is_file():
        raise UserError(f"{settings.seed}: no such file")
    directory = (base / settings.variants).resolve()
    if not directory.is_dir():
        raise UserError(f"{settings.variants}: not a directory")
    variants = sorted(
        entry for entry in directory.iterdir() if entry.is_file() and not entry.is_symlink()
    )
    if not variants:
        raise UserError(f"{settings.variants}: no variant files in it")
    output = settings.output or directory.with_name(directory.name + ".reduced")
    store = Store.near(seed_path)
    seed = seed_path.read_bytes()
    jobs = []
    for variant_path in variants:
        variant = variant_path.read_bytes()
        digest = hashlib.sha1(b"\0".join([seed, variant, settings.test.encode()])).hexdigest()
        branch = result_branch_name(
            f"{seed_path.stem}-{variant_path.name}", branch_prefix(store.repo)
        )
        result = FindingResult(
            key=digest,
            label=variant_path.name,
            commit=None,
            path=variant_path.name,
            paths=[variant_path.name],
            test_name=None,
            command=settings.test,
            branch=branch,
            fingerprint=_fingerprint(settings.test, seed_path.name, base),
        )
        job = _Job(result, seed=seed, variant=variant, cwd=base, name=variant_path.name)
        job.argv = [
            "--seed",
            str(seed_path),
            "--variant",
            str(variant_path),
            "--test",
            settings.test,
            "--branch",
            branch,
            "--force",
            "--output",
            str(output / variant_path.name),
            *_common_options(settings, result),
        ]
        if variant == seed:
            result.status, result.reason = NOT_RUN, "identical to the seed"
        jobs.append(job)
    return store, jobs


def _common_options(
    settings: TriageSettings, result: FindingResult, with_report: bool = True
) -> list[str]:
    """`--json`, the timeout, and `--html` unless not `with_report` (sets have no such page:
    the index shows their diff)."""
    options = ["--json"]
    if settings.timeout is not None:
        options += ["--timeout", repr(settings.timeout)]
    if settings.reports is not None and with_report:
        report = settings.reports / f"{_file_name(result.label)}.html"
        result.report = str(report)
        options += ["--html", str(report)]
    return options


def _file_name(label: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", label).strip("-.") or "finding"


def _fingerprint(command: str, name: str, cwd: Path, file_set: bool = False) -> str | None:
    """The test's fingerprint as the child keys its cache (None if its script is unreadable)."""
    spec = TestSpec(command=anchored(command, name, cwd), relative_path=name, file_set=file_set)
    try:
        return spec.fingerprint()
    except OSError:
        return None


def _settle_known(repo: pygit2.Repository, jobs: list[_Job], settings: TriageSettings) -> None:
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


def _probe(
    jobs: list[_Job],
    executor: Executor,
    state: TriageState,
    stopping: _Stopping,
    timeout: float | None,
) -> list[_Job]:
    """Run each variant once: its signature buckets it before it is reduced, and a variant
    that does not fail is not reproduced (no reduction is started for it)."""
    if not jobs:
        return []
    parallel = max(1, state.workers * state.jobs)

    def probe(job: _Job) -> Outcome | None:
        if stopping.requested:
            return None
        result = job.result
        assert result.command is not None and job.name
        spec = TestSpec(
            command=anchored(result.command, job.name, job.cwd),
            relative_path=job.name,
            timeout=timeout,
            file_set=job.file_set,
        )
        with executor.runner(spec, 1) as runner:
            outcome, output = runner.run_with_output(job.variant)
        reason = cannot_run(spec, outcome, output)
        if reason is not None:
            raise UserError(f"{result.label} {result.where}: {reason}")
        return outcome

    with ThreadPoolExecutor(parallel, thread_name_prefix="probe") as pool:
        outcomes = list(pool.map(_quiet(probe), jobs))
    if stopping.requested:
        raise Interrupted
    kept = []
    for job, outcome in zip(jobs, outcomes, strict=True):
        if outcome is None:
            continue
        state.tests_done += 1
        if outcome.verdict is Verdict.BAD:
            job.result.signature = outcome.signature
            kept.append(job)
        else:
            job.result.status = NOT_REPRODUCED
            job.result.reason = f"the variant does not fail the test ({outcome.verdict.value})"
    return kept


def _quiet(probe: Callable[[_Job], Outcome | None]) -> Callable[[_Job], Outcome | None]:
    """A probe whose run was stopped by an interrupt says nothing."""

    def run(job: _Job) -> Outcome | None:
        try:
            return probe(job)
        except Interrupted:
            return None

    return run


def _ordered(jobs: list[_Job], representatives_first: bool) -> list[_Job]:
    """The first finding of each signature first, then the others, each in commit order."""
    if not representatives_first:
        return jobs
    seen: set[str] = set()
    first: list[_Job] = []
    rest: list[_Job] = []
    for job in jobs:
        key = bucket_key(job.result)
        (rest if key in seen else first).append(job)
        seen.add(key)
    return first + rest


def _run(
    repo: pygit2.Repository,
    jobs: list[_Job],
    settings: TriageSettings,
    state: TriageState,
    batch: Batch,
    progress: TriageProgress | None,
) -> None:
    by_key = {job.result.key: job for job in jobs}
    granted: dict[str, int] = {}  # the jobs each child was started with, or widened to

    def children() -> Iterator[Child]:
        for position, job in enumerate(jobs):
            granted[job.result.key] = _tail_jobs(state, len(jobs) - position)
            options = _run_options(granted[job.result.key], state.address)
            yield Child(job.result.key, [*job.argv, *options], job.cwd)

    def on_start(child: Child) -> None:
        state.running[child.key] = child
        by_key[child.key].result.status = "running"
        state.last = by_key[child.key].result
        _report(state, progress)

    def on_end(child: Child, ended: Ended) -> None:
        del state.running[child.key]
        job = by_key[child.key]
        _conclude(repo, job, ended, state)
        if settings.queue and job.result.commit is not None and job.result.status != INTERRUPTED:
            records.dequeue(repo, job.result.commit)
        state.last = job.result
        if len(granted) == len(jobs):  # every finding started: the freed workers are theirs
            _widen(batch, state, granted)
        _report(state, progress)

    if settings.reports is not None:
        settings.reports.mkdir(parents=True, exist_ok=True)
    batch.run(children(), on_start, on_end, lambda: _report(state, progress, tick=True))


def _tail_jobs(state: TriageState, left: int) -> int:
    """The jobs of a reduction started when `left` findings, itself included, are still to
    start: `--jobs`, until fewer than `--workers` are left; then as many more as it takes
    for those last ones to fill the workers the others leave idle as they end.

    Without it the last findings run `--jobs` tests each while the other workers wait
    (on 24 findings and 8 workers that tail alone cost a sixth of the time). Results do
    not depend on `--jobs`. While earlier findings still hold the workers, the extra
    runs wait in a cluster's queue, or share this machine's CPUs for a while.
    """
    if left >= state.workers:
        return state.jobs
    return _shared_jobs(state, left)


def _widen(batch: Batch, state: TriageState, granted: dict[str, int]) -> None:
    """Once no finding is left to start, give the workers of each reduction that ends to
    the ones still running: each may then run `--jobs` times workers / running (rounded up)
    tests at once.

    `_tail_jobs` does this for the findings that start last; this is for those
    that started earlier and end last. Results do not depend on `--jobs`.
    """
    if not state.running:
        return
    wanted = _shared_jobs(state, len(state.running))
    for key, child in state.running.items():
        if wanted > granted.get(key, state.jobs):
            batch.widen(child, wanted)
            granted[key] = wanted


def _shared_jobs(state: TriageState, sharing: int) -> int:
    return state.jobs * -(-state.workers // sharing)


def _run_options(jobs: int, address: str | None) -> list[str]:
    options = ["--jobs", str(jobs)]
    return [*options, "--executor", address] if address is not None else options


def _conclude(repo: pygit2.Repository, job: _Job, ended: Ended, state: TriageState) -> None:
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


def _report(state: TriageState, progress: TriageProgress | None, tick: bool = False) -> None:
    if progress is not None:
        if tick:
            state.last = None
        progress(state)


def _drain(
    repo: pygit2.Repository,
    settings: TriageSettings,
    state: TriageState,
    batch: Batch,
    progress: TriageProgress | None,
) -> None:
    """Reduce the queued commits until the queue stays empty; one drain at a time.

    The queue is read again after the lock is let go: a commit queued while
    this drain was finishing, whose hook saw the lock still held and so
    started no drain of its own, is not left behind.
    """
    while True:
        with records.draining(repo) as held:
            if not held:
                state.warnings.append("another process is draining the queue")
                return
            while shas := [sha for sha in records.queued(repo) if sha not in _seen(state)]:
                jobs = []
                for sha in shas:
                    finding = examine(repo, sha)
                    if finding is None:
                        records.dequeue(repo, sha)
                        continue
                    job = _commit_job(repo, finding, settings)
                    state.findings.append(job.result)
                    jobs.append(job)
                _settle_known(repo, jobs, settings)
                for job in jobs:
                    if job.result.status != "queued" and job.result.commit is not None:
                        records.dequeue(repo, job.result.commit)
                runnable = [job for job in jobs if job.result.status == "queued"]
                _run(repo, runnable, settings, state, batch, progress)
                if batch.stopped:
                    return
        if not records.queued(repo) or batch.stopped:
            return


def _seen(state: TriageState) -> set[str]:
    return {finding.key for finding in state.findings}
