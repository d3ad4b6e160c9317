"""Set-pair mode: a passing set of files (the seed) and a failing one (the variant), reduced
together until what differs between them is the failure-inducing change.

Job: one reduction of a pair of sets end to end. Read the two sets
(`--seed DIR --variant DIR`; `GOOD..BAD -- PATH...` is read, and bisected, by
`sessions/setpair_revisions.py`), refuse pairs that cannot be reduced, calibrate
both originals, run the search (`sessions/setpair_search.py`) and re-verify
its result, then write and record it. A candidate is a pair of whole sets,
each packed into one byte string (`core/fileset.py`), so the engine, the
verdict cache, the signature check, calibration and re-verification judge
sets exactly as they judge files: the seed set must stay good and the
variant set bad the original way.

The result is two commits on the result branch (the reduced seed set, then
the reduced variant set on top, so `git show` of the branch is the change),
`--patch` that second commit as a multi-file patch, and `--output DIR` the
two sets as DIR/seed and DIR/variant.
"""

from __future__ import annotations

import os
import posixpath
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Literal

from gitreduce.core import fileset
from gitreduce.core.errors import UserError
from gitreduce.core.outcome import Outcome, Verdict
from gitreduce.git.store import ResultRequest, Store, message, record
from gitreduce.git.verdicts import GitVerdictCache
from gitreduce.oracle.spec import TestSpec
from gitreduce.sessions.fileset import SetTarget, member_syntaxes, set_repo_path
from gitreduce.sessions.interrupts import deferring
from gitreduce.sessions.pair import PairSummary, seed_verdict
from gitreduce.sessions.run import Calibrate, Echo, Original, calibrate_originals, calibrated_run
from gitreduce.sessions.set_files import FileSet, read_set, write_set
from gitreduce.sessions.setpair_search import (
    Files,
    SetPairProgress,
    SetPairSearch,
    SetSizes,
    run_rounds,
)
from gitreduce.sessions.verify import backed_off, settle

SEED_DIRECTORY, VARIANT_DIRECTORY = "seed", "variant"  # under --output DIR


@dataclass(frozen=True)
class SetPairSettings:
    """What `git reduce --seed DIR --variant DIR` (or GOOD..BAD -- PATH...) was asked to do."""

    test: str
    keep: tuple[Path, ...] = ()  # files never removed from either set (a Makefile the test runs)
    polarity: Literal["bisect", "interesting"] = "bisect"
    jobs: int = field(default_factory=lambda: os.cpu_count() or 1)
    timeout: float | None = None
    signature: str | None = None
    any_failure: bool = False
    output: Path | None = None  # the directory to write DIR/seed and DIR/variant into
    skip_passes: tuple[str, ...] = ()
    repeat: int = 1


@dataclass
class SetPairSummary(PairSummary):
    """A pair summary (sizes summed over each set; `seed` and `variant` the packed sets)
    plus the sets themselves and their file counts."""

    seed_files: Files = field(default_factory=dict)
    variant_files: Files = field(default_factory=dict)
    seed_files_before: int = 0
    variant_files_before: int = 0
    seed_input: str = ""
    variant_input: str = ""
    output: str | None = None

    @property
    def changed_files(self) -> list[str]:
        """The paths whose versions differ in the result (present in one set only included)."""
        paths = set(self.seed_files) | set(self.variant_files)
        return sorted(p for p in paths if self.seed_files.get(p) != self.variant_files.get(p))

    def as_dict(self) -> dict[str, object]:
        return super().as_dict() | {
            "seed_input": self.seed_input,
            "variant_input": self.variant_input,
            "seed_file_count": [self.seed_files_before, len(self.seed_files)],
            "variant_file_count": [self.variant_files_before, len(self.variant_files)],
            "seed_files": sorted(self.seed_files),
            "variant_files": sorted(self.variant_files),
            "changed_files": self.changed_files,
            "output": self.output,
        }


@deferring
def reduce_set_pair(
    seed_paths: Sequence[Path],
    variant_paths: Sequence[Path],
    settings: SetPairSettings,
    progress: SetPairProgress | None = None,
    result: ResultRequest | None = None,
    echo: Echo | None = None,
) -> SetPairSummary:
    """`--seed DIR --variant DIR` (or lists of files): each set read as `git reduce DIR`
    reads one, its files relative to its own directory, so the same relative path names
    the same file in both."""
    started = time.monotonic()
    seed = read_set(seed_paths)
    variant = read_set(variant_paths)
    store = Store.near(variant.root / next(iter(variant.files)))
    output = settings.output
    if output is None and not store.users:
        output = variant.root.with_name(f"{variant.root.name}.reduced")
    keep = [path.resolve() for path in settings.keep]
    pinned = pinned_members(seed, variant, keep, variant.root)
    target = SetTarget(
        store=store,
        name=variant.root.name or "files",
        repo_path=set_repo_path(store, variant.root),
        output=output,
        input=", ".join(str(path) for path in variant_paths),
    )
    seed_input = ", ".join(str(path) for path in seed_paths)
    return reduce_read_sets(
        seed, variant, pinned, settings, target, seed_input, started, progress, result, echo
    )


def pinned_members(
    seed: FileSet, variant: FileSet, keep: Sequence[PurePath], root: PurePath
) -> frozenset[str]:
    """The members `--keep` names (paths comparable with `root`): each must be in a set."""
    pinned = set()
    for path in keep:
        try:
            relative = path.relative_to(root).as_posix()
        except ValueError:
            relative = ""
        if relative not in seed.files and relative not in variant.files:
            raise UserError(f"--keep {path}: not a file of either set under {root}")
        pinned.add(relative)
    return frozenset(pinned)


def _check_kinds(paths: set[str]) -> None:
    """A path that is a file in one set and a directory in the other cannot be reduced
    pairwise: a candidate taking one set's version of a file and the other's of the
    directory could not be written out."""
    for path in sorted(paths):
        parent = posixpath.dirname(path)
        while parent:
            if parent in paths:
                raise UserError(
                    f"{parent} is a file in one set and a directory in the other "
                    f"(it holds {path}); give sets whose paths agree"
                )
            parent = posixpath.dirname(parent)


def _check_output(output: Path | None) -> None:
    """`--output DIR` takes the sets as DIR/seed and DIR/variant: each must be new or empty,
    so no file of an earlier result is left among them."""
    if output is None:
        return
    if output.exists() and not output.is_dir():
        raise UserError(f"--output {output} exists and is not a directory")
    for side in (SEED_DIRECTORY, VARIANT_DIRECTORY):
        where = output / side
        if where.exists() and (not where.is_dir() or any(where.iterdir())):
            raise UserError(f"--output {output}: {where} exists and is not an empty directory")


def set_pair_spec(settings: SetPairSettings, name: str) -> TestSpec:
    """The test of a pair of sets: the spec of file sets, so its verdicts never meet a
    file's; the bisection and the reduction share it, and so their cache."""
    return TestSpec(
        command=settings.test,
        relative_path=name,
        polarity=settings.polarity,
        timeout=settings.timeout,
        signature_regex=settings.signature,
        any_failure=settings.any_failure,
        repeat=settings.repeat,
        file_set=True,
    )


def set_pair_calibrator(
    settings: SetPairSettings, originals: tuple[bytes, bytes], echo: Echo | None
) -> Calibrate:
    """Both original sets classified (or recalled): the seed good, the variant bad, whose
    outcome is the reference; `echo` hears which one the run waits for."""
    seed_expected = seed_verdict(settings.polarity)

    def calibrate(spec: TestSpec, cache: GitVerdictCache) -> tuple[TestSpec, Outcome]:
        return calibrate_originals(
            spec,
            cache,
            Original(originals[0], seed_expected, "the original seed set", "seed"),
            Original(originals[1], Verdict.BAD, "the original variant set", "variant"),
            settings.jobs,
            echo,
        )

    return calibrate


def reduce_read_sets(
    seed: FileSet,
    variant: FileSet,
    pinned: frozenset[str],
    settings: SetPairSettings,
    target: SetTarget,
    seed_input: str,
    started: float,
    progress: SetPairProgress | None,
    result: ResultRequest | None,
    echo: Echo | None,
) -> SetPairSummary:
    """Reduce two sets already read, whichever way they were given (directories, or
    revisions): the checks, the search, the re-verification, `--output` and the result
    branch. `pinned` are the members never removed; `target` says where the result goes."""
    if seed.files == variant.files:
        raise UserError("the seed and the variant sets are identical; there is no difference")
    _check_kinds(seed.files.keys() | variant.files.keys())
    _check_output(target.output)
    warnings = list(variant.warnings)
    warnings.extend(warning for warning in seed.warnings if warning not in warnings)
    opaque = seed.opaque | variant.opaque
    syntaxes, unparsed = member_syntaxes({**seed.files, **variant.files}, opaque)
    if unparsed:
        warnings.append(f"no grammar for {', '.join(unparsed)}; reducing those by lines and tokens")
    sizes = SetSizes({path: syntax.grammar for path, syntax in syntaxes.items()})
    spec = set_pair_spec(settings, target.name)
    seed_expected = seed_verdict(settings.polarity)

    def seed_ok(outcome: Outcome) -> bool:
        return outcome.verdict is seed_expected

    calibrate = set_pair_calibrator(
        settings, (fileset.pack(seed.files), fileset.pack(variant.files)), echo
    )
    verified: list[tuple[bytes, bytes]] = []
    with calibrated_run(
        target.store, spec, warnings, settings.jobs, calibrate, settings.skip_passes
    ) as run:
        pair = SetPairSearch(
            seed.files,
            variant.files,
            run.engine,
            seed_ok,
            run.is_interesting,
            syntaxes,
            sizes,
            pinned,
            opaque,
            progress,
        )
        if progress is not None:
            progress(pair.status)
        run_rounds(pair)
        pair.label = "comments"
        pair.without_comments()
        pair.label = "final-newline"
        pair.with_final_newlines(seed.files, variant.files)
        settled = settle(
            run,
            pair.accepted,
            lambda packed: [
                (packed[1], run.is_interesting, "the variant set"),
                (packed[0], seed_ok, "the seed set"),
            ],
        )
        verified.append(settled.result)
        if settled.back:
            seed_back, variant_back = settled.result
            back = sizes.of_sets(fileset.unpack(seed_back), fileset.unpack(variant_back))
            warnings.append(backed_off(settled, f"{back[2]} difference tokens"))
    final = verified[0] if verified else pair.accepted[-1]  # interrupted: the best so far
    seed_files, variant_files = fileset.unpack(final[0]), fileset.unpack(final[1])
    before = sizes.of_sets(seed.files, variant.files)
    after = sizes.of_sets(seed_files, variant_files)
    command = run.spec.command
    if target.output is not None:
        write_set(target.output / SEED_DIRECTORY, seed_files, seed.files)
        write_set(target.output / VARIANT_DIRECTORY, variant_files, variant.files)
    summary = SetPairSummary(
        name=target.name,
        language=None,
        algorithm="ppr",
        seed_before=before[0],
        variant_before=before[1],
        diff_before=before[2],
        seed_after=after[0],
        variant_after=after[1],
        diff_after=after[2],
        seed=final[0],
        variant=final[1],
        stats=run.engine.stats,
        wall_seconds=time.monotonic() - started,
        interrupted=run.interrupted,
        verified=run.verified,
        warnings=warnings,
        test=command,
        signature=run.reference.signature if run.reference is not None else None,
        seed_files=seed_files,
        variant_files=variant_files,
        seed_files_before=len(seed.files),
        variant_files_before=len(variant.files),
        seed_input=seed_input,
        variant_input=target.input,
        output=str(target.output) if target.output is not None else None,
    )
    _record(target, result or ResultRequest(), summary, seed.files, variant.files)
    return summary


def _record(
    target: SetTarget,
    request: ResultRequest,
    summary: SetPairSummary,
    seed: Files,
    variant: Files,
) -> None:
    """The reduced seed set, then the reduced variant set on top, on the result branch."""
    where = target.repo_path or target.name
    sources = list(target.sources)
    diff = summary.diff_after
    seed_message = message(
        f"git reduce: reduced seed set {where} ({len(seed)} -> {len(summary.seed_files)} files)",
        path=where,
        test=summary.test,
        sources=sources[:1],
        before=b"".join(seed.values()),
        after=b"".join(summary.seed_files.values()),
        tokens=(summary.seed_before, summary.seed_after),
    )
    changed = len(summary.changed_files)
    variant_message = message(
        f"git reduce: failure-inducing change in {where} ({diff} token{'' if diff == 1 else 's'} "
        f"in {changed} file{'' if changed == 1 else 's'})",
        path=where,
        test=summary.test,
        sources=sources[1:],
        before=b"".join(variant.values()),
        after=b"".join(summary.variant_files.values()),
        tokens=(summary.variant_before, summary.variant_after),
    )
    hint = target.name + (f"-{sources[-1][:7]}" if sources else "")
    summary.branch, summary.commits = record(
        target.store,
        request,
        hint=hint,
        path=target.repo_path,
        versions=[(seed_message, summary.seed_files), (variant_message, summary.variant_files)],
        warnings=summary.warnings,
    )
