"""Revisions mode: `git reduce GOOD..BAD -- PATH` reduces a file's change between commits.

Job: read PATH at GOOD and BAD from the object store (nothing is checked out),
bisect to the first bad commit with the pair's test, and hand the pair around
that commit to pair mode (see `pair.reduce_pair_texts`); the bisect's verdicts
land in the same cache as the reduction's, so a rerun repeats neither. An
interrupt during the bisect hands on the pair at GOOD and BAD, which pair mode
then records unreduced, as the best result so far.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath

import pygit2

from gitreduce.core.errors import UserError
from gitreduce.core.outcome import Verdict
from gitreduce.git.bisect import PathBisect, bisect_path
from gitreduce.git.revisions import (
    find_repository,
    parse_range,
    read_file_at,
    resolve_commit,
    to_repo_path,
)
from gitreduce.git.store import ResultRequest, Store
from gitreduce.sessions.interrupts import deferring
from gitreduce.sessions.pair import (
    PairProgress,
    PairSettings,
    PairSummary,
    calibrate_pair,
    pair_spec,
    reduce_pair_texts,
    seed_verdict,
)
from gitreduce.sessions.run import bisection_result, calibrated_run


@dataclass(frozen=True)
class RevisionSettings:
    """`git reduce GOOD..BAD -- PATH`: where the pair comes from."""

    revisions: str
    path: str
    bisect: bool = True
    directory: Path | None = None  # PATH is relative to it, the repository found from it (cwd)


@deferring
def reduce_revisions(
    revisions: RevisionSettings,
    settings: PairSettings,
    progress: PairProgress | None = None,
    result: ResultRequest | None = None,
    echo: Callable[[str], None] | None = None,
) -> PairSummary:
    """Read PATH at GOOD and BAD from the object store, bisect to the first bad commit, reduce.

    Nothing is checked out; the bisect's verdicts land in the same cache as the
    reduction's, so a rerun repeats neither.
    """
    repo = find_repository(revisions.directory or Path.cwd())
    store = Store(repo, users=True)
    good, bad = parse_range(revisions.revisions)
    path = to_repo_path(repo, revisions.path, revisions.directory)
    seed, variant = read_file_at(repo, good, path), read_file_at(repo, bad, path)
    if seed == variant:
        raise UserError(f"{path} is identical at {good} and {bad}; nothing to reduce")
    sources = [str(resolve_commit(repo, good).id), str(resolve_commit(repo, bad).id)]
    name = PurePosixPath(path).name
    settings = replace(settings, seed=seed, variant=variant, name=name, path=path)
    found = None
    if revisions.bisect:
        found, test = _bisect(repo, good, bad, path, settings, echo)
        settings = replace(settings, test=test)
    if found is not None:
        if echo is not None:
            for line in found.report():
                echo(line)
        sources = [str(found.seed_commit.id), str(found.variant_commit.id)]
        settings = replace(
            settings,
            seed=read_file_at(repo, sources[0], path),
            variant=read_file_at(repo, sources[1], path),
        )
    settings = replace(settings, sources=tuple(sources))
    summary = reduce_pair_texts(settings, store, progress, result, echo)
    summary.first_bad_commit = sources[1] if found is not None else None
    return summary


def _bisect(
    repo: pygit2.Repository,
    good: str,
    bad: str,
    path: str,
    settings: PairSettings,
    echo: Callable[[str], None] | None,
) -> tuple[PathBisect | None, str]:
    """The first bad commit (None if interrupted), and the test command as it ran (see
    `calibrated_run`)."""
    seed_expected = seed_verdict(settings.polarity)
    warnings: list[str] = []
    found: PathBisect | None = None
    with calibrated_run(
        Store(repo, users=True),
        pair_spec(settings),
        warnings,
        settings.jobs,
        lambda spec, cache: calibrate_pair(spec, settings, seed_expected, cache, echo),
    ) as run:

        def classify(content: bytes) -> Verdict:
            return run.bisect_verdict(content, seed_expected)

        found = bisect_path(repo, good, bad, path, classify, echo)
    return bisection_result(run, found, warnings, echo)
