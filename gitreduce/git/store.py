"""Where a reduction keeps its verdicts and records its result: the git side of a session.

Inside a repository, the repository's own object store; for plain files
outside any, a private cache repository. Verdicts of the originals are cached
too, so a second identical run executes no test at all, calibration included
(but only on verdicts this repository's own runs produced).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import pygit2

from gitreduce.core.errors import UserError
from gitreduce.core.keys import candidate_key
from gitreduce.core.outcome import Outcome, Verdict
from gitreduce.git.cache_log import CacheError
from gitreduce.git.config import branch_prefix
from gitreduce.git.layout import open_cache_repository
from gitreduce.git.results import record_result, result_branch_name, result_message, write_patch
from gitreduce.git.revisions import to_repo_path
from gitreduce.git.verdicts import GitVerdictCache
from gitreduce.oracle.calibration import calibrate
from gitreduce.oracle.executor import TestRunner
from gitreduce.oracle.spec import TestSpec


@dataclass
class Store:
    """The repository a run uses, and whether it is the user's own (results go there)."""

    repo: pygit2.Repository
    users: bool

    @classmethod
    def near(cls, path: Path) -> Store:
        found = pygit2.discover_repository(str(path.resolve().parent))
        if found is not None:
            return cls(pygit2.Repository(found), users=True)
        return cls(open_cache_repository(), users=False)

    def repo_path(self, path: Path) -> str:
        """`path` relative to the repository's work tree, or its bare name outside one."""
        if self.users and self.repo.workdir is not None:
            return to_repo_path(self.repo, str(path))
        return path.name


@contextmanager
def verdict_cache(store: Store, spec: TestSpec, warnings: list[str]) -> Iterator[GitVerdictCache]:
    """The cache for `spec`, keyed on the test as the user gave it (before calibration picks
    a timeout), flushed and packed however the run ends."""
    cache = GitVerdictCache(store.repo, spec.fingerprint(), description=f"test: {spec.command}")
    try:
        yield cache
    finally:
        try:
            cache.close()
        except CacheError as error:
            warnings.append(str(error))
        warnings.extend(cache.warnings)


def calibrate_cached(
    spec: TestSpec,
    content: bytes,
    expect: Verdict,
    jobs: int,
    cache: GitVerdictCache,
    runner: TestRunner | None = None,
) -> tuple[TestSpec, Outcome]:
    """`calibrate`, unless the cache already holds a local verdict of the expected class
    for `content`.

    A local cached original was checked several times by a run here that
    stored it (and the run was not revoked); its stored duration gives the same
    derived timeout. A verdict from elsewhere is never taken for an original:
    it would decide the whole reduction.
    """
    key = candidate_key(content)
    cached = cache.get(key)
    if cached is not None and cached.local and cached.verdict is expect:
        timeout = spec.timeout or max(1.0, float(math.ceil(10 * cached.seconds)))
        return replace(spec, timeout=timeout), cached
    calibrated, outcome = calibrate(spec, content, expect, jobs=jobs, runner=runner)
    cache.put(key, outcome, content=content)
    return calibrated, outcome


@dataclass(frozen=True)
class ResultRequest:
    """How the user wants the result recorded.

    A branch name git refuses, or a patch file that cannot be written, is
    refused here, before the reduction runs, rather than found out after it.
    """

    branch: str | None = None
    force: bool = False
    patch: Path | None = None

    def __post_init__(self) -> None:
        if self.branch is not None and not pygit2.reference_is_valid_name(
            "refs/heads/" + self.branch
        ):
            raise UserError(f"{self.branch!r} is not a valid branch name")
        if self.patch is not None:
            if self.patch.is_dir():
                raise UserError(f"cannot write the patch to {self.patch}: it is a directory")
            if not self.patch.parent.is_dir():
                raise UserError(f"cannot write {self.patch}: no directory {self.patch.parent}")


def record(
    store: Store,
    request: ResultRequest,
    *,
    hint: str,
    path: str,
    versions: Sequence[tuple[str, bytes | Mapping[str, bytes]]],
    warnings: list[str],
) -> tuple[str | None, list[str]]:
    """Record `versions` as a branch (and a patch if asked); the branch and commit ids.

    In the private cache repository the branch is overwritten freely: it only
    exists so `--patch` has commits to format.
    """
    branch = request.branch or result_branch_name(hint, branch_prefix(store.repo))
    try:
        ids = record_result(
            store.repo,
            branch=branch,
            path=path,
            versions=versions,
            force=request.force or not store.users,
        )
    except UserError as error:
        warnings.append(f"result not recorded as a branch: {error}")
        return None, []
    if request.patch is not None:
        write_patch(store.repo, ids[-1], request.patch)
    return (branch if store.users else None), [str(oid) for oid in ids]


def message(
    subject: str,
    *,
    path: str,
    test: str,
    sources: list[str],
    before: bytes,
    after: bytes,
    tokens: tuple[int, int],
) -> str:
    return result_message(
        subject,
        path=path,
        test=test,
        sources=sources,
        bytes_before=len(before),
        bytes_after=len(after),
        tokens_before=tokens[0],
        tokens_after=tokens[1],
    )
