"""Pair mode: `git reduce --seed S --variant V` reduces a passing and a failing program together.

Job: calibrate both originals (the seed must pass, the variant fail), run
PPR, or Zeller's dd over the hunks or from the empty program, inside the
shared run scaffold (see `run.calibrated_run`), drop comments both sides can
lose, record the reduced seed and variant as two commits, and return the
`PairSummary` the reporters render. Revisions mode ends here too.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from gitreduce.core.current import render_deletions
from gitreduce.core.engine import Engine
from gitreduce.core.errors import UserError
from gitreduce.core.outcome import Outcome, Verdict
from gitreduce.core.stats import Stats
from gitreduce.git.store import ResultRequest, Store, message, record
from gitreduce.git.verdicts import GitVerdictCache
from gitreduce.lang import grammars
from gitreduce.lang.grammars import Grammar
from gitreduce.lang.syntax import Syntax
from gitreduce.oracle.spec import TestSpec
from gitreduce.pair import PAIR_ALGORITHMS as PAIR_ALGORITHMS
from gitreduce.pair import PairAlgorithm
from gitreduce.pair.alignment import Alignment
from gitreduce.pair.current import PairCurrent, slots_from
from gitreduce.pair.dd import isolate_hunks, isolate_tokens
from gitreduce.pair.ppr import reduce_pair
from gitreduce.pair.state import PairState
from gitreduce.pair.tokens import tokenize
from gitreduce.passes.catalog import Catalog
from gitreduce.sessions.interrupts import deferring
from gitreduce.sessions.run import (
    Echo,
    Hold,
    Original,
    calibrate_originals,
    calibrated_run,
    load_grammar,
    made_aside,
    named_language,
    prepared,
    run_figures,
)
from gitreduce.sessions.verify import Settled, backed_off, settle


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
    repeat: int = 1  # runs per candidate, judged by their majority
    path: str = ""  # repository-relative, for the result commits (default: name)
    sources: tuple[str, ...] = ()  # the seed's and the variant's commits, when known
    skip_passes: tuple[str, ...] = ()  # pass names or labels switched off (see `run_pass`)


# how often a dd run re-aligns its best pair for progress (the result is aligned at the end)
ISOLATION_REALIGN_SECONDS = 2.0


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
    verified: bool = False  # the result stood its re-verification alone (see sessions/verify.py)
    warnings: list[str] = field(default_factory=list)
    test: str = ""  # the command as it ran (see `calibrated_run`)
    signature: str | None = None  # how the original fails (None: not calibrated)
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
            **run_figures(self),
            "first_bad_commit": self.first_bad_commit,
        }


PairProgress = Callable[["PairCurrent"], None]


@deferring
def reduce_pair_texts(
    settings: PairSettings,
    store: Store,
    progress: PairProgress | None = None,
    result: ResultRequest | None = None,
    echo: Echo | None = None,
) -> PairSummary:
    """Reduce a seed/variant pair (PPR, or the DD baseline); the best pair is kept on Ctrl-C.

    `echo` hears what the run waits for when the test on an original is slow.
    """
    started = time.monotonic()
    if settings.seed == settings.variant:
        raise UserError("the seed and the variant are identical; there is no difference to reduce")
    language = named_language(Path(settings.name), settings.language)
    warnings: list[str] = []
    spec = pair_spec(settings)
    seed_expected = seed_verdict(settings.polarity)
    # The token diff of two large programs is seconds of Python: computed while the
    # originals' tests calibrate, which mostly wait on the test's processes; and so are
    # the grammar's loading, the parses of both originals the syntax check starts from,
    # once each, and the slots MinCommonality hoists by (`PairCurrent.catalog`), learnt
    # from them.
    hold = Hold()
    making = made_aside(
        lambda: _prepared_pair(
            Path(settings.name),
            language,
            settings.language is not None,
            settings.seed,
            settings.variant,
        ),
        hold,
    )
    seed_out, variant_out = settings.seed, settings.variant

    def seed_ok(outcome: Outcome) -> bool:
        return outcome.verdict is seed_expected

    accepted = [(settings.seed, settings.variant)]  # every pair taken as the best

    def on_change(current: PairCurrent) -> None:
        accepted.append((current.state.seed_text(), current.state.variant_text()))
        if progress is not None:
            progress(current)

    backed: Settled[tuple[bytes, bytes]] | None = None
    with calibrated_run(
        store,
        spec,
        warnings,
        settings.jobs,
        lambda spec, cache: calibrate_pair(spec, settings, seed_expected, cache, echo),
        settings.skip_passes,
    ) as run:
        engine = run.engine
        hold.release()
        made = making.result()
        grammar, syntax, alignment = made.grammar, made.syntax, made.alignment
        if made.warning:
            warnings.insert(0, made.warning)
        learnt: Future[Catalog] | None = None
        if made.slots is not None:
            learnt = Future()
            learnt.set_result(made.slots)
        full = PairState.full(alignment)
        current = PairCurrent(
            full, engine, syntax, seed_ok, run.is_interesting, on_change, catalog=learnt
        )
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
        seed_out, variant_out = _with_final_newlines(
            (settings.seed, settings.variant),
            (seed_out, variant_out),
            engine,
            seed_ok,
            run.is_interesting,
        )
        if accepted[-1] != (seed_out, variant_out):
            accepted.append((seed_out, variant_out))
        settled = settle(
            run,
            accepted,
            lambda pair: [
                (pair[1], run.is_interesting, "the variant"),
                (pair[0], seed_ok, "the seed"),
            ],
        )
        seed_out, variant_out = settled.result
        backed = settled if settled.back else None
    if run.interrupted:
        seed_out, variant_out = current.state.seed_text(), current.state.variant_text()
    settings = replace(settings, test=run.spec.command)
    final = Alignment.of(seed_out, variant_out, grammar)
    if backed is not None and not run.interrupted:
        warnings.append(backed_off(backed, f"{final.diff_size} difference tokens"))
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
        verified=run.verified,
        signature=run.reference.signature if run.reference is not None else None,
        warnings=warnings,
        test=settings.test,
    )
    _record_pair(store, result or ResultRequest(), settings, summary)
    return summary


@dataclass(frozen=True)
class _PreparedPair:
    grammar: Grammar | None
    warning: str  # `load_grammar`'s
    syntax: Syntax | None
    alignment: Alignment
    slots: Catalog | None


def _prepared_pair(
    path: Path, language: str | None, requested: bool, seed: bytes, variant: bytes
) -> _PreparedPair:
    """The grammar `named_language` found (`load_grammar`); the syntax check of the
    variant with both originals parsed (`prepared`), and their alignment and slots from
    those parses: each original parsed once (three times before, 5 ms each on 8,800
    JavaScript tokens, 20 on 23,000 C tokens)."""
    grammar, warning = load_grammar(path, language, requested)
    if grammar is None:
        return _PreparedPair(None, warning, None, Alignment.of(seed, variant), None)
    syntax = prepared(grammar, variant, seed)
    seeds, variants = syntax.parse(seed), syntax.parse(variant)
    alignment = Alignment(
        tokenize(seed, grammar, parsed=seeds), tokenize(variant, grammar, parsed=variants)
    )
    return _PreparedPair(grammar, "", syntax, alignment, slots_from(grammar, (seeds, variants)))


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
    stripped = strip_comments(seed, syntax), strip_comments(variant, syntax)
    if stripped == (seed, variant):
        return seed, variant
    if variant_ok(engine.test(stripped[1], label="comments")) and seed_ok(
        engine.test(stripped[0], label="comments")
    ):
        return stripped
    return seed, variant


def _with_final_newlines(
    originals: tuple[bytes, bytes],
    results: tuple[bytes, bytes],
    engine: Engine,
    seed_ok: Callable[[Outcome], bool],
    variant_ok: Callable[[Outcome], bool],
) -> tuple[bytes, bytes]:
    """The pair with the final newline put back where an original had one and its result
    lost it (a comment that owned it went), when both programs keep their property.

    The pair's passes only shrink it, so this is tried once, here, as
    `_without_comments` tries its pair: both programs are tested as they will
    be written. A pair whose results kept their newlines costs no test.
    """
    restored = (
        _with_final_newline(originals[0], results[0]),
        _with_final_newline(originals[1], results[1]),
    )
    if restored == results:
        return results
    if variant_ok(engine.test(restored[1], label="newline")) and seed_ok(
        engine.test(restored[0], label="newline")
    ):
        return restored
    return results


def _with_final_newline(original: bytes, result: bytes) -> bytes:
    if original.endswith(b"\n") and result and not result.endswith(b"\n"):
        return result + b"\n"
    return result


def strip_comments(text: bytes, syntax: Syntax) -> bytes:
    spans = []
    pending = [syntax.parse(text).tree.root_node]
    while pending:
        node = pending.pop()
        if "comment" in node.type:
            spans.append((node.start_byte, node.end_byte))
        else:
            pending.extend(node.children)
    return render_deletions(text, spans)


def pair_spec(settings: PairSettings) -> TestSpec:
    return TestSpec(
        command=settings.test,
        relative_path=settings.path or settings.name,  # where it lives in the repository
        polarity=settings.polarity,
        timeout=settings.timeout,
        signature_regex=settings.signature,
        any_failure=settings.any_failure,
        repeat=settings.repeat,
    )


def seed_verdict(polarity: str) -> Verdict:
    """What a passing seed looks like: good, or merely 'not interesting' for C-Reduce scripts."""
    return Verdict.GOOD if polarity == "bisect" else Verdict.SKIP


def calibrate_pair(
    spec: TestSpec,
    settings: PairSettings,
    seed_expected: Verdict,
    cache: GitVerdictCache,
    echo: Echo | None = None,
) -> tuple[TestSpec, Outcome]:
    """Both originals classified (or recalled); the spec timed on the variant. `echo`
    hears which original the run waits for when its test is slow."""
    return calibrate_originals(
        spec,
        cache,
        Original(settings.seed, seed_expected, "the original seed", "seed"),
        Original(settings.variant, Verdict.BAD, "the original variant", "variant"),
        settings.jobs,
        echo,
    )


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
        outcome = engine.test(text, label=algorithm)
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
