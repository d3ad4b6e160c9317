"""Set-pair mode between revisions: `git reduce GOOD..BAD -- PATH...` (or `-- DIR/`).

Job: read the set under the paths at GOOD and at BAD from the object store
(nothing is checked out), bisect to the first commit whose set fails the
original way when several commits change it, and hand the two sets around
that commit to the set-pair session (`sessions/setpair.py`); the bisection's
verdicts land in the reduction's cache. As `sessions/revisions.py` does for
one path.
"""

from __future__ import annotations

import posixpath
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path, PurePosixPath

import pygit2

from gitreduce.core import fileset
from gitreduce.core.errors import UserError
from gitreduce.core.outcome import Verdict
from gitreduce.git.bisect import BisectAborted, PathBisect, first_bad
from gitreduce.git.revisions import commits_changing_any, read_set_at, to_repo_path
from gitreduce.git.store import ResultRequest, Store
from gitreduce.sessions.fileset import SetTarget
from gitreduce.sessions.interrupts import deferring
from gitreduce.sessions.pair import seed_verdict
from gitreduce.sessions.run import Echo, bisection_result, calibrated_run
from gitreduce.sessions.set_files import FileSet, RevisionSets, as_set, read_revision_sets
from gitreduce.sessions.setpair import (
    SetPairSettings,
    SetPairSummary,
    pinned_members,
    reduce_read_sets,
    set_pair_calibrator,
    set_pair_spec,
)
from gitreduce.sessions.setpair_search import Files, SetPairProgress


@deferring
def reduce_revision_set_pair(
    revisions: str,
    paths: Sequence[str],
    settings: SetPairSettings,
    directory: Path | None = None,
    progress: SetPairProgress | None = None,
    result: ResultRequest | None = None,
    echo: Echo | None = None,
    *,
    bisect: bool = True,
) -> SetPairSummary:
    """`GOOD..BAD -- PATH...` (or `-- DIR/`): the set under the paths at GOOD is the seed,
    at BAD the variant, both read from the object store (nothing is checked out).

    As for one path (`sessions/revisions.py`): when several commits between
    GOOD and BAD change the set, they are bisected first (`bisect`) and the
    first bad commit's parent's set is reduced against the first bad commit's;
    the bisection's verdicts land in the reduction's cache.
    """
    started = time.monotonic()
    sets = read_revision_sets(revisions, paths, directory, deleted=True)
    name = PurePosixPath(sets.root).name or PurePosixPath(sets.paths[0]).name
    seed_files, variant_files = sets.seed, sets.variant
    sources = (str(sets.good_commit.id), str(sets.bad_commit.id))
    changing = commits_changing_any(sets.repo, sets.good_commit, sets.bad_commit, sets.paths)
    found: PathBisect | None = None
    if bisect and len(changing) > 1:
        found, test = _bisect_sets(sets, changing, settings, name, echo)
        settings = replace(settings, test=test)
    if found is not None:
        if echo is not None:
            for line in found.report():
                echo(line)
        sources = (str(found.seed_commit.id), str(found.variant_commit.id))
        seed_files = _set_at(sets, found.seed_commit)
        variant_files = _set_at(sets, found.variant_commit)
    variant = as_set(sets.directory, variant_files, sets.skipped)
    seed = (
        as_set(sets.directory, seed_files, [])
        if seed_files
        else FileSet(variant.root, {}, frozenset(), [])
    )
    repo = sets.repo
    keep = [PurePosixPath(to_repo_path(repo, str(path), directory)) for path in settings.keep]
    pinned = pinned_members(seed, variant, keep, PurePosixPath(sets.root))
    where = " ".join(paths)
    target = SetTarget(
        store=Store(repo, users=True),
        name=name,
        repo_path=sets.root,
        output=settings.output,
        input=f"{sources[1] if found is not None else sets.bad} -- {where}",
        sources=sources,
    )
    seed_input = f"{sources[0] if found is not None else sets.good} -- {where}"
    summary = reduce_read_sets(
        seed, variant, pinned, settings, target, seed_input, started, progress, result, echo
    )
    first_bad = found.first_bad_commit if found is not None else None
    summary.first_bad_commit = str(first_bad.id) if first_bad is not None else None
    return summary


def _set_at(sets: RevisionSets, commit: pygit2.Commit) -> Files:
    """The set under `sets.paths` at `commit`, relative to `sets.root`."""
    files, _ = read_set_at(sets.repo, str(commit.id), sets.paths)
    return {posixpath.relpath(path, sets.root or "."): text for path, text in files.items()}


def _bisect_sets(
    sets: RevisionSets,
    changing: list[pygit2.Commit],
    settings: SetPairSettings,
    name: str,
    echo: Echo | None,
) -> tuple[PathBisect | None, str]:
    """The first commit whose set fails the original way (None if interrupted), found as
    `git bisect run` would over GOOD and the commits that change the set, and the test
    command as it ran (see `calibrated_run`). A commit whose set is empty is skipped."""
    seed_expected = seed_verdict(settings.polarity)
    originals = (fileset.pack(sets.seed), fileset.pack(sets.variant))
    commits = (sets.good_commit, *changing)
    warnings: list[str] = []
    found: PathBisect | None = None
    with calibrated_run(
        Store(sets.repo, users=True),
        set_pair_spec(settings, name),
        warnings,
        settings.jobs,
        set_pair_calibrator(settings, originals, echo),
    ) as run:

        def classify(commit: pygit2.Commit) -> Verdict:
            files = _set_at(sets, commit)
            if not files:
                return Verdict.SKIP
            return run.bisect_verdict(fileset.pack(files), seed_expected)

        def tell(index: int, verdict: Verdict) -> None:
            if echo is not None:
                commit = commits[index]
                subject = commit.message.partition("\n")[0]
                echo(f"{str(commit.id)[:12]} {verdict.value:<7} {subject}")

        try:
            result = first_bad(commits, classify, tell)
        except BisectAborted as stop:
            raise UserError(
                f"bisect stopped: the test itself broke ({stop.verdict.value}) at "
                f"{commits[stop.index].id}"
            ) from None
        found = PathBisect(", ".join(sets.paths), commits, result)
    return bisection_result(run, found, warnings, echo)
