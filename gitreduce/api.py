"""The Python API: what `git reduce` does, callable from a script or a fuzzing pipeline.

Job: turn keyword arguments into the sessions' settings, call the same session
functions the command line calls, and return the same summary objects its
reporters render (`Summary`, `PairSummary`). The command line is a client of
this module. `pass_schedules` and `known_passes` (from `sessions/catalogue.py`) say
which passes there are, for `skip_passes` to switch off. `count_tokens` and `diff_tokens` measure
sizes the way every report does (`git reduce count`).

Nothing here prints or exits. Input the caller can fix raises `UserError`;
progress goes to the callbacks given. Ctrl-C (SIGINT) or SIGTERM at any
moment ends a reduction early with `interrupted` set on the summary, the best
result so far written and recorded: the originals themselves when it came
before the test was calibrated or during a bisect. Handlers for both signals
are installed for the run (see `gitreduce.sessions.interrupts`), so call from
the main thread. Relative paths, and a relative test script, are
taken from the current directory, as on the command line. The inputs are never
changed: inside a git repository the result is recorded as a branch; outside
one, `reduce_file` also writes NAME.reduced.EXT next to the input unless
`output` says where.

The test follows `git bisect run`: exit 0 = good, 125 = cannot be tested, other
1-127 = bad (the bug), >=128 = the test broke; with `interesting=True`, exit 0
means "still shows the bug" (C-Reduce/C-Vise scripts). The candidate is `{}` in
the command and $GITREDUCE_FILE. The result is run again alone at the end;
`verified` on the summary says it stood that (see docs/architecture.md).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from gitreduce.core.errors import UserError
from gitreduce.git.store import ResultRequest, Store
from gitreduce.lang import grammars
from gitreduce.oracle.executor import ExecutorChoice, opened_executor, parse_executor, using
from gitreduce.oracle.repeat import MAX_REPEAT
from gitreduce.pair import PAIR_ALGORITHMS, PairAlgorithm
from gitreduce.sessions.catalogue import NESTING_PASS as NESTING_PASS
from gitreduce.sessions.catalogue import chosen_passes
from gitreduce.sessions.catalogue import known_passes as known_passes
from gitreduce.sessions.catalogue import pass_schedules as pass_schedules
from gitreduce.sessions.run import read_input
from gitreduce.sessions.single import SingleSettings, Summary
from gitreduce.sessions.single import reduce_file as reduce_single_file

# The other modes' sessions load when one of them is called: a single file's reduction
# (and `git reduce count`) starts without the pairwise, file-set and revision machinery.
if TYPE_CHECKING:
    from gitreduce.core.current import Current
    from gitreduce.core.pass_runner import PassTarget
    from gitreduce.pair.current import PairCurrent
    from gitreduce.sessions.fileset import FileSetSummary
    from gitreduce.sessions.pair import PairSummary
    from gitreduce.sessions.setpair import SetPairSettings, SetPairSummary
    from gitreduce.sessions.setpair_search import SetPairStatus


def reduce_file(
    path: str | Path,
    test: str,
    *,
    interesting: bool = False,
    jobs: int | None = None,
    timeout: float | None = None,
    language: str | None = None,
    signature: str | None = None,
    any_failure: bool = False,
    repeat: int = 1,
    output: str | Path | None = None,
    branch: str | None = None,
    force: bool = False,
    patch: str | Path | None = None,
    skip_passes: Iterable[str] = (),
    rename: bool = True,
    executor: str = "local",
    progress: Callable[[Current], None] | None = None,
    echo: Callable[[str], None] | None = None,
) -> Summary:
    """Reduce the file at `path` to a smaller one that still fails `test` the same way.

    `jobs`: tests run in parallel (default: one per CPU). `timeout`: seconds per
    test (default: 10x the original's run, at least 1s). `language`: the grammar
    (default: from the extension). `signature`: a regex the failure's output
    must match (default: derived from the original's output); `any_failure`
    accepts any bad exit instead. `repeat`: runs per candidate, for a test that
    fails only sometimes: a candidate is judged by the majority of its runs
    (default 1; without it a test that disagrees with itself on the original
    is refused as flaky). `output`: where to write the result (default:
    NAME.reduced.EXT beside the input outside a repository, no file inside one).
    `branch`, `force`, `patch`: the result branch (default: reduce/NAME), whether
    it may be overwritten, and a file to write the result as a mail-ready patch.
    `skip_passes`: passes switched off, by name (`windows`) or full label
    (`min-commonality/tree`); see `pass_schedules`. `rename`: shorten the
    result's names and empty its string literals at the end (the `rename` pass: a
    few percent of the time, so on unless switched off; False keeps the names the
    reader knows from the original). `progress` is called with
    the current best after every improvement; `echo` (from another thread) with a
    line saying what the run waits for when the test on the original takes more
    than two seconds (a hanging test would otherwise be silent until its
    timeout). `executor`: where the tests run, `local` (this process's threads,
    the default), `dask-local` (a Dask LocalCluster started for the run, one
    single-threaded worker per job) or `dask://HOST:PORT` (a running Dask
    scheduler's workers, `jobs` tests in flight); see docs/cluster.md. The
    reduced text is `Summary.result`; `Summary.stats.pass_profile()` is what
    each pass cost.
    """
    choice = parse_executor(executor)
    settings = SingleSettings(
        path=Path(path),
        test=test,
        polarity=_polarity(interesting),
        jobs=_jobs(jobs),
        timeout=_timeout(timeout),
        language=language,
        signature=_signature(signature, any_failure),
        any_failure=any_failure,
        repeat=_repeat(repeat),
        output=Path(output) if output is not None else None,
        skip_passes=chosen_passes(skip_passes, rename),
    )
    with _executing(choice, settings.jobs, echo):
        return reduce_single_file(settings, progress, _request(branch, force, patch), echo)


def reduce_files(
    paths: Iterable[str | Path],
    test: str,
    *,
    keep: Iterable[str | Path] = (),
    revisions: str | None = None,
    repository: str | Path | None = None,
    interesting: bool = False,
    jobs: int | None = None,
    timeout: float | None = None,
    signature: str | None = None,
    any_failure: bool = False,
    repeat: int = 1,
    output: str | Path | None = None,
    branch: str | None = None,
    force: bool = False,
    patch: str | Path | None = None,
    skip_passes: Iterable[str] = (),
    rename: bool = True,
    executor: str = "local",
    progress: Callable[[PassTarget], None] | None = None,
    echo: Callable[[str], None] | None = None,
) -> FileSetSummary:
    """Reduce a whole reproduction: every file under a directory, or the files named.

    The test runs in a scratch directory holding the candidate set at its paths
    relative to the files' common directory; `{}` and $GITREDUCE_FILE name that
    directory, so `make`, `cc a.c b.c` or `python -m pkg` work as tests. Whole
    files go first (`keep`: files never removed, such as a build script the test
    runs), then each file is reduced as `reduce_file` would, biggest first, the
    others fixed. Each file's grammar comes from its name; files without one are
    reduced by lines and tokens, binary files only kept or removed whole.
    `output`: the directory to write the reduced set into (default: none inside
    a repository, DIR.reduced beside the set's directory outside one). The
    reduced set is `FileSetSummary.files`; the result branch's commit holds it
    and `patch` is a multi-file patch. `progress` is called with the file being
    reduced (a `Current`) or, while a pass edits several files at once, with the
    whole set (`passes/across.SetProgram`); both have `tokens`, `engine` and
    `label`. The other options are `reduce_file`'s.

    `revisions` ("GOOD..BAD"): the files under `paths` (relative to `repository`,
    default the current directory) are read at BAD from the object store and
    reduced alone, as a set; GOOD only has to differ. `reduce_set_revisions`
    reduces the change between the two sets pairwise.
    """
    from gitreduce.sessions.fileset import FileSetSettings, reduce_revision_set
    from gitreduce.sessions.fileset import reduce_files as reduce_file_set

    choice = parse_executor(executor)
    settings = FileSetSettings(
        paths=tuple(Path(path) for path in ([paths] if isinstance(paths, str) else paths)),
        test=test,
        keep=tuple(Path(path) for path in ([keep] if isinstance(keep, str) else keep)),
        polarity=_polarity(interesting),
        jobs=_jobs(jobs),
        timeout=_timeout(timeout),
        signature=_signature(signature, any_failure),
        any_failure=any_failure,
        repeat=_repeat(repeat),
        output=Path(output) if output is not None else None,
        skip_passes=chosen_passes(skip_passes, rename),
    )
    request = _request(branch, force, patch)
    with _executing(choice, settings.jobs, echo):
        if revisions is None:
            return reduce_file_set(settings, progress, request, echo)
        return reduce_revision_set(
            revisions,
            [str(path) for path in settings.paths],
            settings,
            Path(repository) if repository is not None else None,
            progress,
            request,
            echo,
        )


def reduce_set_pair(
    seed: str | Path | Iterable[str | Path],
    variant: str | Path | Iterable[str | Path],
    test: str,
    *,
    keep: Iterable[str | Path] = (),
    interesting: bool = False,
    jobs: int | None = None,
    timeout: float | None = None,
    signature: str | None = None,
    any_failure: bool = False,
    repeat: int = 1,
    output: str | Path | None = None,
    branch: str | None = None,
    force: bool = False,
    patch: str | Path | None = None,
    skip_passes: Iterable[str] = (),
    rename: bool = True,
    executor: str = "local",
    progress: Callable[[SetPairStatus], None] | None = None,
    echo: Callable[[str], None] | None = None,
) -> SetPairSummary:
    """Reduce a passing set of files (`seed`: a directory, or files) and a failing one
    (`variant`) together, down to the change that fails (PPR over file sets).

    Each set is read as `reduce_files` reads one (paths relative to its own
    directory), tested as `reduce_files` tests one, and the seed set must stay
    good and the variant set bad the original way. Files that differ are
    reduced pairwise, files both hold alike in both at once (see
    `gitreduce.sessions.setpair`). `keep`: files of either set never removed.
    `output`: a directory that receives the reduced sets as `seed/` and
    `variant/` (default: none inside a repository, VARIANT.reduced beside the
    variant's directory outside one). The reduced sets are
    `SetPairSummary.seed_files` and `.variant_files`; the result branch holds
    two commits (seed set, then variant set) and `patch` is the second as a
    multi-file patch. The other options are `reduce_file`'s.
    """
    from gitreduce.sessions.setpair import reduce_set_pair as reduce_sets

    choice = parse_executor(executor)
    settings = _set_pair_settings(
        test,
        keep,
        interesting,
        jobs,
        timeout,
        signature,
        any_failure,
        repeat,
        output,
        skip_passes,
        rename,
    )
    with _executing(choice, settings.jobs, echo):
        return reduce_sets(
            _paths(seed), _paths(variant), settings, progress, _request(branch, force, patch), echo
        )


def reduce_set_revisions(
    revisions: str,
    paths: str | Path | Iterable[str | Path],
    test: str,
    *,
    bisect: bool = True,
    repository: str | Path | None = None,
    keep: Iterable[str | Path] = (),
    interesting: bool = False,
    jobs: int | None = None,
    timeout: float | None = None,
    signature: str | None = None,
    any_failure: bool = False,
    repeat: int = 1,
    output: str | Path | None = None,
    branch: str | None = None,
    force: bool = False,
    patch: str | Path | None = None,
    skip_passes: Iterable[str] = (),
    rename: bool = True,
    executor: str = "local",
    progress: Callable[[SetPairStatus], None] | None = None,
    echo: Callable[[str], None] | None = None,
) -> SetPairSummary:
    """Reduce the change to the files under `paths` between the commits of `revisions`
    ("GOOD..BAD") pairwise: the set at GOOD is the seed, the set at BAD the variant, both
    read from the object store (nothing is checked out), reduced as `reduce_set_pair`
    does. When several commits between them change the set, they are bisected first
    (unless `bisect=False`) and the set at the first bad commit's parent is reduced
    against the set at that commit, as `reduce_revisions` does for one path;
    `SetPairSummary.first_bad_commit` names it. `repository`: a directory in the work
    tree that `paths` are relative to (default: the current directory).
    """
    from gitreduce.sessions.setpair_revisions import reduce_revision_set_pair

    choice = parse_executor(executor)
    settings = _set_pair_settings(
        test,
        keep,
        interesting,
        jobs,
        timeout,
        signature,
        any_failure,
        repeat,
        output,
        skip_passes,
        rename,
    )
    with _executing(choice, settings.jobs, echo):
        return reduce_revision_set_pair(
            revisions,
            [str(path) for path in _paths(paths)],
            settings,
            Path(repository) if repository is not None else None,
            progress,
            _request(branch, force, patch),
            echo,
            bisect=bisect,
        )


def _paths(paths: str | Path | Iterable[str | Path]) -> tuple[Path, ...]:
    if isinstance(paths, (str, Path)):
        return (Path(paths),)
    return tuple(Path(path) for path in paths)


def _set_pair_settings(
    test: str,
    keep: Iterable[str | Path],
    interesting: bool,
    jobs: int | None,
    timeout: float | None,
    signature: str | None,
    any_failure: bool,
    repeat: int,
    output: str | Path | None,
    skip_passes: Iterable[str],
    rename: bool,
) -> SetPairSettings:
    from gitreduce.sessions.setpair import SetPairSettings

    return SetPairSettings(
        test=test,
        keep=_paths(keep),
        polarity=_polarity(interesting),
        jobs=_jobs(jobs),
        timeout=_timeout(timeout),
        signature=_signature(signature, any_failure),
        any_failure=any_failure,
        repeat=_repeat(repeat),
        output=Path(output) if output is not None else None,
        skip_passes=chosen_passes(skip_passes, rename),
    )


def reduce_pair(
    seed: str | Path,
    variant: str | Path,
    test: str,
    *,
    interesting: bool = False,
    algorithm: PairAlgorithm = "ppr",
    jobs: int | None = None,
    timeout: float | None = None,
    language: str | None = None,
    signature: str | None = None,
    any_failure: bool = False,
    repeat: int = 1,
    branch: str | None = None,
    force: bool = False,
    patch: str | Path | None = None,
    skip_passes: Iterable[str] = (),
    rename: bool = True,
    executor: str = "local",
    progress: Callable[[PairCurrent], None] | None = None,
    echo: Callable[[str], None] | None = None,
) -> PairSummary:
    """Reduce a passing `seed` and a failing `variant` together, down to the change that fails.

    Both are tested under the variant's file name. `algorithm`: "ppr" (default),
    "dd" (Zeller's dd over the diff's hunks) or "dd-empty" (dd over the
    variant's tokens from an empty program, the seed ignored). The other options
    are `reduce_file`'s. The reduced programs are `PairSummary.seed` and
    `PairSummary.variant`; nothing is written but the result branch (or patch).
    """
    from gitreduce.sessions.pair import PairSettings, reduce_pair_texts

    choice = parse_executor(executor)
    algorithm = _algorithm(algorithm)
    variant_path = Path(variant)
    settings = PairSettings(
        seed=read_input(Path(seed)),
        variant=read_input(variant_path),
        name=variant_path.name,
        test=test,
        polarity=_polarity(interesting),
        jobs=_jobs(jobs),
        timeout=_timeout(timeout),
        language=language,
        signature=_signature(signature, any_failure),
        any_failure=any_failure,
        repeat=_repeat(repeat),
        algorithm=algorithm,
        skip_passes=chosen_passes(skip_passes, rename),
    )
    store = Store.near(variant_path)
    with _executing(choice, settings.jobs, echo):
        return reduce_pair_texts(settings, store, progress, _request(branch, force, patch), echo)


def reduce_revisions(
    revisions: str,
    path: str | Path,
    test: str,
    *,
    bisect: bool = True,
    repository: str | Path | None = None,
    interesting: bool = False,
    algorithm: PairAlgorithm = "ppr",
    jobs: int | None = None,
    timeout: float | None = None,
    language: str | None = None,
    signature: str | None = None,
    any_failure: bool = False,
    repeat: int = 1,
    branch: str | None = None,
    force: bool = False,
    patch: str | Path | None = None,
    skip_passes: Iterable[str] = (),
    rename: bool = True,
    executor: str = "local",
    progress: Callable[[PairCurrent], None] | None = None,
    echo: Callable[[str], None] | None = None,
) -> PairSummary:
    """Reduce the change to `path` between the commits of `revisions` ("GOOD..BAD").

    Reads `path` at GOOD and BAD from the object store (nothing is checked out),
    bisects to the first bad commit (unless `bisect=False`) and reduces the pair
    around it as `reduce_pair` does; `PairSummary.first_bad_commit` names it.
    `repository`: a directory in the work tree that `path` is relative to
    (default: the current directory). `echo` receives the bisect's report, one
    line at a time, and what the run waits for as `reduce_file` says. The other
    options are `reduce_pair`'s.
    """
    from gitreduce.sessions.pair import PairSettings
    from gitreduce.sessions.revisions import RevisionSettings
    from gitreduce.sessions.revisions import reduce_revisions as reduce_revision_range

    choice = parse_executor(executor)
    algorithm = _algorithm(algorithm)
    where = RevisionSettings(
        revisions=revisions,
        path=str(path),
        bisect=bisect,
        directory=Path(repository) if repository is not None else None,
    )
    settings = PairSettings(
        seed=b"",
        variant=b"",
        name="",
        test=test,
        polarity=_polarity(interesting),
        jobs=_jobs(jobs),
        timeout=_timeout(timeout),
        language=language,
        signature=_signature(signature, any_failure),
        any_failure=any_failure,
        repeat=_repeat(repeat),
        algorithm=algorithm,
        skip_passes=chosen_passes(skip_passes, rename),
    )
    with _executing(choice, settings.jobs, echo):
        return reduce_revision_range(
            where, settings, progress, _request(branch, force, patch), echo
        )


def count_tokens(source: str | Path | bytes, language: str | None = None) -> int:
    """The size of a program in tokens, as every summary and benchmark figure counts it.

    A token is a non-empty leaf of the tree-sitter parse tree that is not a
    comment; `source` is a path (its extension picks the grammar) or the text
    itself. `language` names the grammar instead (`grammars.known_languages`);
    with neither, or for a language no grammar parses, words and punctuation
    marks are counted. Counting here rather than with a tool of one's own
    keeps a user's figures comparable with the reductions' (`reduced: 263 → 14
    tokens`).
    """
    from gitreduce.pair.tokens import tokenize

    text, name = _source(source)
    return len(tokenize(text, _grammar(name, language)))


def diff_tokens(
    seed: str | Path | bytes, variant: str | Path | bytes, language: str | None = None
) -> int:
    """The size of the difference of two programs: tokens inserted plus deleted by a minimal
    token diff, the PPR paper's difference size and the `difference` a pair's summary reports.

    Each is tokenised as `count_tokens` does (with `language`, else by its own
    extension; text given as bytes by `language` or into words).
    """
    from gitreduce.pair.alignment import diff_ops
    from gitreduce.pair.tokens import tokenize

    seed_text, seed_name = _source(seed)
    variant_text, variant_name = _source(variant)
    seed_tokens = tokenize(seed_text, _grammar(seed_name, language)).texts()
    variant_tokens = tokenize(variant_text, _grammar(variant_name, language)).texts()
    return sum(count for op, count in diff_ops(seed_tokens, variant_tokens) if op)


def _source(source: str | Path | bytes) -> tuple[bytes, str | None]:
    """The text to count and the file name that may imply its language (None for bytes)."""
    if isinstance(source, bytes):
        return source, None
    path = Path(source)
    if not path.exists():
        raise UserError(f"{path}: no such file")
    if path.is_dir():
        raise UserError(f"{path} is a directory; give a file")
    try:
        return path.read_bytes(), path.name
    except OSError as error:
        raise UserError(f"cannot read {path}: {error.strerror}") from None


def _grammar(name: str | None, language: str | None) -> grammars.Grammar | None:
    if language is not None:
        grammar = grammars.load(language)
        if grammar is None:
            known = ", ".join(grammars.known_languages())
            raise UserError(f"unknown language {language!r}; known: {known}")
        return grammar
    detected = grammars.detect(name) if name is not None else None
    return grammars.load(detected) if detected is not None else None


@contextmanager
def _executing(
    choice: ExecutorChoice, jobs: int, echo: Callable[[str], None] | None
) -> Iterator[None]:
    """The run's tests go to `choice` while the block runs; a LocalCluster has one worker
    per job, so that `jobs` means the same there as on this machine's threads."""
    with opened_executor(choice, workers=jobs, notice=echo) as opened, using(opened):
        yield


def _polarity(interesting: bool) -> Literal["bisect", "interesting"]:
    return "interesting" if interesting else "bisect"


def _jobs(jobs: int | None) -> int:
    if jobs is None:
        return os.cpu_count() or 1
    if jobs < 1:
        raise UserError(f"jobs must be at least 1, not {jobs}")
    return jobs


def _repeat(repeat: int) -> int:
    if repeat < 1:
        raise UserError(f"repeat must be at least 1, not {repeat}")
    if repeat > MAX_REPEAT:
        raise UserError(f"repeat must be at most {MAX_REPEAT}, not {repeat}")
    return repeat


def _timeout(timeout: float | None) -> float | None:
    if timeout is not None and not (math.isfinite(timeout) and timeout > 0):
        raise UserError(f"timeout must be a positive number of seconds, not {timeout:g}")
    return timeout


def _signature(signature: str | None, any_failure: bool) -> str | None:
    if signature is not None and any_failure:
        raise UserError("signature and any_failure exclude each other")
    return signature


def _algorithm(algorithm: str) -> PairAlgorithm:
    if algorithm not in PAIR_ALGORITHMS:
        raise UserError(f"unknown algorithm {algorithm!r}; use ppr, dd or dd-empty")
    return PAIR_ALGORITHMS[algorithm]


def _request(branch: str | None, force: bool, patch: str | Path | None) -> ResultRequest:
    return ResultRequest(
        branch=branch, force=force, patch=Path(patch) if patch is not None else None
    )
