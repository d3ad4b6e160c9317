"""Which findings a triage reduces, and how: the settings, and one job per finding.

Job: turn a triage's input into `TriageJob`s, one per finding: the commits
with a `Reduce-Test:` trailer in a range (`git.findings`), or the variant
files of a directory against one seed. Each job holds what the probe runs
(the packed inputs, the test's name and directory) and the child reduction's
arguments (`git reduce C^..C -- PATH...`, or `--seed FILE --variant FILE`),
and its result says where it came from, its branch and the test's
fingerprint, by which an earlier triage's record is recognised.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import pygit2

from gitreduce.core import fileset
from gitreduce.core.errors import UserError
from gitreduce.git.config import branch_prefix
from gitreduce.git.findings import Finding, commits_in, find_findings, printable
from gitreduce.git.results import result_branch_name
from gitreduce.git.store import Store
from gitreduce.oracle.spec import TestSpec, anchored
from gitreduce.sessions.set_files import read_revision_sets
from gitreduce.sessions.triage_state import NOT_RUN, FindingResult


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
class TriageJob:
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


def commit_jobs(repo: pygit2.Repository, settings: TriageSettings) -> list[TriageJob]:
    """One job per finding of the range (or of the whole history): none is a one-line error."""
    commits = commits_in(repo, settings.revisions, settings.everything)
    findings = find_findings(repo, commits, settings.test)
    if not findings:
        raise UserError(
            "no findings: no commit in the range has a Reduce-Test: trailer"
            + ("" if settings.test else " (or give --test CMD to reduce every commit)")
        )
    return [commit_job(repo, finding, settings) for finding in findings]


def commit_job(repo: pygit2.Repository, finding: Finding, settings: TriageSettings) -> TriageJob:
    """A finding commit's job: its files at the parent and at the commit, and the child's
    `C^..C -- PATH...`; not run, with the reason, when nothing about it may run."""
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
    job = TriageJob(result, cwd=cwd)
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
            result.status, result.reason = NOT_RUN, printable(str(error))
            return job
        job.seed, job.variant = fileset.pack(sets.seed), fileset.pack(sets.variant)
        job.name = PurePosixPath(sets.root).name or PurePosixPath(sets.paths[0]).name
        job.file_set = True
    result.fingerprint = _fingerprint(finding.command, job.name, cwd, job.file_set)
    # The paths come from the commit: last, behind `--`, none able to read as an option.
    job.argv = [
        revisions,
        "--test",
        finding.command,
        "--no-bisect",
        "--branch",
        branch,
        "--force",
        *_common_options(settings, result, with_report=not job.file_set),
        "--",
        *(f"./{path}" if path.startswith("-") else path for path in finding.paths),
    ]
    return job


def variant_jobs(settings: TriageSettings, base: Path) -> tuple[Store, list[TriageJob]]:
    """`--seed FILE --variants DIR`: one job per variant file, and the store around the seed,
    which keeps the records and branches."""
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
        job = TriageJob(result, seed=seed, variant=variant, cwd=base, name=variant_path.name)
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
