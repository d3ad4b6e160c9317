"""Set-pair mode: a passing set of files (the seed) and a failing one (the variant), reduced
together until what differs between them is the failure-inducing change.

Job: PPR over file sets. A candidate is a pair of whole sets, each packed into
one byte string (`core/fileset.py`), so the engine, the verdict cache, the
signature check, calibration and re-verification judge sets exactly as they
judge files: the seed set must stay good and the variant set bad the original
way. The reduction repeats rounds of these passes while the pair shrinks:

- `set-tdiff`: the files only one set holds, each one change of the
  difference, removed from that set (ddmin, MinTdiff at file granularity);
- `set-ldiff`: ddmin over the files whose versions differ, the variant
  taking the seed's version (or losing the file the seed lacks) for every
  change left out (MinLdiff at file granularity): irrelevant changes to
  whole files go in a few tests;
- `set-commonality`: ddmin over the files both sets hold, removed from both;
- `file-ppr`: PPR (`pair/ppr.py`) on each file whose versions differ,
  biggest first, every other file of both sets fixed: the file's pair is
  judged as its two sets with each side in place (`PairCurrent.places`);
- `file-one-side`: the single-program schedule on each file only one set
  holds, that set judged as it must stay (the seed's good, the variant's bad);
- `file-commonality`: coarse commonality and MinCommonality on each file
  both sets hold identically, every candidate applied to both sets.

Differences go before commonality, whole files before their insides, as PPR
orders its passes. Candidates are pulled in a fixed order and the engine
takes the lowest-indexed success, so the result does not depend on `--jobs`.
The result is two commits on the result branch (the reduced seed set, then
the reduced variant set on top, so `git show` of the branch is the change),
`--patch` that second commit as a multi-file patch, and `--output DIR` the
two sets as DIR/seed and DIR/variant.
"""

from __future__ import annotations

import os
import posixpath
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePath, PurePosixPath
from typing import Literal

import pygit2

from gitreduce.core import fileset
from gitreduce.core.current import Current
from gitreduce.core.ddmin import Subset, ddmin
from gitreduce.core.engine import Engine
from gitreduce.core.errors import UserError
from gitreduce.core.outcome import Outcome, Verdict
from gitreduce.core.pass_runner import Pass, run_pass
from gitreduce.git.bisect import BisectAborted, PathBisect, first_bad
from gitreduce.git.revisions import commits_changing_any, read_set_at, to_repo_path
from gitreduce.git.store import ResultRequest, Store, calibrate_cached, message, record
from gitreduce.git.verdicts import GitVerdictCache
from gitreduce.lang.grammars import Grammar
from gitreduce.lang.syntax import Syntax
from gitreduce.oracle.spec import TestSpec
from gitreduce.pair.alignment import Alignment
from gitreduce.pair.current import Measure, PairCandidate, PairCurrent, PairJudge
from gitreduce.pair.ppr import ROUND, Round, reduce_pair
from gitreduce.pair.state import PairState
from gitreduce.pair.tokens import tokenize
from gitreduce.passes.schedule import reduce_program
from gitreduce.sessions.fileset import (
    FileSet,
    RevisionSets,
    SetTarget,
    as_set,
    member_syntaxes,
    read_revision_sets,
    read_set,
    set_repo_path,
    write_set,
)
from gitreduce.sessions.interrupts import deferring
from gitreduce.sessions.pair import PairSummary, seed_verdict, strip_comments
from gitreduce.sessions.run import Calibrate, Echo, calibrated_run, waiting_notice
from gitreduce.sessions.verify import backed_off, settle

Files = dict[str, bytes]
SEED_DIRECTORY, VARIANT_DIRECTORY = "seed", "variant"  # under --output DIR
# Sizes remembered by content: enough for every file of a set in a few states, few enough
# that thousands of accepted texts of a large file are not all kept alive
REMEMBERED_SIZES = 1024


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


class SetPairStatus:
    """What progress shows of a pair of sets: each set's tokens and their difference, summed
    over the files, and the pass running."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.label = ""
        self.sizes = (0, 0, 0)  # seed, variant, difference


SetPairProgress = Callable[[SetPairStatus], None]


class _Sizes:
    """Tokens of files and differences of file pairs, as pair mode counts them, remembered
    by content: whole-set candidates are measured by summing their files."""

    def __init__(self, grammars: dict[str, Grammar | None]) -> None:
        self._grammars = grammars
        self._tokens: dict[tuple[str, bytes], int] = {}
        self._pairs: dict[tuple[str, bytes, bytes], tuple[int, int, int]] = {}

    def tokens(self, path: str, text: bytes) -> int:
        key = (path, text)
        if key not in self._tokens:
            if len(self._tokens) >= REMEMBERED_SIZES:
                self._tokens.clear()  # texts of long-gone candidates: let them go
            self._tokens[key] = len(tokenize(text, self._grammars.get(path)))
        return self._tokens[key]

    def pair(self, path: str, seed: bytes | None, variant: bytes | None) -> tuple[int, int, int]:
        """(seed tokens, variant tokens, difference tokens) of one path's two versions; a
        file only one set holds is all difference."""
        if seed is None or variant is None:
            tokens = self.tokens(path, seed if seed is not None else variant or b"")
            return (tokens, 0, tokens) if variant is None else (0, tokens, tokens)
        key = (path, seed, variant)
        if key not in self._pairs:
            if len(self._pairs) >= REMEMBERED_SIZES:
                self._pairs.clear()
            if seed == variant:
                tokens = self.tokens(path, seed)
                self._pairs[key] = (tokens, tokens, 0)
            else:
                alignment = Alignment.of(seed, variant, self._grammars.get(path))
                self._pairs[key] = (
                    len(alignment.seed),
                    len(alignment.variant),
                    alignment.diff_size,
                )
        return self._pairs[key]

    def of_sets(self, seed: Files, variant: Files, leave_out: str = "") -> tuple[int, int, int]:
        """The sets' (seed, variant, difference) tokens, `leave_out` not counted."""
        total = [0, 0, 0]
        for path in seed.keys() | variant.keys():
            if path != leave_out:
                for index, size in enumerate(self.pair(path, seed.get(path), variant.get(path))):
                    total[index] += size
        return total[0], total[1], total[2]


def _measure(sizes: tuple[int, int, int], files: int) -> Measure:
    """A pair of sets' progress order: a smaller difference, then smaller sets, where each
    file counts one more than its tokens, so an emptied file is still something to remove."""
    return sizes[2], sizes[0] + sizes[1] + files


class _SetPair:
    """The best pair of sets so far, and the passes over it; only the engine's answers
    change it. Every accepted pair is appended to `accepted`, packed, for the final
    re-verification to walk back along."""

    def __init__(
        self,
        seed: Files,
        variant: Files,
        engine: Engine,
        seed_ok: Callable[[Outcome], bool],
        variant_ok: Callable[[Outcome], bool],
        syntaxes: dict[str, Syntax],
        sizes: _Sizes,
        pinned: frozenset[str],
        opaque: frozenset[str],
        progress: SetPairProgress | None,
    ) -> None:
        self.seed, self.variant = dict(seed), dict(variant)
        self.engine = engine
        self.seed_ok, self.variant_ok = seed_ok, variant_ok
        self.syntaxes = syntaxes
        self.sizes = sizes
        self.pinned, self.opaque = pinned, opaque
        self.label = ""
        self.round = 0
        self.accepted = [(fileset.pack(self.seed), fileset.pack(self.variant))]
        self.status = SetPairStatus(engine)
        self.status.sizes = sizes.of_sets(self.seed, self.variant)
        self._progress = progress

    @property
    def tokens(self) -> int:
        """Both sets' tokens: what a pass over the pair removes."""
        return self.status.sizes[0] + self.status.sizes[1]

    def measure(self) -> Measure:
        return _measure(self.status.sizes, len(self.seed) + len(self.variant))

    def _changed(self, label: str, sizes: tuple[int, int, int]) -> None:
        self.accepted.append((fileset.pack(self.seed), fileset.pack(self.variant)))
        self.status.sizes = sizes
        self.status.label = label
        if self._progress is not None:
            self._progress(self.status)

    # -- whole files --------------------------------------------------------------------

    def try_sets(
        self, candidates: Iterable[tuple[Files, Files]], *, limit: Measure | None = None
    ) -> int | None:
        """Index of the first pair of sets (smaller than `limit`, by default the current
        pair) whose seed is good and variant bad the original way; it becomes current."""
        judge = PairJudge(self.engine, self.seed_ok, self.variant_ok, None, limit or self.measure())
        sizes: dict[int, tuple[int, int, int]] = {}

        def packed() -> Iterator[PairCandidate]:
            for index, (seed, variant) in enumerate(candidates):
                sizes[index] = self.sizes.of_sets(seed, variant)
                measure = _measure(sizes[index], len(seed) + len(variant))
                yield PairCandidate(fileset.pack(seed), fileset.pack(variant), measure)

        found = self.engine.first_judged(packed(), judge, label=self.label)
        if found is None:
            return None
        self.seed = fileset.unpack(found[1].seed)
        self.variant = fileset.unpack(found[1].variant)
        self._changed(self.label, sizes[found[0]])
        return found[0]

    def _ddmin_sets(
        self,
        units: Sequence[str],
        derive: Callable[[Files, Files, set[str]], tuple[Files, Files]],
        *,
        try_empty: bool,
    ) -> bool:
        """ddmin over path units: `derive(seed, variant, left out)` is the candidate pair."""
        if not units:
            return False
        base_seed, base_variant = self.seed, self.variant
        before = self.measure()

        def first_success(subsets: Sequence[Subset]) -> int | None:
            def pairs() -> Iterator[tuple[Files, Files]]:
                for subset in subsets:
                    kept = set(subset)
                    out = {unit for index, unit in enumerate(units) if index not in kept}
                    yield derive(base_seed, base_variant, out)

            return self.try_sets(pairs())

        ddmin(tuple(range(len(units))), first_success, try_empty=try_empty)
        return self.measure() < before

    def file_tdiff(self) -> bool:
        """Files only one set holds, removed from it: `seed:PATH` or `variant:PATH` units."""
        units = sorted(
            [f"seed:{path}" for path in self.seed.keys() - self.variant.keys()]
            + [f"variant:{path}" for path in self.variant.keys() - self.seed.keys()]
        )
        units = [unit for unit in units if unit.partition(":")[2] not in self.pinned]

        def derive(seed: Files, variant: Files, out: set[str]) -> tuple[Files, Files]:
            return (
                {path: text for path, text in seed.items() if f"seed:{path}" not in out},
                {path: text for path, text in variant.items() if f"variant:{path}" not in out},
            )

        return self._ddmin_sets(units, derive, try_empty=True)

    def file_ldiff(self) -> bool:
        """ddmin over the files whose versions differ: for each left out, the variant takes
        the seed's version, or loses the file when the seed has none."""
        units = sorted(
            path
            for path in self.seed.keys() | self.variant.keys()
            if self.seed.get(path) != self.variant.get(path)
            and not (path in self.pinned and path not in self.seed)
        )

        def derive(seed: Files, variant: Files, out: set[str]) -> tuple[Files, Files]:
            reverted = {path: text for path, text in variant.items() if path not in out}
            reverted.update((path, seed[path]) for path in out if path in seed)
            return seed, reverted

        return self._ddmin_sets(units, derive, try_empty=False)

    def file_commonality(self) -> bool:
        """Files both sets hold, removed from both."""
        units = sorted(
            path for path in self.seed.keys() & self.variant.keys() if path not in self.pinned
        )

        def derive(seed: Files, variant: Files, out: set[str]) -> tuple[Files, Files]:
            return (
                {path: text for path, text in seed.items() if path not in out},
                {path: text for path, text in variant.items() if path not in out},
            )

        return self._ddmin_sets(units, derive, try_empty=True)

    # -- inside files -------------------------------------------------------------------

    def _biggest_first(self, paths: Iterable[str]) -> list[str]:
        def size(path: str) -> int:
            return max(len(self.seed.get(path, b"")), len(self.variant.get(path, b"")))

        return sorted((p for p in paths if p not in self.opaque), key=lambda p: (-size(p), p))

    def _file_pair(self, path: str) -> PairCurrent:
        """`path`'s two versions as a pair whose candidates are judged as the two sets with
        each side in place, every other file fixed; each accepted pair updates the sets."""
        seed_place = fileset.placer(self.seed, path)
        variant_place = fileset.placer(self.variant, path)
        others = self.sizes.of_sets(self.seed, self.variant, leave_out=path)
        syntax = self.syntaxes.get(path)

        def changed(current: PairCurrent) -> None:
            state = current.state
            self.seed[path] = state.seed_text()
            self.variant[path] = state.variant_text()
            sizes = (
                others[0] + state.seed_tokens(),
                others[1] + state.variant_tokens(),
                others[2] + state.diff_tokens(),
            )
            self._changed(current.label, sizes)

        grammar = syntax.grammar if syntax is not None else None
        state = PairState.full(Alignment.of(self.seed[path], self.variant[path], grammar))
        current = PairCurrent(
            state,
            self.engine,
            syntax,
            self.seed_ok,
            self.variant_ok,
            changed,
            places=(seed_place, variant_place),
        )
        current.label = self.label
        return current

    def file_ppr(self) -> bool:
        """PPR on each file whose two versions differ, biggest first."""
        before = self.measure()
        differing = (
            path
            for path in self.seed.keys() & self.variant.keys()
            if self.seed[path] != self.variant[path]
        )
        for path in self._biggest_first(differing):
            reduce_pair(self._file_pair(path))
        return self.measure() < before

    def file_one_side(self) -> bool:
        """The single-program schedule on each file only one set holds, that set kept good
        (the seed's) or bad the original way (the variant's)."""
        before = self.measure()
        only = (self.seed.keys() - self.variant.keys()) | (self.variant.keys() - self.seed.keys())
        for path in self._biggest_first(only):
            in_seed = path in self.seed
            files = self.seed if in_seed else self.variant

            def changed(current: Current, path: str = path, files: Files = files) -> None:
                files[path] = current.text
                self._changed(current.label, self.sizes.of_sets(self.seed, self.variant))

            member = Current(
                files[path],
                self.engine,
                self.syntaxes.get(path),
                changed,
                place=fileset.placer(files, path),
                accepts=self.seed_ok if in_seed else self.variant_ok,
            )
            member.label = self.label
            reduce_program(member)
        return self.measure() < before

    def file_commonality_inside(self) -> bool:
        """Coarse commonality (first round) and MinCommonality on each file both sets hold
        identically; every candidate is applied to both sets."""
        before = self.measure()
        same = (
            path
            for path in self.seed.keys() & self.variant.keys()
            if self.seed[path] == self.variant[path]
        )
        for path in self._biggest_first(same):
            current = self._file_pair(path)
            round_ = Round(current, hoist=self.round > 0)
            for declared in ROUND:
                if declared.name in ("coarse-commonality", "min-commonality"):
                    run_pass(declared, round_, current)
        return self.measure() < before

    # -- the last touch -----------------------------------------------------------------

    def without_comments(self) -> None:
        """Every comment gone from every file with a grammar, when both sets keep their
        property (comments are no tokens, so no pass removes them on purpose); else file
        by file."""
        stripped_seed = {p: self._stripped(p, text) for p, text in self.seed.items()}
        stripped_variant = {p: self._stripped(p, text) for p, text in self.variant.items()}
        if (stripped_seed, stripped_variant) == (self.seed, self.variant):
            return
        limit = self.measure()
        limit = (limit[0], limit[1] + 1)  # no token goes: as small is small enough
        if self.try_sets([(stripped_seed, stripped_variant)], limit=limit) is not None:
            return
        for path in sorted(self.seed.keys() | self.variant.keys()):
            seed, variant = dict(self.seed), dict(self.variant)
            if path in seed:
                seed[path] = stripped_seed[path]
            if path in variant:
                variant[path] = stripped_variant[path]
            if (seed, variant) != (self.seed, self.variant):
                limit = self.measure()
                self.try_sets([(seed, variant)], limit=(limit[0], limit[1] + 1))

    def _stripped(self, path: str, text: bytes) -> bytes:
        syntax = self.syntaxes.get(path)
        return strip_comments(text, syntax) if syntax is not None else text

    def with_final_newlines(self, seed: Files, variant: Files) -> None:
        """The final newline put back on each file whose original had one and whose result
        lost it, when both sets keep their property."""

        def restored(files: Files, originals: Files) -> Files:
            return {
                path: text + b"\n"
                if text and not text.endswith(b"\n") and originals.get(path, b"").endswith(b"\n")
                else text
                for path, text in files.items()
            }

        candidate = (restored(self.seed, seed), restored(self.variant, variant))
        if candidate != (self.seed, self.variant):
            limit = self.measure()
            self.try_sets([candidate], limit=(limit[0], limit[1] + 1))


SET_ROUND: tuple[Pass[_SetPair], ...] = (
    Pass(
        "set-tdiff",
        _SetPair.file_tdiff,
        "whole files only one set holds, removed from it (ddmin)",
    ),
    Pass(
        "set-ldiff",
        _SetPair.file_ldiff,
        "ddmin over the files that differ: the variant takes the seed's version of those left out",
    ),
    Pass(
        "set-commonality",
        _SetPair.file_commonality,
        "whole files both sets hold, removed from both (ddmin)",
    ),
    Pass(
        "file-ppr",
        _SetPair.file_ppr,
        "PPR on each file whose versions differ, biggest first, the other files fixed",
    ),
    Pass(
        "file-one-side",
        _SetPair.file_one_side,
        "the single-program schedule on each file only one set holds",
    ),
    Pass(
        "file-commonality",
        _SetPair.file_commonality_inside,
        "coarse commonality and MinCommonality on files both sets hold identically",
    ),
)
"""One round over a pair of sets: differences before commonality, whole files before their
insides (see the module docstring)."""


def _reduce_sets(pair: _SetPair) -> None:
    """Rounds of `SET_ROUND` while the pair shrinks."""
    while True:
        before = pair.measure()
        for declared in SET_ROUND:
            run_pass(declared, pair, pair)
        pair.round += 1
        if pair.measure() >= before:
            return


# -- inputs -------------------------------------------------------------------------------


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
    pinned = _pinned_either(seed, variant, keep, variant.root)
    target = SetTarget(
        store=store,
        name=variant.root.name or "files",
        repo_path=set_repo_path(store, variant.root),
        output=output,
        input=", ".join(str(path) for path in variant_paths),
    )
    seed_input = ", ".join(str(path) for path in seed_paths)
    return _reduce(
        seed, variant, pinned, settings, target, seed_input, started, progress, result, echo
    )


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
    pinned = _pinned_either(seed, variant, keep, PurePosixPath(sets.root))
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
    summary = _reduce(
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
        _spec(settings, name),
        warnings,
        settings.jobs,
        _calibrator(settings, originals, echo),
    ) as run:

        def classify(commit: pygit2.Commit) -> Verdict:
            files = _set_at(sets, commit)
            if not files:
                return Verdict.SKIP
            outcome = run.engine.test(fileset.pack(files), label="bisect")
            if outcome.verdict is seed_expected:
                return Verdict.GOOD
            if run.is_interesting(outcome):
                return Verdict.BAD
            if outcome.verdict in (Verdict.BAD, Verdict.SKIP):
                return Verdict.SKIP  # a different failure: like 125
            return outcome.verdict

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
    if run.interrupted:  # even a search that ended: it may have had no reference to go by
        found = None
    if echo is not None:
        for warning in warnings:
            echo(f"warning: {warning}")
    return found, run.spec.command


def _pinned_either(
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


def _spec(settings: SetPairSettings, name: str) -> TestSpec:
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


def _calibrator(
    settings: SetPairSettings, originals: tuple[bytes, bytes], echo: Echo | None
) -> Calibrate:
    """Both original sets classified (or recalled): the seed good, the variant bad, whose
    outcome is the reference; `echo` hears which one the run waits for."""
    seed_expected = seed_verdict(settings.polarity)

    def calibrate(spec: TestSpec, cache: GitVerdictCache) -> tuple[TestSpec, Outcome]:
        try:
            with waiting_notice(echo, "the original seed set", spec):
                calibrate_cached(spec, originals[0], seed_expected, settings.jobs, cache)
        except UserError as error:
            raise type(error)(f"seed: {error}", error.exit_code) from None
        try:
            with waiting_notice(echo, "the original variant set", spec):
                return calibrate_cached(spec, originals[1], Verdict.BAD, settings.jobs, cache)
        except UserError as error:
            raise type(error)(f"variant: {error}", error.exit_code) from None

    return calibrate


def _reduce(
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
    sizes = _Sizes({path: syntax.grammar for path, syntax in syntaxes.items()})
    spec = _spec(settings, target.name)
    seed_expected = seed_verdict(settings.polarity)

    def seed_ok(outcome: Outcome) -> bool:
        return outcome.verdict is seed_expected

    calibrate = _calibrator(settings, (fileset.pack(seed.files), fileset.pack(variant.files)), echo)
    verified: list[tuple[bytes, bytes]] = []
    with calibrated_run(
        target.store, spec, warnings, settings.jobs, calibrate, settings.skip_passes
    ) as run:
        pair = _SetPair(
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
        _reduce_sets(pair)
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
        write_set(target.output / SEED_DIRECTORY, seed_files)
        write_set(target.output / VARIANT_DIRECTORY, variant_files)
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
