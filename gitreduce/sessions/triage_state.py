"""What a triage knows about its findings: their statuses, figures and buckets.

Job: the state `sessions.triage` updates as findings end and the reporters
read (progress lines, `--json`, the `--html` index): one `FindingResult` per
finding, `Bucket`s grouping them by failure signature, and `TriageState`
over the whole batch. No process, no git here.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from gitreduce.sessions.batch import Child

# Statuses of a finding. Settled ones are not redone by a rerun (see --retry).
REDUCED = "reduced"
NOT_REPRODUCED = "not-reproduced"  # the seed does not pass or the variant does not fail
NOT_RUN = "not-run"  # nothing may run: no test defined, not a plain name, a bad path
FAILED = "failed"
INTERRUPTED = "interrupted"
SETTLED = (REDUCED, NOT_REPRODUCED)  # failures may be the environment's: a rerun retries


@dataclass
class FindingResult:
    """One finding: where it came from, what became of it and its reduced difference.

    `paths` are the files it reduces; `path` is the one file of a one-file finding
    (None for a finding of several, reduced as a pair of sets).
    """

    key: str
    label: str
    commit: str | None
    path: str | None
    test_name: str | None
    command: str | None
    paths: list[str] = field(default_factory=list)
    status: str = "queued"
    reason: str | None = None
    signature: str | None = None
    branch: str | None = None
    commits: list[str] = field(default_factory=list)
    seed_tokens: list[int] | None = None
    variant_tokens: list[int] | None = None
    diff_tokens: list[int] | None = None
    tests_run: int = 0
    cache_hits: int = 0
    wall_seconds: float = 0.0
    diff: str | None = None
    report: str | None = None
    bucket: int | None = None
    fingerprint: str | None = None
    reduced: tuple[str, str] | None = None  # the reduced seed and variant, for reports

    @property
    def where(self) -> str:
        """Its files, for a line or a note."""
        return " ".join(self.paths) or self.path or ""

    @property
    def reduced_diff(self) -> int | None:
        return self.diff_tokens[1] if self.diff_tokens else None

    def as_dict(self) -> dict[str, object]:
        return {
            "id": self.label,
            "commit": self.commit,
            "path": self.path,
            "paths": self.paths,
            "test_name": self.test_name,
            "status": self.status,
            "reason": self.reason,
            "signature": self.signature,
            "bucket": self.bucket,
            "branch": self.branch,
            "commits": self.commits,
            "seed_tokens": self.seed_tokens,
            "variant_tokens": self.variant_tokens,
            "diff_tokens": self.diff_tokens,
            "tests_run": self.tests_run,
            "cache_hits": self.cache_hits,
            "wall_seconds": round(self.wall_seconds, 3),
            "diff": self.diff,
            "report": self.report,
        }

    def record(self) -> dict[str, object]:
        return self.as_dict() | {"fingerprint": self.fingerprint, "command": self.command}


@dataclass
class Bucket:
    """Findings that fail the same way, and the one with the smallest reduced difference."""

    number: int
    signature: str
    findings: list[FindingResult]

    @property
    def representative(self) -> FindingResult:
        reduced = [f for f in self.findings if f.reduced_diff is not None and f.status == REDUCED]
        if not reduced:
            return self.findings[0]
        return min(reduced, key=lambda f: (f.reduced_diff, f.seed_tokens or [0, 0]))

    def as_dict(self) -> dict[str, object]:
        best = self.representative
        return {
            "bucket": self.number,
            "signature": self.signature,
            "count": len(self.findings),
            "findings": [finding.label for finding in self.findings],
            "representative": best.label,
            "diff_tokens": best.reduced_diff,
            "diff": best.diff,
        }


@dataclass
class TriageState:
    """What the batch has done so far, for progress and for the final summary."""

    findings: list[FindingResult]
    started: float = field(default_factory=time.monotonic)
    running: dict[str, Child] = field(default_factory=dict)
    tests_done: int = 0  # tests of ended reductions and of the signature probes
    interrupted: bool = False
    executor: str = "local"
    workers: int = 1
    jobs: int = 1
    warnings: list[str] = field(default_factory=list)
    last: FindingResult | None = None  # the finding whose state changed last
    address: str | None = None  # the cluster the reductions join (None: local tests)

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def count(self, *statuses: str) -> int:
        return sum(1 for finding in self.findings if finding.status in statuses)

    @property
    def tests_run(self) -> int:
        return self.tests_done + sum(child.tests_so_far() for child in self.running.values())

    def buckets(self) -> list[Bucket]:
        """Buckets in the order their first finding appears; numbered from 1."""
        grouped: dict[str, list[FindingResult]] = {}
        for finding in self.findings:
            if finding.signature is not None and finding.status not in (NOT_REPRODUCED, NOT_RUN):
                grouped.setdefault(bucket_key(finding), []).append(finding)
        buckets = []
        for number, (signature, members) in enumerate(grouped.items(), start=1):
            for finding in members:
                finding.bucket = number
            buckets.append(Bucket(number, signature, members))
        return buckets

    def eta_seconds(self) -> float | None:
        """Remaining findings times the mean wall of those reduced here, over the workers."""
        timed = [f.wall_seconds for f in self.findings if f.status == REDUCED and f.wall_seconds]
        left = self.count("queued") + len(self.running)
        if not timed or not left:
            return None
        return left * (sum(timed) / len(timed)) / max(1, self.workers)

    def as_dict(self) -> dict[str, object]:
        buckets = self.buckets()
        elapsed = self.elapsed
        return {
            "findings": [finding.as_dict() for finding in self.findings],
            "buckets": [bucket.as_dict() for bucket in buckets],
            "counts": {
                status: self.count(status)
                for status in (REDUCED, NOT_REPRODUCED, NOT_RUN, FAILED, INTERRUPTED)
            },
            "tests_run": self.tests_run,
            "wall_seconds": round(elapsed, 3),
            "tests_per_second": round(self.tests_run / max(elapsed, 1e-6), 3),
            "executor": self.executor,
            "workers": self.workers,
            "jobs": self.jobs,
            "interrupted": self.interrupted,
            "warnings": self.warnings,
        }


TriageProgress = Callable[[TriageState], None]


def bucket_key(finding: FindingResult) -> str:
    """The signature with the finding's own file names masked: findings of one bug live in
    files of different names, which compilers quote."""
    signature = finding.signature or ""
    for path in finding.paths or ([finding.path] if finding.path else []):
        name = PurePosixPath(path).name
        signature = re.sub(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", "<file>", signature)
    return signature
