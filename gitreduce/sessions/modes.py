"""Wires input, language, oracle, engine and reporter together for one reduction.

Callable from Python as well as from the CLI; every problem the user can fix
surfaces as a `UserError`.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Literal, Protocol

import pygit2

from gitreduce.core.current import Current, render_deletions
from gitreduce.core.engine import Engine, Stats
from gitreduce.core.errors import MisclassifiedOriginal, UserError
from gitreduce.core.outcome import Outcome, Verdict
from gitreduce.git.bisect import PathBisect, bisect_path
from gitreduce.git.revisions import (
    find_repository,
    parse_range,
    read_file_at,
    resolve_commit,
    to_repo_path,
)
from gitreduce.git.store import (
    ResultRequest,
    Store,
    calibrate_cached,
    message,
    record,
    verdict_cache,
)
from gitreduce.git.verdicts import GitVerdictCache
from gitreduce.lang import grammars
from gitreduce.lang.syntax import Syntax
from gitreduce.oracle.runner import Oracle, OracleClosed, TestSpec
from gitreduce.pair.alignment import Alignment
from gitreduce.pair.current import PairCurrent
from gitreduce.pair.dd import isolate_hunks, isolate_tokens
from gitreduce.pair.ppr import reduce_pair
from gitreduce.pair.state import PairState
from gitreduce.passes.schedule import reduce_program


@dataclass(frozen=True)
class SingleSettings:
    """What `git reduce FILE` was asked to do."""

    path: Path
    test: str
    polarity: Literal["bisect", "interesting"] = "bisect"
    jobs: int = field(default_factory=lambda: os.cpu_count() or 1)
    timeout: float | None = None
    language: str | None = None
    signature: str | None = None
    any_failure: bool = False
    output: Path | None = None


class _Run(Protocol):
    test: str
    stats: Stats
    wall_seconds: float
    interrupted: bool
    warnings: list[str]
    branch: str | None
    commits: list[str]


def run_figures(run: _Run) -> dict[str, object]:
    """The timing and result part every mode's `--json` summary shares.

    Overhead is wall time during which no test was running: what the tool itself cost.
    """
    overhead = max(0.0, run.wall_seconds - run.stats.oracle_busy_seconds)
    return {
        "test": run.test,
        "wall_seconds": round(run.wall_seconds, 3),
        "oracle_seconds": round(run.stats.oracle_busy_seconds, 3),
        "overhead_seconds": round(overhead, 3),
        "interrupted": run.interrupted,
        "warnings": run.warnings,
        "branch": run.branch,
        "commits": run.commits,
    }


@dataclass
class Summary:
    """The figures a reporter prints and `--json` emits."""

    input: str
    output: str | None
    language: str | None
    tokens_before: int
    tokens_after: int
    bytes_before: int
    bytes_after: int
    stats: Stats
    wall_seconds: float
    interrupted: bool = False
    warnings: list[str] = field(default_factory=list)
    test: str = ""  # the command as it ran (see `calibrated_run`)
    branch: str | None = None
    commits: list[str] = field(default_factory=list)
    result: bytes = b""  # the reduced text, for reports

    def as_dict(self) -> dict[str, object]:
        return {
            "input": self.input,
            "output": self.output,
            "language": self.language,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "bytes_before": self.bytes_before,
            "bytes_after": self.bytes_after,
            "tests_run": self.stats.tests_run,
            "cache_hits": self.stats.cache_hits,
            "syntax_rejected": self.stats.syntax_rejected,
            "tests_by_pass": dict(self.stats.by_pass),
            **run_figures(self),
        }


Progress = Callable[[Current], None]


def read_input(path: Path) -> bytes:
    """The file's bytes, or a one-line reason why it cannot be reduced."""
    if not path.exists():
        raise UserError(f"{path}: no such file")
    if path.is_dir():
        raise UserError(f"{path} is a directory; give the one file to reduce")
    content = path.read_bytes()
    if b"\0" in content[:8192]:
        raise UserError(f"{path} is a binary file; gitreduce reduces text")
    if not content.strip():
        raise UserError(f"{path} is empty; there is nothing to reduce")
    return content


def resolve_grammar(path: Path, requested: str | None) -> tuple[grammars.Grammar | None, str]:
    """The grammar to use and a warning when falling back to lines and tokens."""
    if requested is not None:
        grammar = grammars.load(requested)
        if grammar is None:
            known = ", ".join(grammars.known_languages())
            raise UserError(f"unknown language {requested!r}; known: {known}")
        return grammar, ""
    name = grammars.detect(str(path))
    grammar = grammars.load(name) if name else None
    if grammar is None:
        return None, f"no grammar for {path.name}; reducing by lines and tokens (see --language)"
    return grammar, ""


def default_output(path: Path) -> Path:
    return path.with_name(f"{path.stem}.reduced{path.suffix}")


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM stops a reduction the way Ctrl-C does: best result kept, children killed."""

    def raise_interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, raise_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


Calibrate = Callable[[TestSpec, GitVerdictCache], tuple[TestSpec, Outcome]]


@dataclass
class CalibratedRun:
    """What a reduction works with: the engine, and the failure it must keep reproducing."""

    engine: Engine
    spec: TestSpec
    reference: Outcome
    interrupted: bool = False

    def is_interesting(self, outcome: Outcome) -> bool:
        return self.spec.is_interesting(self.reference, outcome)


@contextmanager
def calibrated_run(
    store: Store, spec: TestSpec, warnings: list[str], jobs: int, calibrate: Calibrate
) -> Iterator[CalibratedRun]:
    """Verdict cache, calibration of the originals, oracle and engine for one reduction.

    Ctrl-C, SIGTERM or a closed oracle inside the block only mark the run
    interrupted, so the caller still writes and records the best result; the
    oracle's processes and the engine's threads are gone when the block ends,
    and the cache is saved after them.
    """
    with sigterm_as_interrupt(), ExitStack() as caches:
        calibration_started = time.monotonic()
        cache = caches.enter_context(verdict_cache(store, spec, warnings))
        try:
            spec, reference = calibrate(spec, cache)
        except MisclassifiedOriginal as without_argument:
            # Scripts written as `test.sh FILE` (C-Reduce adapters, bench cases) get
            # nothing in $1 under the git-bisect-run convention; if they classify the
            # originals right once given the path, that is what the user meant.
            with_argument = spec.with_file_argument()
            if with_argument is None:
                raise
            cache = caches.enter_context(verdict_cache(store, with_argument, warnings))
            try:
                spec, reference = calibrate(with_argument, cache)
            except UserError:
                raise without_argument from None
            warnings.append(
                f"the test classifies the originals right only with the file as its argument, "
                f"so it runs as: {spec.command}"
            )
        calibration_seconds = time.monotonic() - calibration_started
        with Oracle(spec, jobs) as oracle:
            engine = Engine(
                cache.recording(oracle.run),
                lambda outcome: spec.is_interesting(reference, outcome),
                jobs=jobs,
                cache=cache,
            )
            engine.stats.oracle_busy_seconds += calibration_seconds  # the originals' runs
            run = CalibratedRun(engine, spec, reference)
            try:
                yield run
            except (KeyboardInterrupt, OracleClosed):
                run.interrupted = True
            finally:
                oracle.close()
                engine.close()


def reduce_file(
    settings: SingleSettings,
    progress: Progress | None = None,
    result: ResultRequest | None = None,
) -> Summary:
    """Reduce one file under the test; the result is written even when interrupted."""
    started = time.monotonic()
    original = read_input(settings.path)
    store = Store.near(settings.path)
    # Inside a repository the result is a branch; a file is written only when asked
    # for, so the user's working tree stays untouched.
    output = settings.output or (None if store.users else default_output(settings.path))
    if output is not None and not output.parent.is_dir():
        raise UserError(f"cannot write {output}: {output.parent} is not a directory")
    grammar, warning = resolve_grammar(settings.path, settings.language)
    warnings = [warning] if warning else []
    syntax = Syntax(grammar, original) if grammar else None
    if syntax is not None and syntax.baseline_errors:
        warnings.append(
            f"{settings.path.name} has {syntax.baseline_errors} syntax error(s) under the "
            f"{grammar.name} grammar; candidates may not add more"
        )
    spec = TestSpec(
        command=settings.test,
        relative_path=settings.path.name,
        polarity=settings.polarity,
        timeout=settings.timeout,
        signature_regex=settings.signature,
        any_failure=settings.any_failure,
    )
    with calibrated_run(
        store,
        spec,
        warnings,
        settings.jobs,
        lambda spec, cache: calibrate_cached(spec, original, Verdict.BAD, settings.jobs, cache),
    ) as run:
        current = Current(original, run.engine, syntax, progress)
        before_tokens = current.tokens
        if progress is not None:
            progress(current)
        reduce_program(current)
    settings = replace(settings, test=run.spec.command)
    if output is not None:
        output.write_bytes(current.text)
    repo_path = store.repo_path(settings.path)
    branch, commits = record(
        store,
        result or ResultRequest(),
        hint=settings.path.stem,
        path=repo_path,
        versions=[
            (
                message(
                    f"git reduce: reduced {repo_path}",
                    path=repo_path,
                    test=settings.test,
                    sources=[],
                    before=original,
                    after=current.text,
                    tokens=(before_tokens, current.tokens),
                ),
                current.text,
            )
        ],
        warnings=warnings,
    )
    return Summary(
        input=str(settings.path),
        output=str(output) if output is not None else None,
        language=grammar.name if grammar else None,
        tokens_before=before_tokens,
        tokens_after=current.tokens,
        bytes_before=len(original),
        bytes_after=len(current.text),
        stats=run.engine.stats,
        wall_seconds=time.monotonic() - started,
        interrupted=run.interrupted,
        warnings=warnings,
        test=settings.test,
        branch=branch,
        commits=commits,
        result=current.text,
    )


@dataclass(frozen=True)
class PairSettings:
    """What `git reduce --seed S --variant V` (or GOOD..BAD) was asked to do."""

    seed: bytes
    variant: bytes
    name: str  # the file name both are tested under
    test: str
    polarity: Literal["bisect", "interesting"] = "bisect"
    jobs: int = field(default_factory=lambda: os.cpu_count() or 1)
    timeout: float | None = None
    language: str | None = None
    signature: str | None = None
    any_failure: bool = False
    algorithm: PairAlgorithm = "ppr"
    path: str = ""  # repository-relative, for the result commits (default: name)
    sources: tuple[str, ...] = ()  # the seed's and the variant's commits, when known


PairAlgorithm = Literal["ppr", "dd", "dd-empty"]
# how often a dd run re-aligns its best pair for progress (the result is aligned at the end)
ISOLATION_REALIGN_SECONDS = 2.0
PAIR_ALGORITHMS: dict[str, PairAlgorithm] = {"ppr": "ppr", "dd": "dd", "dd-empty": "dd-empty"}


@dataclass
class PairSummary:
    """Sizes before and after for seed, variant and their difference, plus the run's figures."""

    name: str
    language: str | None
    algorithm: str
    seed_before: int
    variant_before: int
    diff_before: int
    seed_after: int
    variant_after: int
    diff_after: int
    seed: bytes
    variant: bytes
    stats: Stats
    wall_seconds: float
    interrupted: bool = False
    warnings: list[str] = field(default_factory=list)
    test: str = ""  # the command as it ran (see `calibrated_run`)
    branch: str | None = None
    commits: list[str] = field(default_factory=list)
    first_bad_commit: str | None = None

    def as_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "language": self.language,
            "algorithm": self.algorithm,
            "seed_tokens": [self.seed_before, self.seed_after],
            "variant_tokens": [self.variant_before, self.variant_after],
            "diff_tokens": [self.diff_before, self.diff_after],
            "tests_run": self.stats.tests_run,
            "cache_hits": self.stats.cache_hits,
            "syntax_rejected": self.stats.syntax_rejected,
            "tests_by_pass": dict(self.stats.by_pass),
            **run_figures(self),
            "first_bad_commit": self.first_bad_commit,
        }


PairProgress = Callable[["PairCurrent"], None]


def reduce_pair_texts(
    settings: PairSettings,
    store: Store,
    progress: PairProgress | None = None,
    result: ResultRequest | None = None,
) -> PairSummary:
    """Reduce a seed/variant pair (PPR, or the DD baseline); the best pair is kept on Ctrl-C."""
    started = time.monotonic()
    if settings.seed == settings.variant:
        raise UserError("the seed and the variant are identical; there is no difference to reduce")
    grammar, warning = resolve_grammar(Path(settings.name), settings.language)
    warnings = [warning] if warning else []
    syntax = Syntax(grammar, settings.variant) if grammar else None
    spec = _spec(settings)
    seed_expected = _seed_verdict(settings.polarity)
    alignment = Alignment.of(settings.seed, settings.variant, grammar)
    full = PairState.full(alignment)
    seed_out, variant_out = settings.seed, settings.variant

    def seed_ok(outcome: Outcome) -> bool:
        return outcome.verdict is seed_expected

    with calibrated_run(
        store,
        spec,
        warnings,
        settings.jobs,
        lambda spec, cache: _calibrate_pair(spec, settings, seed_expected, cache),
    ) as run:
        engine = run.engine
        current = PairCurrent(full, engine, syntax, seed_ok, run.is_interesting, progress)
        if progress is not None:
            progress(current)
        if settings.algorithm == "ppr":
            reduce_pair(current)
            seed_out, variant_out = _without_comments(
                current.state.seed_text(),
                current.state.variant_text(),
                syntax,
                engine,
                seed_ok,
                run.is_interesting,
            )
        else:
            _isolate(settings.algorithm, current, grammar)
            seed_out, variant_out = current.state.seed_text(), current.state.variant_text()
    if run.interrupted:
        seed_out, variant_out = current.state.seed_text(), current.state.variant_text()
    settings = replace(settings, test=run.spec.command)
    final = Alignment.of(seed_out, variant_out, grammar)
    summary = PairSummary(
        name=settings.name,
        language=grammar.name if grammar else None,
        algorithm=settings.algorithm,
        seed_before=len(alignment.seed),
        variant_before=len(alignment.variant),
        diff_before=alignment.diff_size,
        seed_after=len(final.seed),
        variant_after=len(final.variant),
        diff_after=final.diff_size,
        seed=seed_out,
        variant=variant_out,
        stats=engine.stats,
        wall_seconds=time.monotonic() - started,
        interrupted=run.interrupted,
        warnings=warnings,
        test=settings.test,
    )
    _record_pair(store, result or ResultRequest(), settings, summary)
    return summary


def _without_comments(
    seed: bytes,
    variant: bytes,
    syntax: Syntax | None,
    engine: Engine,
    seed_ok: Callable[[Outcome], bool],
    variant_ok: Callable[[Outcome], bool],
) -> tuple[bytes, bytes]:
    """The pair with every comment gone, when both programs keep their property.

    Comments are not tokens, so PPR never removes them on purpose; left in,
    one that survives on one side only shows up in `git show` of the result.
    """
    if syntax is None:
        return seed, variant
    stripped = tuple(_strip_comments(text, syntax) for text in (seed, variant))
    if stripped == (seed, variant):
        return seed, variant
    engine.pass_name = "comments"
    if variant_ok(engine.test(stripped[1])) and seed_ok(engine.test(stripped[0])):
        return stripped
    return seed, variant


def _strip_comments(text: bytes, syntax: Syntax) -> bytes:
    spans = []
    pending = [syntax.parse(text).tree.root_node]
    while pending:
        node = pending.pop()
        if "comment" in node.type:
            spans.append((node.start_byte, node.end_byte))
        else:
            pending.extend(node.children)
    return render_deletions(text, spans)


def _spec(settings: PairSettings) -> TestSpec:
    return TestSpec(
        command=settings.test,
        relative_path=settings.path or settings.name,  # where it lives in the repository
        polarity=settings.polarity,
        timeout=settings.timeout,
        signature_regex=settings.signature,
        any_failure=settings.any_failure,
    )


def _seed_verdict(polarity: str) -> Verdict:
    """What a passing seed looks like: good, or merely 'not interesting' for C-Reduce scripts."""
    return Verdict.GOOD if polarity == "bisect" else Verdict.SKIP


def _calibrate_pair(
    spec: TestSpec, settings: PairSettings, seed_expected: Verdict, cache: GitVerdictCache
) -> tuple[TestSpec, Outcome]:
    """Both originals classified (or recalled); the spec timed on the variant."""
    try:
        calibrate_cached(spec, settings.seed, seed_expected, settings.jobs, cache)
    except UserError as error:
        raise type(error)(f"seed: {error}", error.exit_code) from None
    try:
        return calibrate_cached(spec, settings.variant, Verdict.BAD, settings.jobs, cache)
    except UserError as error:
        raise type(error)(f"variant: {error}", error.exit_code) from None


def _record_pair(
    store: Store, request: ResultRequest, settings: PairSettings, summary: PairSummary
) -> None:
    path = settings.path or settings.name
    sources = list(settings.sources)
    seed_message = message(
        f"git reduce: reduced seed of {path}",
        path=path,
        test=settings.test,
        sources=sources[:1],
        before=settings.seed,
        after=summary.seed,
        tokens=(summary.seed_before, summary.seed_after),
    )
    variant_message = message(
        f"git reduce: failure-inducing change in {path} ({summary.diff_after} "
        f"token{'' if summary.diff_after == 1 else 's'})",
        path=path,
        test=settings.test,
        sources=sources[1:],
        before=settings.variant,
        after=summary.variant,
        tokens=(summary.variant_before, summary.variant_after),
    )
    hint = Path(path).stem + (f"-{sources[-1][:7]}" if sources else "")
    summary.branch, summary.commits = record(
        store,
        request,
        hint=hint,
        path=path,
        versions=[(seed_message, summary.seed), (variant_message, summary.variant)],
        warnings=summary.warnings,
    )


@dataclass(frozen=True)
class RevisionSettings:
    """`git reduce GOOD..BAD -- PATH`: where the pair comes from."""

    revisions: str
    path: str
    bisect: bool = True


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
    repo = find_repository(Path.cwd())
    store = Store(repo, users=True)
    good, bad = parse_range(revisions.revisions)
    path = to_repo_path(repo, revisions.path)
    seed, variant = read_file_at(repo, good, path), read_file_at(repo, bad, path)
    if seed == variant:
        raise UserError(f"{path} is identical at {good} and {bad}; nothing to reduce")
    sources = [str(resolve_commit(repo, good).id), str(resolve_commit(repo, bad).id)]
    name = PurePosixPath(path).name
    settings = replace(settings, seed=seed, variant=variant, name=name, path=path)
    if revisions.bisect:
        found, test = _bisect(repo, good, bad, path, settings, echo)
        settings = replace(settings, test=test)
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
    summary = reduce_pair_texts(settings, store, progress, result)
    summary.first_bad_commit = sources[1] if revisions.bisect else None
    return summary


def _bisect(
    repo: pygit2.Repository,
    good: str,
    bad: str,
    path: str,
    settings: PairSettings,
    echo: Callable[[str], None] | None,
) -> tuple[PathBisect, str]:
    """The first bad commit, and the test command as it ran (see `calibrated_run`)."""
    seed_expected = _seed_verdict(settings.polarity)
    warnings: list[str] = []
    with calibrated_run(
        Store(repo, users=True),
        _spec(settings),
        warnings,
        settings.jobs,
        lambda spec, cache: _calibrate_pair(spec, settings, seed_expected, cache),
    ) as run:
        run.engine.pass_name = "bisect"

        def classify(content: bytes) -> Verdict:
            outcome = run.engine.test(content)
            if outcome.verdict is seed_expected:
                return Verdict.GOOD
            if run.is_interesting(outcome):
                return Verdict.BAD
            if outcome.verdict in (Verdict.BAD, Verdict.SKIP):
                return Verdict.SKIP  # a different failure: like 125
            return outcome.verdict

        found = bisect_path(repo, good, bad, path, classify, echo)
    if run.interrupted:
        raise KeyboardInterrupt
    if echo is not None:
        for warning in warnings:
            echo(f"warning: {warning}")
    return found, run.spec.command


def _isolate(
    algorithm: PairAlgorithm, current: PairCurrent, grammar: grammars.Grammar | None
) -> None:
    """Zeller's dd, over the hunks (`dd`) or over the variant's tokens from nothing
    (`dd-empty`); `current` follows every narrower pair, so Ctrl-C keeps the best."""
    engine = current.engine

    def classify(state: PairState) -> Literal["pass", "fail", "unresolved"]:
        text = state.variant_text()
        if current.syntax is not None and not engine.parses(text, current.syntax.acceptable):
            return "unresolved"
        outcome = engine.test(text)
        if current.variant_ok(outcome):
            return "fail"
        return "pass" if current.seed_ok(outcome) else "unresolved"

    latest: list[tuple[PairState, PairState]] = []
    shown = [time.monotonic()]

    def adopt_latest() -> None:
        """The pair as a state: the passing program as its seed, the failing as its variant."""
        passing, failing = latest.pop()
        pair = Alignment.of(passing.variant_text(), failing.variant_text(), grammar)
        current.adopt(PairState.full(pair))
        shown[0] = time.monotonic()

    def follow(passing: PairState, failing: PairState) -> None:
        # aligning two big programs far apart is a long Myers run: only now and then
        latest[:] = [(passing, failing)]
        if time.monotonic() - shown[0] >= ISOLATION_REALIGN_SECONDS:
            adopt_latest()

    engine.pass_name = algorithm
    try:
        if algorithm == "dd":
            isolate_hunks(current.state, classify, follow)
            return
        from_nothing = PairState.full(Alignment.of(b"", current.state.variant_text(), grammar))
        empty = from_nothing.without_variant_tokens(range(len(from_nothing.alignment.variant)))
        if classify(empty) != "pass":
            raise UserError(
                "dd-empty grows its passing program from the empty one, but the test does not "
                "say good for an empty file; use --algorithm ppr or dd"
            )
        isolate_tokens(from_nothing, classify, follow)
    finally:
        if latest:
            adopt_latest()
