"""File-set mode: `git reduce DIR` or `git reduce FILE FILE...` reduces a whole reproduction.

Job: read the set (every regular file under a directory, or the files named,
at their paths relative to their common directory), test it as one candidate
(`gitreduce.core.fileset`: the oracle writes the set into its scratch dir and
`{}` names that dir), and reduce it: whole files first (ddmin over the
members not pinned with `--keep`), then the single-program schedule on each
file, biggest first, with the other files fixed; rounds repeat while the set
shrinks, since a file reduced can free declarations in another. At their
fixpoint the passes over the whole set run (`passes/across.py`: a name a
header declares and other files use, replaced in every file at once), and
the rounds again if they shrank it; then, at the fixpoint of both, each
file's final passes (`passes/schedule.FINAL`: lenient token deletion,
tidying), and everything again if those took tokens. Files with no
grammar are reduced by lines and tokens, as a single file would be. The
result is written as a directory when asked (or outside any repository) and
recorded as one commit holding the reduced set.

Single-file runs never come here: `git reduce FILE` keeps its own session,
its cache keys and its figures.
"""

from __future__ import annotations

import os
import posixpath
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePath, PurePosixPath
from typing import Literal

from gitreduce.core import fileset
from gitreduce.core.current import Current
from gitreduce.core.ddmin import Subset, ddmin
from gitreduce.core.engine import Engine
from gitreduce.core.errors import UserError
from gitreduce.core.outcome import Outcome, Verdict
from gitreduce.core.pass_runner import PassTarget, run_pass
from gitreduce.git.revisions import (
    to_repo_path,
)
from gitreduce.git.store import ResultRequest, Store, calibrate_cached, message, record
from gitreduce.git.verdicts import GitVerdictCache
from gitreduce.lang.syntax import Syntax, plain_tokens
from gitreduce.oracle.spec import TestSpec
from gitreduce.passes.across import ACROSS, SetProgram
from gitreduce.passes.schedule import finish_program, reduce_program
from gitreduce.sessions.interrupts import deferring
from gitreduce.sessions.run import (
    Echo,
    calibrated_run,
    refuse_overwriting,
    resolve_grammar,
    waiting_notice,
)
from gitreduce.sessions.set_files import FileSet, as_set, read_revision_sets, read_set, write_set
from gitreduce.sessions.single import Summary
from gitreduce.sessions.verify import backed_off, settle

FILES_PASS = "files"  # the label of the whole-file ddmin's tests


@dataclass(frozen=True)
class FileSetSettings:
    """What `git reduce DIR` or `git reduce FILE FILE...` was asked to do."""

    paths: tuple[Path, ...]
    test: str
    keep: tuple[Path, ...] = ()  # files never removed (a build script the test names)
    polarity: Literal["bisect", "interesting"] = "bisect"
    jobs: int = field(default_factory=lambda: os.cpu_count() or 1)
    timeout: float | None = None
    signature: str | None = None
    any_failure: bool = False
    output: Path | None = None  # the directory to write the reduced set into
    skip_passes: tuple[str, ...] = ()
    repeat: int = 1


@dataclass
class FileSetSummary(Summary):
    """A single-file summary (sizes summed over the set) plus the set's own figures."""

    files_before: int = 0
    files_after: int = 0
    files: dict[str, bytes] = field(default_factory=dict)  # the reduced set

    def as_dict(self) -> dict[str, object]:
        return super().as_dict() | {
            "files_before": self.files_before,
            "files_after": self.files_after,
            "files": sorted(self.files),
        }


class _Member(Current):
    """One file of the set as the current text, tested as the whole set with it in place;
    its size is reported as the whole set's, so progress shows the set shrinking."""

    def __init__(
        self,
        text: bytes,
        engine: Engine,
        syntax: Syntax | None,
        on_change: Callable[[Current], None],
        place: Callable[[bytes], bytes],
        others: int,
    ) -> None:
        super().__init__(text, engine, syntax, on_change, place=place)
        self.others = others

    @property
    def tokens(self) -> int:
        return super().tokens + self.others


Progress = Callable[[PassTarget], None]  # a member's `Current`, or the whole set


@dataclass(frozen=True)
class SetTarget:
    """Where a set comes from and where its result goes."""

    store: Store
    name: str  # the set's directory name: the scratch name and the branch hint
    repo_path: str  # the set's directory in the repository ("" for its top)
    output: Path | None
    input: str  # the inputs as given, for the summary
    sources: tuple[str, ...] = ()  # the commits it was read from


@deferring
def reduce_files(
    settings: FileSetSettings,
    progress: Progress | None = None,
    result: ResultRequest | None = None,
    echo: Echo | None = None,
) -> FileSetSummary:
    """Reduce a file set under the test; the result is written even when interrupted."""
    started = time.monotonic()
    read = read_set(settings.paths)
    pinned = _pinned(read, [path.resolve() for path in settings.keep], read.root)
    store = Store.near(read.root / next(iter(read.files)))  # inside the set's directory
    output = settings.output
    if output is None and not store.users:
        output = read.root.with_name(f"{read.root.name}.reduced")
    if output is not None and output.exists() and not output.is_dir():
        raise UserError(f"--output {output} exists and is not a directory")
    target = SetTarget(
        store=store,
        name=read.root.name or "files",
        repo_path=set_repo_path(store, read.root),
        output=output,
        input=", ".join(str(path) for path in settings.paths),
    )
    return _reduce(read, pinned, settings, target, started, progress, result, echo)


@deferring
def reduce_revision_set(
    revisions: str,
    paths: Sequence[str],
    settings: FileSetSettings,
    directory: Path | None = None,
    progress: Progress | None = None,
    result: ResultRequest | None = None,
    echo: Echo | None = None,
) -> FileSetSummary:
    """`GOOD..BAD -- PATH...`: the set of files under `paths` at BAD, reduced alone.

    The set at BAD is read from the object store (nothing touches the work
    tree) and reduced as a file set; GOOD only has to differ, which a warning
    says. The pairwise reduction of the change is `sessions/setpair_revisions.py`'s.
    """
    started = time.monotonic()
    sets = read_revision_sets(revisions, paths, directory)
    read = as_set(sets.directory, sets.variant, sets.skipped)
    read.warnings.append(
        f"the set at {sets.bad} is reduced alone, without the set at {sets.good}; "
        "git reduce GOOD..BAD -- PATH... reduces the change pairwise"
    )
    repo = sets.repo
    root = sets.root
    where = sets.paths
    good_commit, bad_commit = sets.good_commit, sets.bad_commit
    keep = [PurePosixPath(to_repo_path(repo, str(path), directory)) for path in settings.keep]
    target = SetTarget(
        store=Store(repo, users=True),
        name=posixpath.basename(root) or posixpath.basename(where[0]),
        repo_path=root,
        output=settings.output,
        input=f"{revisions} -- {' '.join(paths)}",
        sources=(str(good_commit.id), str(bad_commit.id)),
    )
    pinned = _pinned(read, keep, PurePosixPath(root))
    return _reduce(read, pinned, settings, target, started, progress, result, echo)


def _reduce(
    read: FileSet,
    pinned: frozenset[str],
    settings: FileSetSettings,
    target: SetTarget,
    started: float,
    progress: Progress | None,
    result: ResultRequest | None,
    echo: Echo | None,
) -> FileSetSummary:
    original = dict(read.files)
    output = target.output
    if output is not None:
        # the set's own directory: its files would be overwritten, those dropped removed
        refuse_overwriting([output], [read.root])
    store = target.store
    warnings = list(read.warnings)
    syntaxes, unparsed = member_syntaxes(original, read.opaque)
    if unparsed:
        warnings.append(f"no grammar for {', '.join(unparsed)}; reducing those by lines and tokens")
    spec = TestSpec(
        command=settings.test,
        relative_path=target.name,
        polarity=settings.polarity,
        timeout=settings.timeout,
        signature_regex=settings.signature,
        any_failure=settings.any_failure,
        repeat=settings.repeat,
        file_set=True,
    )
    files = dict(original)
    accepted = [fileset.pack(files)]  # every set taken as the best, to walk back along

    def tokens_of(path: str, text: bytes) -> int:
        syntax = syntaxes.get(path)
        return syntax.parse(text).tokens if syntax is not None else len(plain_tokens(text))

    def calibrate(spec: TestSpec, cache: GitVerdictCache) -> tuple[TestSpec, Outcome]:
        with waiting_notice(echo, "the original set", spec):
            return calibrate_cached(spec, accepted[0], Verdict.BAD, settings.jobs, cache)

    before_tokens = sum(tokens_of(path, text) for path, text in original.items())
    verified: list[bytes] = []  # the re-verified result, once the reduction ended by itself
    with calibrated_run(
        store, spec, warnings, settings.jobs, calibrate, settings.skip_passes
    ) as run:

        def each_member(reduce: Callable[[str, _Member], None]) -> None:
            """`reduce` each text member in turn, biggest first, the others fixed."""
            for path in sorted(files, key=lambda name: (-len(files[name]), name)):
                if path in read.opaque:
                    continue
                others = {name: text for name, text in files.items() if name != path}
                member = _Member(
                    files[path],
                    run.engine,
                    syntaxes.get(path),
                    _on_change(path, others, accepted, progress),
                    fileset.placer(others, path),
                    sum(tokens_of(name, text) for name, text in others.items()),
                )
                reduce(path, member)
                files[path] = member.text

        while True:
            size = len(accepted[-1])
            _drop_files(run.engine, files, pinned, accepted)
            each_member(lambda path, member: reduce_program(member, final=False))
            if len(accepted[-1]) < size:
                continue
            if _across(run.engine, files, syntaxes, accepted, progress):
                continue
            tokens = sum(tokens_of(path, text) for path, text in files.items())
            each_member(
                lambda path, member: finish_program(
                    member, ended_with_newline=original[path].endswith(b"\n")
                )
            )
            # Again only for tokens the final passes took (the lenient pass's): white space
            # tidied gives the rounds nothing new, only candidates no verdict is cached for.
            if sum(tokens_of(path, text) for path, text in files.items()) >= tokens:
                break
        settled = settle(run, accepted, lambda text: [(text, run.is_interesting, "it")])
        verified.append(settled.result)
        if settled.back:
            back = fileset.unpack(settled.result)
            warnings.append(
                backed_off(settled, f"{sum(tokens_of(p, t) for p, t in back.items())} tokens")
            )
    final = verified[0] if verified else accepted[-1]  # interrupted: the best so far
    files = fileset.unpack(final)
    if not files and not run.interrupted:
        warnings.append(empty_set(run.spec))
    after_tokens = sum(tokens_of(path, text) for path, text in files.items())
    command = run.spec.command
    if output is not None:
        write_set(output, files, original)
    branch, commits = record(
        store,
        result or ResultRequest(),
        hint=target.name,
        path=target.repo_path,
        versions=[
            (
                message(
                    f"git reduce: reduced {target.repo_path or target.name} "
                    f"({len(original)} -> {len(files)} files)",
                    path=target.repo_path or target.name,
                    test=command,
                    sources=list(target.sources),
                    before=b"".join(original.values()),
                    after=b"".join(files.values()),
                    tokens=(before_tokens, after_tokens),
                ),
                files,
            )
        ],
        warnings=warnings,
    )
    return FileSetSummary(
        input=target.input,
        output=str(output) if output is not None else None,
        language=None,
        tokens_before=before_tokens,
        tokens_after=after_tokens,
        bytes_before=sum(map(len, original.values())),
        bytes_after=sum(map(len, files.values())),
        stats=run.engine.stats,
        wall_seconds=time.monotonic() - started,
        interrupted=run.interrupted,
        verified=run.verified,
        signature=run.reference.signature if run.reference is not None else None,
        warnings=warnings,
        test=command,
        branch=branch,
        commits=commits,
        result=final,
        files_before=len(original),
        files_after=len(files),
        files=files,
    )


def set_repo_path(store: Store, root: Path) -> str:
    """The set's directory in the repository ("" for its top, or outside any repository)."""
    workdir = store.repo.workdir if store.users else None
    if workdir is None or root.resolve() == Path(workdir).resolve():
        return ""
    return store.repo_path(root)


def _pinned(read: FileSet, keep: Sequence[PurePath], root: PurePath) -> frozenset[str]:
    """The members `--keep` names (paths comparable with `root`), each of which must be in
    the set."""
    pinned = set()
    for path in keep:
        try:
            relative = path.relative_to(root).as_posix()
        except ValueError:
            relative = ""
        if relative not in read.files:
            raise UserError(f"--keep {path}: not a file of the set under {root}")
        pinned.add(relative)
    return frozenset(pinned)


def member_syntaxes(
    files: dict[str, bytes], opaque: frozenset[str]
) -> tuple[dict[str, Syntax], list[str]]:
    """Each text member's syntax gate, and the members no grammar parses."""
    syntaxes: dict[str, Syntax] = {}
    unparsed = []
    for path, text in sorted(files.items()):
        if path in opaque:
            continue
        grammar, _ = resolve_grammar(Path(path), None)
        if grammar is None:
            unparsed.append(path)
        else:
            syntaxes[path] = Syntax(grammar, text)
    return syntaxes, unparsed


def _drop_files(
    engine: Engine, files: dict[str, bytes], pinned: frozenset[str], accepted: list[bytes]
) -> None:
    """ddmin over the members not pinned: the set without as many whole files as can go."""
    removable = tuple(sorted(name for name in files if name not in pinned))
    snapshot = dict(files)

    def render(kept: Subset) -> bytes:
        going = {removable[index] for index in range(len(removable)) if index not in kept}
        return fileset.pack({name: text for name, text in snapshot.items() if name not in going})

    def first_success(subsets: Iterable[Subset]) -> int | None:
        found = engine.first_success(
            (render(subset) for subset in subsets),
            smaller_than=len(accepted[-1]),
            label=FILES_PASS,
        )
        if found is None:
            return None
        accepted.append(bytes(found[1]))
        return found[0]

    ddmin(tuple(range(len(removable))), first_success, try_empty=bool(pinned))
    kept = fileset.unpack(accepted[-1])
    for name in list(files):
        if name not in kept:
            del files[name]


def _across(
    engine: Engine,
    files: dict[str, bytes],
    syntaxes: dict[str, Syntax],
    accepted: list[bytes],
    progress: Progress | None,
) -> bool:
    """The passes over the whole set (`passes/across.py`), once the per-file rounds found
    nothing more; whether they shrank the set (then the rounds run again)."""

    def changed(program: SetProgram) -> None:
        accepted.append(program.packed)
        if progress is not None:
            progress(program)

    program = SetProgram(files, syntaxes, engine, changed)
    shrank = False
    for declared in ACROSS:
        shrank = run_pass(declared, program, program) or shrank
    files.update(program.files)
    return shrank


def _on_change(
    path: str, others: dict[str, bytes], accepted: list[bytes], progress: Progress | None
) -> Callable[[Current], None]:
    def changed(current: Current) -> None:
        accepted.append(fileset.pack({**others, path: current.text}))
        if progress is not None:
            progress(current)

    return changed


def empty_set(spec: TestSpec) -> str:
    """What an empty set most often means: a test that fails without looking at the files,
    like a `test.sh FILE` whose usage error exits 1, given no file."""
    return (
        "the result is empty: the test says a set of no files fails the same way as the "
        f"original. If that is not the bug, the test may not read the set (it runs as "
        f"`{spec.command}` in a directory holding the set's files, which `{{}}` and "
        "$GITREDUCE_FILE name)"
    )
