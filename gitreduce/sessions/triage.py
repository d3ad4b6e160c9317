"""Triage: many findings reduced a bounded number at a time, then grouped into buckets.

Job: run a triage. Its findings (commits with a `Reduce-Test:` trailer, or
variant files against one seed) come as jobs from `triage_findings`; those a
previous triage settled are taken over (`triage_results`, from the local
records of `git.triage_records`). The rest are probed, one test run each, to
learn how each variant fails (its failure signature), then reduced as child
reductions (`batch`), the first finding of every signature first so the
distinct bugs are known early, `--workers` at a time, the last ones given the
workers the others leave idle. Each child's end is settled by
`triage_results` (record, `reduce/<short>` branch, note); findings are
grouped into buckets by signature (`triage_state`), each with the smallest
reduced difference as representative. `--queue` drains the post-commit
hook's queue the same way.

Determinism: every finding is an ordinary reduction whose result does not
depend on `--jobs` or on the executor; the order findings run in changes
only when each result is known.

Kill -9, Ctrl-C, then a rerun: a finding is settled only once its record is
written, after its result branch; an interrupted child keeps its verdicts in
the repository's cache, so its rerun resumes instead of starting over.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pygit2

from gitreduce.core.errors import Interrupted, UserError
from gitreduce.core.outcome import Outcome, Verdict
from gitreduce.git import triage_records as records
from gitreduce.git.findings import examine
from gitreduce.git.revisions import find_repository
from gitreduce.git.store import Store
from gitreduce.oracle.calibration import cannot_run
from gitreduce.oracle.executor import Executor, opened_executor, parse_executor
from gitreduce.oracle.runner import stop_all
from gitreduce.oracle.spec import TestSpec, anchored
from gitreduce.sessions.batch import Batch, Child, Ended
from gitreduce.sessions.interrupts import deferred
from gitreduce.sessions.triage_findings import (
    TriageJob,
    TriageSettings,
    commit_job,
    commit_jobs,
    variant_jobs,
)
from gitreduce.sessions.triage_results import conclude, settle_known
from gitreduce.sessions.triage_state import (
    INTERRUPTED,
    NOT_REPRODUCED,
    TriageProgress,
    TriageState,
    bucket_key,
)


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
            store, jobs = variant_jobs(settings, base)
        else:
            repo = find_repository(base)
            store = Store(repo, users=True)
            jobs = commit_jobs(repo, settings) if not settings.queue else []
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
                    settle_known(store.repo, jobs, settings)
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


def _probe(
    jobs: list[TriageJob],
    executor: Executor,
    state: TriageState,
    stopping: _Stopping,
    timeout: float | None,
) -> list[TriageJob]:
    """Run each variant once: its signature buckets it before it is reduced, and a variant
    that does not fail is not reproduced (no reduction is started for it)."""
    if not jobs:
        return []
    parallel = max(1, state.workers * state.jobs)

    def probe(job: TriageJob) -> Outcome | None:
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


def _quiet(probe: Callable[[TriageJob], Outcome | None]) -> Callable[[TriageJob], Outcome | None]:
    """A probe whose run was stopped by an interrupt says nothing."""

    def run(job: TriageJob) -> Outcome | None:
        try:
            return probe(job)
        except Interrupted:
            return None

    return run


def _ordered(jobs: list[TriageJob], representatives_first: bool) -> list[TriageJob]:
    """The first finding of each signature first, then the others, each in commit order."""
    if not representatives_first:
        return jobs
    seen: set[str] = set()
    first: list[TriageJob] = []
    rest: list[TriageJob] = []
    for job in jobs:
        key = bucket_key(job.result)
        (rest if key in seen else first).append(job)
        seen.add(key)
    return first + rest


def _run(
    repo: pygit2.Repository,
    jobs: list[TriageJob],
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
        conclude(repo, job, ended, state)
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
                    job = commit_job(repo, finding, settings)
                    state.findings.append(job.result)
                    jobs.append(job)
                settle_known(repo, jobs, settings)
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
