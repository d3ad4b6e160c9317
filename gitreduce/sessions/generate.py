"""Wires `git reduce generate`: generator workers, the oracle, the engine, the git store.

The generator is the user's code, so it never runs in this process: the
worker pool (generator/pool.py) records and replays it. Everything else
mirrors single-file mode (sessions/modes.py): each re-execution's output is
one candidate for the engine, so the same size gate, verdict cache in the
git object store, signature check against the original's failure and
parallel judging with a deterministic winner apply; the result is written
with --output and recorded as a commit.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from gitreduce.core.current import Current
from gitreduce.core.engine import Engine
from gitreduce.core.errors import UserError
from gitreduce.core.outcome import Outcome, Verdict
from gitreduce.core.stats import Stats
from gitreduce.generator import DEFAULT_GENERATOR_TIMEOUT
from gitreduce.generator.plan import Edits, canonical, feasible, removable
from gitreduce.generator.pool import GeneratorPool, PoolClosed
from gitreduce.generator.replay import Alignment
from gitreduce.generator.search import Strategy, reduce_trace
from gitreduce.generator.target import TargetSpec
from gitreduce.generator.trace import Trace
from gitreduce.git.results import result_message
from gitreduce.git.store import ResultRequest, Store, calibrate_cached, record
from gitreduce.git.verdicts import GitVerdictCache
from gitreduce.lang import grammars
from gitreduce.lang.syntax import Syntax, plain_tokens
from gitreduce.oracle.runner import OracleClosed
from gitreduce.oracle.spec import TestSpec
from gitreduce.passes.schedule import reduce_program
from gitreduce.sessions.interrupts import deferring
from gitreduce.sessions.run import (
    Echo,
    calibrated_run,
    default_output,
    resolve_grammar,
    run_figures,
    waiting_notice,
)
from gitreduce.sessions.verify import backed_off, settle


@dataclass(frozen=True)
class GenerateSettings:
    """What `git reduce generate` was asked to do."""

    generator: str  # a Python file, FILE.py:FUNCTION or MODULE:FUNCTION
    seed: int
    test: str
    entry: str | None = None
    polarity: Literal["bisect", "interesting"] = "bisect"
    name: str | None = None  # the file name the input is tested and recorded under
    output: Path | None = None
    strategy: Strategy = "tree"
    alignment: Alignment = Alignment.REALIGN
    jobs: int = field(default_factory=lambda: os.cpu_count() or 1)
    timeout: float | None = None  # per test
    generator_timeout: float = DEFAULT_GENERATOR_TIMEOUT  # per generator run
    signature: str | None = None
    any_failure: bool = False
    repeat: int = 1  # runs per candidate, judged by their majority
    # After the trace: reduce the generated input as `git reduce FILE` would.
    polish: bool = True


@dataclass
class GenerateSummary:
    """The figures the CLI prints and `--json` emits."""

    generator: str
    seed: int
    name: str
    output: str | None
    strategy: str
    alignment: str
    bytes_before: int
    bytes_after: int
    tokens_before: int
    tokens_after: int
    decisions_before: int
    decisions_after: int
    parts_before: int
    parts_after: int
    stats: Stats
    generator_runs: int
    generator_failures: dict[str, int]
    misaligned: int
    wall_seconds: float
    # the smallest input the generator itself wrote; `*_after` are after polishing
    bytes_generated: int = 0
    tokens_generated: int = 0
    text: bytes = b""
    interrupted: bool = False
    verified: bool = False  # the result stood its re-verification alone (see sessions/verify.py)
    warnings: list[str] = field(default_factory=list)
    test: str = ""  # the command as it ran (see `calibrated_run`)
    signature: str | None = None  # how the original fails (None: not calibrated)
    branch: str | None = None
    commits: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        return {
            "generator": self.generator,
            "seed": self.seed,
            "name": self.name,
            "output": self.output,
            "strategy": self.strategy,
            "alignment": self.alignment,
            "bytes_before": self.bytes_before,
            "bytes_after": self.bytes_after,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "bytes_generated": self.bytes_generated,
            "tokens_generated": self.tokens_generated,
            "decisions_before": self.decisions_before,
            "decisions_after": self.decisions_after,
            "parts_before": self.parts_before,
            "parts_after": self.parts_after,
            "not_smaller": self.stats.not_smaller,
            "generator_runs": self.generator_runs,
            "generator_failures": dict(self.generator_failures),
            "misaligned": self.misaligned,
            **run_figures(self),
        }


def parse_target(generator: str, entry: str | None, cwd: Path) -> TargetSpec:
    """GEN as the user wrote it: `gen.py`, `gen.py:make`, `package.module:make` or a module."""
    location, named = generator, None
    if ":" in generator and not Path(generator).exists():
        location, _, named = generator.rpartition(":")
        if not location or not named.isidentifier():
            raise UserError(
                f"{generator}: give the generator as FILE.py, FILE.py:FUNCTION or MODULE:FUNCTION"
            )
    if entry is not None and named is not None and entry != named:
        raise UserError(
            f"{generator} names the entry function {named!r}, but --entry says {entry!r}"
        )
    entry = entry or named
    path = Path(location)
    if path.suffix == ".py" or os.sep in location or path.exists():
        if path.is_dir():
            raise UserError(f"{location} is a directory; give the generator's Python file")
        if not path.is_file():
            raise UserError(f"{location}: no such file")
        return TargetSpec("file", str((cwd / path).resolve()), entry, str(cwd))
    if not all(part.isidentifier() for part in location.split(".")):
        raise UserError(f"{location}: neither a Python file nor a module name")
    return TargetSpec("module", location, entry, str(cwd))


# -- the engine's side -------------------------------------------------------------------


class TraceSearcher:
    """Evaluates batches of reduced traces through the engine: the searcher search.py drives."""

    def __init__(
        self,
        engine: Engine,
        pool: GeneratorPool,
        original: Trace,
        is_interesting: Callable[[Outcome], bool],
        settings: GenerateSettings,
        replay_timeout: float,
        progress: Callable[[TraceSearcher], None] | None,
    ) -> None:
        self.engine = engine
        self.pool = pool
        self.is_interesting = is_interesting
        self.settings = settings
        self.replay_timeout = replay_timeout
        self._progress = progress
        self._best = original
        self.lock = threading.Lock()
        self.memo: dict[tuple[int, Edits], tuple[bool, Trace | None]] = {}
        self._bases: dict[int, tuple[int, Trace]] = {}
        self.runs = 0
        self.failures: dict[str, int] = {}
        self.misaligned = 0

    @property
    def current(self) -> Trace:
        return self._best

    def base_id(self, base: Trace) -> int:
        found = self._bases.get(id(base))
        if found is None or found[1] is not base:
            found = (len(self._bases) + 1, base)
            self._bases[id(base)] = found  # holding the trace keeps its id unique
        return found[0]

    def first_success(self, base: Trace, removals: Sequence[Edits]) -> int | None:
        base_id = self.base_id(base)
        judge = _Judge(self, base, base_id, len(self._best.output), len(removals))
        found = self.engine.first_judged(
            list(enumerate(removals)), judge, label=self.settings.strategy
        )
        if found is None:
            return None
        index, (_, removed) = found
        verdict, trace = self.memo[(base_id, canonical(base, removed))]
        assert verdict and trace is not None
        self._best = trace
        if self._progress is not None:
            self._progress(self)
        return index


class _Judge:
    """A reduced trace is interesting when its re-execution's output is smaller and fails the
    test the same way; known answers (and infeasible counts) are settled without a run.

    Candidates come numbered by their place in the batch. Unlike a text, a reduced
    trace's verdict cannot be looked up before the generator has re-run it, so every
    candidate reaches `full` and runs in parallel with the earlier ones. A candidate's
    test therefore waits until every earlier candidate has been re-executed, and is
    skipped when one of them is already known to be interesting: such a test could not
    change the answer, and a run that recalls all its verdicts from the cache would
    otherwise race its lookups against the re-execution of a later candidate, whose
    test the first run had no reason to finish. With the wait, a rerun settles the
    batch from the cache before any later candidate may test, so it runs no test at all.
    """

    def __init__(
        self, searcher: TraceSearcher, base: Trace, base_id: int, smaller_than: int, size: int
    ) -> None:
        self._searcher = searcher
        self._base = base
        self._base_id = base_id
        self._smaller_than = smaller_than
        self._replayed = [threading.Event() for _ in range(size)]
        self._interesting = [False] * size  # known before any test of its own

    def _key(self, removed: Edits) -> tuple[int, Edits]:
        return (self._base_id, canonical(self._base, removed))

    def _settle(self, index: int, interesting: bool) -> bool:
        """Record what is known of candidate `index` once it needs no more re-execution."""
        self._interesting[index] = interesting
        self._replayed[index].set()
        return interesting

    def _earlier_interesting(self, index: int) -> bool:
        """Wait until every earlier candidate is re-executed; whether one is interesting."""
        for event in self._replayed[:index]:
            event.wait()
        return any(self._interesting[:index])

    def quick(self, candidate: tuple[int, Edits]) -> bool | None:
        index, removed = candidate
        searcher = self._searcher
        key = self._key(removed)
        with searcher.lock:
            known = searcher.memo.get(key)
        if known is not None:
            verdict, trace = known
            if not verdict or trace is None:
                return self._settle(index, False)
            if len(trace.output) >= self._smaller_than:
                searcher.engine.stats.not_smaller += 1
                return self._settle(index, False)
            return self._settle(index, True)
        if not feasible(self._base, removed):
            with searcher.lock:
                searcher.memo[key] = (False, None)
                searcher.failures["infeasible count"] = (
                    searcher.failures.get("infeasible count", 0) + 1
                )
            return self._settle(index, False)
        return None

    def full(self, candidate: tuple[int, Edits]) -> bool:
        index, removed = candidate
        try:
            return self._full(index, removed)
        finally:
            self._replayed[index].set()  # also when closing: nobody may wait on it forever

    def _full(self, index: int, removed: Edits) -> bool:
        searcher = self._searcher
        settings = searcher.settings
        try:
            replayed = searcher.pool.replay(
                self._base_id,
                self._base,
                removed,
                settings.alignment,
                settings.seed,
                searcher.replay_timeout,
            )
        except PoolClosed:
            raise OracleClosed from None
        key = self._key(removed)
        with searcher.lock:
            searcher.runs += replayed.runs
            searcher.misaligned += replayed.misaligned
            if replayed.trace is None:
                reason = _reason(replayed.failure)
                searcher.failures[reason] = searcher.failures.get(reason, 0) + 1
                searcher.memo[key] = (False, None)
                return self._settle(index, False)
        text = replayed.trace.output
        if len(text) >= self._smaller_than:
            with searcher.lock:
                searcher.engine.stats.not_smaller += 1
                searcher.memo[key] = (False, None)
            return self._settle(index, False)
        engine = searcher.engine
        outcome = engine.recall(text, searcher.is_interesting)
        if outcome is None:
            self._settle(index, False)
            if self._earlier_interesting(index):
                return False  # cannot be the answer; not memoised, its verdict is unknown
            outcome = engine.outcome(text, searcher.is_interesting)
        verdict = searcher.is_interesting(outcome)
        with searcher.lock:
            searcher.memo[key] = (verdict, replayed.trace if verdict else None)
        return self._settle(index, verdict)


def _reason(failure: str | None) -> str:
    """Failure reasons grouped for the summary: a generator exception's message varies."""
    if failure is None:
        return "failed"
    if failure.startswith("the generator raised"):
        return failure.split(":")[0].split(" (")[0]
    return failure


# -- the session -------------------------------------------------------------------------

# Called with the searcher while the trace is reduced, then with the polishing state.
Progress = Callable[[TraceSearcher | Current], None]


def _tokens(name: str, text: bytes) -> int:
    language = grammars.detect(name)
    grammar = grammars.load(language) if language else None
    if grammar is not None:
        return Syntax(grammar, text).parse(text).tokens
    return len(plain_tokens(text))


def _default_name(target: TargetSpec, seed: int) -> str:
    stem = Path(target.location).stem if target.kind == "file" else target.location.split(".")[-1]
    return f"{stem}-{seed}.txt"


@deferring
def generate(
    settings: GenerateSettings,
    progress: Progress | None = None,
    result: ResultRequest | None = None,
    echo: Echo | None = None,
) -> GenerateSummary:
    """Reduce the input the generator makes at `settings.seed` by reducing its execution.

    `echo` hears what the run waits for when the test on the generated input is slow.
    """
    started = time.monotonic()
    cwd = Path.cwd()
    target = parse_target(settings.generator, settings.entry, cwd)
    name = settings.name or (settings.output.name if settings.output else None)
    name = name or _default_name(target, settings.seed)
    if "/" in name or name in (".", ".."):
        raise UserError(f"--name {name!r} must be a plain file name")
    # The result branch goes to the repository the command runs in, wherever --output
    # writes the file (a file outside it must not send the branch to the private cache).
    where = cwd / name
    store = Store.near(where)
    output = settings.output or (None if store.users else default_output(cwd / name))
    if output is not None and not output.parent.is_dir():
        raise UserError(f"cannot write {output}: {output.parent} is not a directory")
    if output is not None and output.is_dir():
        raise UserError(f"--output {output} is a directory; give the file to write")
    warnings: list[str] = []
    spec = TestSpec(
        command=settings.test,
        relative_path=name,
        polarity=settings.polarity,
        timeout=settings.timeout,
        signature_regex=settings.signature,
        any_failure=settings.any_failure,
        repeat=settings.repeat,
    )
    load_timeout = settings.generator_timeout + 20.0  # imports come on top of one run
    with GeneratorPool(target, settings.jobs, load_timeout) as pool:
        original = pool.record(settings.seed, settings.generator_timeout)
        if not original.output:
            raise UserError(
                f"the generator wrote nothing at seed {settings.seed}: its entry function must "
                "return the input (str or bytes) or print it"
            )
        if not original.decisions:
            raise UserError(
                "the generator made no random decision: it must draw from the `random` module "
                "or from the random.Random its entry function is given (one it creates itself "
                "is not traced)"
            )
        parts_before = len(removable(original))
        if not parts_before:
            warnings.append(
                "found no loop whose trip count is a random decision and no branch guarded by "
                "one; there is nothing to reduce"
            )
        replay_timeout = min(settings.generator_timeout, max(1.0, 10.0 * original.seconds))

        def calibrate(spec: TestSpec, cache: GitVerdictCache) -> tuple[TestSpec, Outcome]:
            try:
                with waiting_notice(echo, "the generated input", spec):
                    return calibrate_cached(
                        spec, original.output, Verdict.BAD, settings.jobs, cache
                    )
            except UserError as error:
                raise UserError(f"generated at seed {settings.seed}: {error}") from None

        polisher: Current | None = None
        # every input taken as the best, with the trace it was generated (or polished) from
        accepted = [(original.output, original)]

        def on_trace(state: TraceSearcher) -> None:
            accepted.append((state.current.output, state.current))
            if progress is not None:
                progress(state)

        def on_polish(state: Current) -> None:
            accepted.append((state.text, searcher.current))
            if progress is not None:
                progress(state)

        with calibrated_run(store, spec, warnings, settings.jobs, calibrate) as run:
            engine = run.engine
            searcher = TraceSearcher(
                engine, pool, original, run.is_interesting, settings, replay_timeout, on_trace
            )
            if progress is not None:
                progress(searcher)
            reduce_trace(searcher, settings.strategy)
            if settings.polish:
                polisher = _polisher(name, searcher.current.output, engine, on_polish, warnings)
                reduce_program(polisher)
            settled = settle(run, accepted, lambda entry: [(entry[0], run.is_interesting, "it")])
            if settled.back:
                warnings.append(backed_off(settled, f"{len(settled.result[0])} bytes"))
        pool.close()
        settings = replace(settings, test=run.spec.command)
        best = searcher.current
        result_text = polisher.text if polisher is not None else best.output
        if run.verified:
            result_text, best = settled.result
        if output is not None:
            output.write_bytes(result_text)
    tokens = (_tokens(name, original.output), _tokens(name, result_text))
    summary = GenerateSummary(
        generator=settings.generator,
        seed=settings.seed,
        name=name,
        output=str(output) if output is not None else None,
        strategy=settings.strategy,
        alignment=settings.alignment.value,
        bytes_before=len(original.output),
        bytes_after=len(result_text),
        tokens_before=tokens[0],
        tokens_after=tokens[1],
        bytes_generated=len(best.output),
        tokens_generated=_tokens(name, best.output),
        decisions_before=len(original.decisions),
        decisions_after=len(best.decisions),
        parts_before=parts_before,
        parts_after=len(removable(best)),
        stats=engine.stats,
        generator_runs=searcher.runs + 1,
        generator_failures=dict(searcher.failures),
        misaligned=searcher.misaligned,
        wall_seconds=time.monotonic() - started,
        text=result_text,
        interrupted=run.interrupted,
        verified=run.verified,
        signature=run.reference.signature if run.reference is not None else None,
        warnings=warnings,
        test=settings.test,
    )
    repo_path = store.repo_path(where)

    def commit_message(subject: str, before: tuple[int, int], after: tuple[int, int]) -> str:
        """`before`/`after`: (bytes, tokens)."""
        return result_message(
            subject,
            path=repo_path,
            test=settings.test,
            bytes_before=before[0],
            bytes_after=after[0],
            tokens_before=before[1],
            tokens_after=after[1],
            extra=[
                f"Generator: {settings.generator} (seed {settings.seed})",
                f"Decisions: {summary.decisions_before} -> {summary.decisions_after}",
                f"Strategy: {settings.strategy}, alignment {settings.alignment.value}",
            ],
        )

    original_size = (summary.bytes_before, summary.tokens_before)
    generated_size = (summary.bytes_generated, summary.tokens_generated)
    versions = [
        (
            commit_message(
                f"git reduce: reduced {repo_path} by reducing its generator's execution",
                original_size,
                generated_size,
            ),
            best.output,
        )
    ]
    if result_text != best.output:
        subject = f"git reduce: polished {repo_path} syntax-guided"
        final_size = (summary.bytes_after, summary.tokens_after)
        versions.append((commit_message(subject, generated_size, final_size), result_text))
    summary.branch, summary.commits = record(
        store,
        result or ResultRequest(),
        hint=Path(name).stem,
        path=repo_path,
        versions=versions,
        warnings=warnings,
    )
    return summary


def _polisher(
    name: str,
    generated: bytes,
    engine: Engine,
    progress: Callable[[Current], None],
    warnings: list[str],
) -> Current:
    """The single-file reducer's state on the generated input: what the generator always
    writes (headers, a return, a format's newline) may go too, if the test allows."""
    grammar, warning = resolve_grammar(Path(name), None)
    if warning:
        warnings.append(warning)
    syntax = Syntax(grammar, generated) if grammar is not None else None
    return Current(generated, engine, syntax, progress)
