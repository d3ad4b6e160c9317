"""The run scaffold every session mode shares: inputs, grammar, calibration, engine.

Job: what a reduction needs before and around its algorithm, whatever the
mode: the input read (or a one-line reason it cannot be), the grammar chosen,
the test calibrated on the originals and the engine built over the oracle and
the verdict cache, SIGTERM taken as Ctrl-C, and the figures every mode's
summary reports. Every problem the user can fix surfaces as a `UserError`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol, TypeVar

from gitreduce.core.engine import Engine
from gitreduce.core.errors import Interrupted, MisclassifiedOriginal, UserError
from gitreduce.core.outcome import Outcome, Verdict
from gitreduce.core.stats import Stats
from gitreduce.git.store import Store, calibrate_cached, verdict_cache
from gitreduce.git.verdicts import GitVerdictCache
from gitreduce.lang import grammars
from gitreduce.lang.grammars import Grammar
from gitreduce.lang.syntax import Syntax
from gitreduce.oracle.calibration import calibration_runner
from gitreduce.oracle.executor import TestRunner, open_runner
from gitreduce.oracle.repeat import repeated
from gitreduce.oracle.runner import PROVISIONAL_TIMEOUT, started_tests, stop_all
from gitreduce.oracle.spec import TestSpec
from gitreduce.passes.catalog import catalog_of
from gitreduce.sessions.interrupts import deferred


class _Run(Protocol):
    test: str
    signature: str | None
    stats: Stats
    wall_seconds: float
    interrupted: bool
    verified: bool
    warnings: list[str]
    branch: str | None
    commits: list[str]


Made = TypeVar("Made")


# The longest work made aside waits for the first test to start: where tests run elsewhere
# (a cluster's workers), none starts here.
HOLD_SECONDS = 0.1


class Hold:
    """Keeps work made aside from starting before the calibration's first test has.

    The work is mostly parses, which tree-sitter makes without letting go of
    the interpreter: started at once, it held the main thread while it set up
    the calibration (5-9 ms on 8,600 JavaScript tokens, a fifth of what a
    one-second reduction spends outside its tests). Once a test runs, the main
    thread waits on it, and the work costs nothing. `release` lets the work go
    when the main thread needs it (a calibration answered from the cache
    starts no test).
    """

    def __init__(self) -> None:
        self._started = started_tests()
        self._released = threading.Event()

    def wait(self) -> None:
        """Until a test process has started since the hold was made, or it is released."""
        deadline = time.monotonic() + HOLD_SECONDS
        while started_tests() == self._started and time.monotonic() < deadline:
            if self._released.wait(0.001):
                return

    def release(self) -> None:
        self._released.set()


def made_aside(make: Callable[[], Made], hold: Hold) -> Future[Made]:
    """`make()` in a thread of its own once `hold` lets it: work the reduction needs once
    the originals are calibrated, done while their tests run (the main thread mostly
    waits on them); release `hold` before asking for the result."""
    aside = ThreadPoolExecutor(1, thread_name_prefix="aside")
    aside.submit(hold.wait)
    made = aside.submit(make)
    aside.shutdown(wait=False)
    return made


def prepared(grammar: Grammar, original: bytes, *others: bytes) -> Syntax:
    """The syntax check of `original`, its tree and its catalog (`passes/catalog.catalog_of`)
    made: what the reduction's first pass needs of it, made aside (`made_aside`). `others`
    are parsed too, kept for the check of the first candidates made from them (a pair's
    seed: 4-6 ms on 8,800 JavaScript tokens, else parsed between two tests)."""
    syntax = Syntax(grammar, original)
    catalog_of(grammar, syntax.parse(original))
    for other in others:
        syntax.parse(other)
    return syntax


def run_figures(run: _Run) -> dict[str, object]:
    """The test counts, per-pass profile, timing, trust and result part every mode's
    `--json` summary shares.

    Overhead is wall time during which no test was running: what the tool itself cost.
    """
    overhead = max(0.0, run.wall_seconds - run.stats.oracle_busy_seconds)
    return {
        "tests_run": run.stats.tests_run,
        "cache_hits": run.stats.cache_hits,
        "syntax_rejected": run.stats.syntax_rejected,
        "tests_by_pass": dict(run.stats.by_pass),
        "passes": run.stats.pass_profile(),
        "verified": run.verified,
        "foreign_verdicts_used": run.stats.foreign_used,
        "confirmations": run.stats.confirmations,
        "contradicted": run.stats.contradicted,
        "test": run.test,
        "signature": run.signature,
        "wall_seconds": round(run.wall_seconds, 3),
        "oracle_seconds": round(run.stats.oracle_busy_seconds, 3),
        "test_seconds": round(run.stats.test_seconds, 3),
        "success_bets": run.stats.success_bets,
        "preempted_for_bets": run.stats.preempted_for_bets,
        "overhead_seconds": round(overhead, 3),
        "interrupted": run.interrupted,
        "warnings": run.warnings,
        "branch": run.branch,
        "commits": run.commits,
    }


def refuse_overwriting(outputs: Collection[Path], inputs: Collection[Path]) -> None:
    """A one-line error, before any test, when an output would be one of the inputs (a
    seed named `prog.seed.c` beside `prog.c`): the inputs are never written to."""
    for output in outputs:
        for given in inputs:
            if output.exists() and given.exists() and output.samefile(given):
                raise UserError(
                    f"the result would overwrite the input {given}: rename it, or give "
                    "--output somewhere else"
                )


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
    return load_grammar(path, named_language(path, requested), requested is not None)


def named_language(path: Path, requested: str | None) -> str | None:
    """The language `requested` names, checked against those known, else the one `path`
    implies (None: none): `load_grammar`'s argument, found without loading the grammar,
    whose wheel takes 2-3 ms to import, work made aside while the originals calibrate."""
    if requested is None:
        return grammars.detect(str(path))
    if not grammars.is_known(requested):
        known = ", ".join(grammars.known_languages())
        raise UserError(f"unknown language {requested!r}; known: {known}")
    return requested


def load_grammar(
    path: Path, name: str | None, requested: bool
) -> tuple[grammars.Grammar | None, str]:
    """The grammar `named_language` named and a warning when falling back to lines and
    tokens; a `UserError` when the user asked for it (`requested`) and it cannot be loaded
    here."""
    grammar = grammars.load(name) if name else None
    if grammar is not None:
        return grammar, ""
    if requested:
        raise UserError(
            f"the {name} grammar cannot be loaded here: install its tree-sitter wheel, or "
            "tree-sitter-languages"
        )
    return None, f"no grammar for {path.name}; reducing by lines and tokens (see --language)"


def default_output(path: Path) -> Path:
    return path.with_name(f"{path.stem}.reduced{path.suffix}")


Calibrate = Callable[[TestSpec, GitVerdictCache], tuple[TestSpec, Outcome]]
Echo = Callable[[str], None]

# how long the test on an original may take before the run says what it is waiting for
WAIT_NOTICE_SECONDS = 2.0


@contextmanager
def waiting_notice(echo: Echo | None, what: str, spec: TestSpec) -> Iterator[None]:
    """Tell `echo`, once, what the run waits for when the test on `what` (an original)
    takes longer than `WAIT_NOTICE_SECONDS`.

    Before calibration there is no progress to show; a test that hangs on an
    original would otherwise mean minutes of silence before its timeout.
    `echo` is called from a timer thread; a cached original, or a timeout too
    short for a wait to matter, calls nothing.
    """
    timeout = spec.timeout or PROVISIONAL_TIMEOUT
    if echo is None or timeout <= WAIT_NOTICE_SECONDS:
        yield
        return
    line = f"waiting for the test on {what} (timeout {timeout:g} s)"
    timer = threading.Timer(WAIT_NOTICE_SECONDS, echo, [line])
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


@dataclass(frozen=True)
class Original:
    """One original of a pair to calibrate: its text, the verdict it must get, what it is
    called in a notice (`waiting_notice`) and before its errors ("seed", "variant")."""

    text: bytes
    expect: Verdict
    name: str
    side: str


def calibrate_originals(
    spec: TestSpec,
    cache: GitVerdictCache,
    seed: Original,
    variant: Original,
    jobs: int,
    echo: Echo | None,
) -> tuple[TestSpec, Outcome]:
    """Both originals of a pair classified (or recalled); the spec timed on the variant, and
    the variant's outcome. An error names its original ("seed: ..."), the seed's first,
    as when the seed was checked before the variant was run.

    With two jobs or more the two calibrations run at once, their runs taking
    turns at two processors (`_Turns`). One after the other, each original's
    runs went two at a time and its last one alone (2, 2, 1): six rounds of runs
    where the ten fit in five, the sixth a test on a large original while a
    processor idled.
    """
    if jobs < 2:
        try:
            with waiting_notice(echo, seed.name, spec):
                _classify(spec, cache, seed, jobs, None)
        except MisclassifiedOriginal as seed_refused:
            if seed_refused.given is not Verdict.BAD:
                raise
            try:  # is the variant the passing one? a few more runs, for a clearer error
                with waiting_notice(echo, variant.name, spec):
                    _classify(spec, cache, variant, jobs, None)
            except UserError as variant_refused:
                raise (_swapped(seed_refused, variant_refused, seed) or seed_refused) from None
            raise
        with waiting_notice(echo, variant.name, spec):
            return _classify(spec, cache, variant, jobs, None)
    turns = _Turns(2, echo, spec)
    beside = ThreadPoolExecutor(1, thread_name_prefix="calibrate")
    try:
        with turns.runner(seed) as seed_runner, turns.runner(variant) as variant_runner:
            seed_classified = beside.submit(_classify, spec, cache, seed, jobs, seed_runner)
            try:
                calibrated = _classify(spec, cache, variant, jobs, variant_runner)
            except BaseException as variant_error:
                seed_error = seed_classified.exception()  # it runs on: its error comes first
                if isinstance(seed_error, UserError) and isinstance(variant_error, UserError):
                    raise (_swapped(seed_error, variant_error, seed) or seed_error) from None
                raise
            seed_classified.result()
            return calibrated
    finally:
        beside.shutdown(wait=True)


def _classify(
    spec: TestSpec, cache: GitVerdictCache, original: Original, jobs: int, runner: TestRunner | None
) -> tuple[TestSpec, Outcome]:
    """`calibrate_cached` on one original of a pair, its errors named after it."""
    try:
        return calibrate_cached(spec, original.text, original.expect, jobs, cache, runner=runner)
    except UserError as error:
        error.args = (f"{original.side}: {error}",)  # named, its kind and verdict kept
        raise


def _swapped(
    seed_error: BaseException, variant_error: BaseException, seed: Original
) -> UserError | None:
    """The seed's error told that the pair looks the other way round, when the test finds
    the failure in the seed and gives the variant the seed's verdict (a careless `--seed V
    --variant S`, or `BAD..GOOD`)."""
    if not (
        isinstance(seed_error, MisclassifiedOriginal)
        and isinstance(variant_error, MisclassifiedOriginal)
        and seed_error.given is Verdict.BAD
        and variant_error.given is seed.expect
    ):
        return None
    return MisclassifiedOriginal(
        f"{seed_error}; the variant gets the seed's verdict instead: the two look swapped "
        "(the seed is the program without the failure, the variant the one with it)",
        seed_error.exit_code,
        given=seed_error.given,
    )


class _Turns:
    """Turns at `count` processors, shared by the calibration runners of a pair's originals.

    Each original's runner keeps its own slots (two: its runs go two at a
    time), but a run begins only with a turn, so the two calibrations together
    run no more tests at once than there are processors. Which original the run
    waits for is told once per original whose test, once begun, runs longer
    than `WAIT_NOTICE_SECONDS` (`waiting_notice` times a whole calibration; here
    the other original's runs may hold the turns meanwhile).
    """

    def __init__(self, count: int, echo: Echo | None, spec: TestSpec) -> None:
        self._free = threading.Semaphore(count)
        self._echo = echo
        self._spec = spec
        self._told: set[str] = set()
        self._lock = threading.Lock()

    @contextmanager
    def runner(self, original: Original) -> Iterator[TestRunner]:
        with calibration_runner(self._spec, 2) as runner:
            yield _TakingTurns(runner, self, original.name)

    def run(self, runner: TestRunner, name: str, content: bytes) -> tuple[Outcome, str]:
        echo = self._tell_once if self._echo is not None else None
        with self._free, waiting_notice(echo, name, self._spec):
            return runner.run_with_output(content)

    def _tell_once(self, line: str) -> None:
        with self._lock:
            if line in self._told:
                return
            self._told.add(line)
        assert self._echo is not None
        self._echo(line)


class _TakingTurns:
    """A calibration runner whose every run waits for a turn (`_Turns.run`)."""

    def __init__(self, runner: TestRunner, turns: _Turns, name: str) -> None:
        self._runner = runner
        self._turns = turns
        self._name = name
        self.timeout = runner.timeout

    def run(self, content: bytes) -> Outcome:
        return self.run_with_output(content)[0]

    def run_with_output(self, content: bytes) -> tuple[Outcome, str]:
        return self._turns.run(self._runner, self._name, content)

    def set_jobs(self, jobs: int) -> None:
        self._runner.set_jobs(jobs)

    def set_timeout(self, seconds: float) -> None:
        self._runner.set_timeout(seconds)
        self.timeout = seconds

    def stop(self) -> None:
        self._runner.stop()

    def close(self) -> None:
        self._runner.close()

    def __enter__(self) -> TestRunner:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


@dataclass
class CalibratedRun:
    """What a reduction works with: the engine, and the failure it must keep reproducing;
    the oracle and cache behind the engine, for the final re-verification
    (`gitreduce.sessions.verify`), and what that found.

    `reference` is None when an interrupt came before calibration finished: then
    nothing is interesting and the engine is already stopped.
    """

    engine: Engine
    spec: TestSpec
    reference: Outcome | None
    oracle: TestRunner
    cache: GitVerdictCache
    alone: Future[TestRunner]  # the re-verification's, one run at a time: made aside
    interrupted: bool = False
    verified: bool = False

    def is_interesting(self, outcome: Outcome) -> bool:
        return self.reference is not None and self.spec.is_interesting(self.reference, outcome)

    def bisect_verdict(self, content: bytes, seed_expected: Verdict) -> Verdict:
        """`content` tested and classified as `git bisect run` takes a commit: good when it
        passes as the seed must, bad when it fails the original way; any other failure is
        skipped (as exit 125 is), since it says nothing about this bug."""
        outcome = self.engine.test(content, label="bisect")
        if outcome.verdict is seed_expected:
            return Verdict.GOOD
        if self.is_interesting(outcome):
            return Verdict.BAD
        if outcome.verdict in (Verdict.BAD, Verdict.SKIP):
            return Verdict.SKIP
        return outcome.verdict


Found = TypeVar("Found")


def bisection_result(
    run: CalibratedRun, found: Found | None, warnings: list[str], echo: Echo | None
) -> tuple[Found | None, str]:
    """What a bisection found, once its run has ended, and the test it ran: nothing when
    the run was interrupted, even if the search ended (it may have had no reference
    to go by); the run's warnings echoed."""
    if run.interrupted:
        found = None
    if echo is not None:
        for warning in warnings:
            echo(f"warning: {warning}")
    return found, run.spec.command


@contextmanager
def calibrated_run(
    store: Store,
    spec: TestSpec,
    warnings: list[str],
    jobs: int,
    calibrate: Calibrate,
    skipped_passes: Iterable[str] = (),
) -> Iterator[CalibratedRun]:
    """Verdict cache, calibration of the originals, oracle and engine for one reduction.

    The engine switches off the passes named in `skipped_passes` (see `run_pass`)
    and judges each candidate by `spec.repeat` runs (`oracle/repeat.py`).

    Ctrl-C or SIGTERM (see `interrupts`) or a closed oracle inside the block only
    mark the run interrupted, so the caller still writes and records the best
    result. An interrupt before calibration has finished (or before it began)
    yields the run interrupted, with no reference and the engine stopped: the
    mode's body then stops at its first test, and the originals are what it
    writes. The oracle's processes are gone when the block ends, and the cache
    is saved after them; an interrupt while it saves waits for it. Cached
    verdicts from elsewhere that a run here contradicted are reported once, as a
    warning.
    """
    with deferred() as interrupts, interrupts.stopping(stop_all), ExitStack() as caches:
        calibration_started = time.monotonic()
        cache = caches.enter_context(verdict_cache(store, spec, warnings))
        given, hold = spec, Hold()
        opening = made_aside(lambda: open_runner(given, jobs), hold)
        caches.callback(_close_when_made, opening, hold)  # made, but calibration failed
        reference: Outcome | None = None
        if not interrupts.requested:
            with suppress(Interrupted):
                spec, reference, cache = _calibrate(store, spec, warnings, calibrate, caches, cache)
        calibration_seconds = time.monotonic() - calibration_started
        hold.release()
        with _calibrated_runner(opening.result(), given, spec, jobs) as oracle:
            run: CalibratedRun
            engine = Engine(
                cache.recording(repeated(oracle.run, spec)),
                lambda outcome: run.is_interesting(outcome),
                jobs=jobs,
                cache=cache,
                skipped_passes=skipped_passes,
                on_jobs=oracle.set_jobs,
            )
            engine.stats.oracle_busy_seconds += calibration_seconds  # the originals' runs
            engine.stats.test_seconds += calibration_seconds
            # the re-verification's runner, made beside the reduction's first tests
            alone_hold = Hold()
            alone = made_aside(lambda: open_runner(spec, 1), alone_hold)
            caches.callback(_close_when_made, alone, alone_hold)
            run = CalibratedRun(
                engine, spec, reference, oracle, cache, alone, interrupted=reference is None
            )
            if reference is None:
                engine.stop()
            try:
                with interrupts.stopping(engine.stop):
                    yield run
            except Interrupted:
                run.interrupted = True
            finally:
                oracle.close()
                engine.close()
                if engine.stats.contradicted:
                    count = engine.stats.contradicted
                    warnings.append(
                        f"{count} cached verdict{'s' if count > 1 else ''} from elsewhere "
                        f"{'were' if count > 1 else 'was'} contradicted by local runs; the "
                        "result is based on local runs only"
                    )


def _calibrated_runner(
    made: TestRunner, given: TestSpec, calibrated: TestSpec, jobs: int
) -> TestRunner:
    """The reduction's runner: `made` for the spec as given, while the originals' tests ran
    (its scratch directories are 1-2 ms outside the tests once they are calibrated), with
    the timeout calibration chose; a new one where calibration changed more (the file
    given as the test's argument)."""
    if calibrated.timeout is not None and replace(given, timeout=calibrated.timeout) == calibrated:
        made.set_timeout(calibrated.timeout)
        return made
    made.close()
    return open_runner(calibrated, jobs)


def _close_when_made(opening: Future[TestRunner], hold: Hold) -> None:
    """Close a runner made aside once it is made: one its user closed first stays closed
    (closing is idempotent), one nobody used (calibration failed, or the run ended before
    its re-verification) is closed here. A failure to make it is raised where it is used,
    not here."""
    hold.release()
    if opening.exception() is None:
        opening.result().close()


def _calibrate(
    store: Store,
    spec: TestSpec,
    warnings: list[str],
    calibrate: Calibrate,
    caches: ExitStack,
    cache: GitVerdictCache,
) -> tuple[TestSpec, Outcome, GitVerdictCache]:
    """The calibrated spec, the original's outcome and the cache keyed by that spec."""
    try:
        return (*calibrate(spec, cache), cache)
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
        return spec, reference, cache
