"""The best pair so far and how candidate pairs are judged: the pairwise `Current`.

A candidate pair is kept only when it is smaller by the pair's measure (a
smaller difference first, then smaller programs), the seed keeps its property
(psi_s: the test says good) and the variant keeps its own (psi_v: bad, the
original way).
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass

from gitreduce.core import tickets
from gitreduce.core.current import Current, syntax_gate
from gitreduce.core.ddmin import Plan, Subset, ddmin
from gitreduce.core.engine import Engine
from gitreduce.core.judges import Accepts, AfterSuccess, Lookahead, Precheck
from gitreduce.core.outcome import Outcome
from gitreduce.lang.grammars import Grammar
from gitreduce.lang.syntax import Parsed, Syntax, leaf_spans
from gitreduce.pair.alignment import SEED, Alignment
from gitreduce.pair.state import PairState
from gitreduce.passes.catalog import Catalog

# (difference tokens, then the programs' size), compared lexicographically; what
# "the programs' size" counts is up to the reducer, so long as one run compares
# like with like
Measure = tuple[int, int]
# Where a file pair is one file of two file sets: each side's text placed into its set (the
# seed's, the variant's) gives the bytes tested and cached (see `core.fileset.placer`)
Places = tuple[Callable[[bytes], bytes], Callable[[bytes], bytes]]


def measure(state: PairState) -> Measure:
    """Progress order of token-state reducers: a smaller difference, then fewer tokens."""
    return state.diff_tokens(), state.seed_tokens() + state.variant_tokens()


@dataclass(frozen=True)
class PairCandidate:
    """Two texts to judge together; `measure` None marks a candidate that cannot be built.

    A measure that costs a count (both texts tokenized and aligned: a deletion
    next to a changed token) is given as the call that counts it, made by the
    judge only once the texts passed the checks that cost less: most such
    pairs are refused by their syntax check, which parses each text
    incrementally, where the count parses both in full.
    """

    seed: bytes
    variant: bytes
    measure: Measure | Callable[[], Measure] | None
    state: PairState | None = None


def render(state: PairState) -> PairCandidate:
    return PairCandidate(state.seed_text(), state.variant_text(), measure(state), state)


class Refusals:
    """How often each program's test refused a candidate pair, so the likelier refusal is
    asked first and a doomed pair costs one test, not two.

    Which side breaks first depends on the bug: a crash that fires before any
    error check keeps the variant bad through deletions that leave the seed no
    longer compiling, so there the seed refuses far more often; elsewhere it
    is the variant. Only the number of tests depends on the order, never a verdict.

    A pair counts once, however it was refused: by a test, or by a verdict the
    cache already held because a spare job tested it ahead (a lift's test beside
    the variant's sweeps, a warm-up, a bet). Counting only the tests made the
    order depend on `--jobs`: at two jobs the lift refused before a repair was
    known from the cache and went uncounted, the tie sent the repair's first
    questions to the variant, whose refusals then kept it first, and a held-out
    C++ pair's repair tested both sides of nearly every question (273 variant
    tests beside 152 seeds) where one job, seed first, tested about one.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.seed = 0
        self.variant = 0
        self._counted: set[int] = set()  # the pairs counted, by hash of (seed, variant)

    def seed_first(self) -> bool:
        """Ties (no evidence yet) go to the variant, whose property is the rarer one."""
        return self.seed > self.variant

    def count(self, seed_refused: bool, pair: tuple[bytes, bytes]) -> None:
        """`pair` (its tested seed and variant) was refused by that side, unless counted."""
        key = hash(pair)
        with self._lock:
            if key in self._counted:
                return
            self._counted.add(key)
            if seed_refused:
                self.seed += 1
            else:
                self.variant += 1


class PairJudge:
    """Both programs keep their property; the one likelier to refuse is tested first.

    `prechecks` are the syntax checks of the seed and of the variant (each
    knows the text its side's candidates most likely came from). With `places`
    the pair is one file of a pair of file sets: what is tested and cached is
    each side's whole set with the candidate in place, while size and syntax
    stay the file's own.
    """

    def __init__(
        self,
        engine: Engine,
        seed_ok: Callable[[Outcome], bool],
        variant_ok: Callable[[Outcome], bool],
        prechecks: tuple[Precheck, Precheck] | None,
        limit: Measure,
        refusals: Refusals | None = None,
        places: Places | None = None,
    ) -> None:
        self._engine = engine
        self._places = places
        self._seed_ok = seed_ok
        self._variant_ok = variant_ok
        self._seed_precheck: Precheck | None = prechecks[0] if prechecks else None
        self._variant_precheck: Precheck | None = prechecks[1] if prechecks else None
        self._limit = limit
        self._refusals = refusals if refusals is not None else Refusals()

    def quick(self, candidate: PairCandidate) -> bool | None:
        engine = self._engine
        known = candidate.measure
        if known is None or (not callable(known) and not self._smaller(known)):
            return False
        tested = self._tested(candidate)
        if tested[0] == tested[1]:
            return False  # one text cannot both pass and fail: the difference went whole
        recalled: dict[bool, Outcome | None] = {}
        for is_seed, text, ok in self._checks(tested):
            outcome = engine.recall(text, ok)
            if outcome is not None and not ok(outcome):
                self._refusals.count(is_seed, tested)
                return False
            recalled[is_seed] = outcome
        seed, variant = recalled[True], recalled[False]
        # a text with a verdict was tested, so it parsed: only new texts need the check
        if variant is None and not engine.parses(candidate.variant, self._variant_precheck):
            return False
        if seed is None and not engine.parses(candidate.seed, self._seed_precheck):
            return False
        if callable(known) and not self._smaller(known()):
            return False
        if variant is not None and seed is not None:
            return True  # both verdicts local: a foreign one is recalled only to reject
        return None

    def _smaller(self, measure: Measure) -> bool:
        if measure >= self._limit:
            self._engine.stats.not_smaller += 1
            return False
        return True

    def variant_parses(self, variant: bytes) -> bool:
        """Whether a variant passes its syntax check: what `quick` asks of a pair no verdict
        decides yet, the same whatever the cache holds (so a search that picks what to ask
        by it picks the same with any number of jobs)."""
        return self._engine.parses(variant, self._variant_precheck)

    def _tested(self, candidate: PairCandidate) -> tuple[bytes, bytes]:
        """What the test runs on for each side: the texts, or their sets with them in place."""
        if self._places is None:
            return candidate.seed, candidate.variant
        return self._places[0](candidate.seed), self._places[1](candidate.variant)

    def full(self, candidate: PairCandidate) -> bool:
        """The likelier refusal's test first; the other's beside it if a job idles
        (`Engine.test_beside`), abandoned as soon as its answer is not wanted."""
        engine = self._engine
        tested = self._tested(candidate)
        checks = self._checks(tested)
        beside = engine.test_beside(checks[1][1], checks[1][2])
        if beside is None:
            return self._passes(checks, tested)
        judgement = tickets.current()
        linked = judgement.stoppable(beside.abandon) if judgement else nullcontext()
        try:
            with linked:
                return self._passes(checks, tested)
        finally:
            beside.abandon()

    def _checks(self, tested: tuple[bytes, bytes]) -> list[tuple[bool, bytes, Accepts]]:
        """Each side (whether it is the seed, its tested text, its acceptance), the likelier
        refusal first; `tested`: the seed's and the variant's texts."""
        seed_tested, variant_tested = tested
        checks = [(False, variant_tested, self._variant_ok), (True, seed_tested, self._seed_ok)]
        if self._refusals.seed_first():
            checks.reverse()
        return checks

    def _sides(self, candidate: PairCandidate) -> list[tuple[bytes, Accepts]]:
        """Each side's tested text and acceptance, the likelier refusal first."""
        return [(text, ok) for _, text, ok in self._checks(self._tested(candidate))]

    def known_refused(self, candidate: PairCandidate) -> bool:
        """Whether the cache already holds a verdict that refuses one side: no test and no
        cache hit counted, the refusal counted (see `Refusals`) as judging it would."""
        tested = self._tested(candidate)
        for is_seed, text, ok in self._checks(tested):
            known = self._engine.known(text, ok)
            if known is not None and not ok(known):
                self._refusals.count(is_seed, tested)
                return True
        return False

    def first_untested(self, candidate: PairCandidate) -> tuple[bytes, Accepts] | None:
        """The first text `full` would test on `candidate` that has no verdict yet, and its
        acceptance; None when the cache already refuses or accepts the pair. What may be
        tested ahead of the judgement: no syntax check here (`quick` makes it when the
        pair is judged; a text it rejects was tested for nothing, at worst)."""
        for text, ok in self._sides(candidate):
            known = self._engine.known(text, ok)
            if known is None:
                return text, ok
            if not ok(known):
                return None
        return None

    def _passes(
        self, checks: list[tuple[bool, bytes, Accepts]], tested: tuple[bytes, bytes]
    ) -> bool:
        """Each check in turn; a pass with a check still to come is said to the judgement's
        ticket (`tickets.passed_one`), for the engine's bets."""
        for position, (is_seed, text, ok) in enumerate(checks):
            if not ok(self._engine.outcome(text, ok)):
                self._refusals.count(is_seed, tested)
                return False
            if position < len(checks) - 1:
                tickets.passed_one()
        return True


class PairCurrent:
    """The best pair so far; only the engine's answers change it.

    `places`: the pair is one file of a pair of file sets (see `PairJudge`); `catalog`:
    `slots_of` the pair's programs as they are, being learnt already.
    """

    def __init__(
        self,
        state: PairState,
        engine: Engine,
        syntax: Syntax | None,
        seed_ok: Callable[[Outcome], bool],
        variant_ok: Callable[[Outcome], bool],
        on_change: Callable[[PairCurrent], None] | None = None,
        *,
        places: Places | None = None,
        catalog: Future[Catalog] | None = None,
    ) -> None:
        self.state = state
        self.places = places
        self.engine = engine
        self.syntax = syntax
        self.seed_ok = seed_ok
        self.variant_ok = variant_ok
        self._on_change = on_change
        self.refusals = Refusals()
        # whether a repair put deleted pieces back (see `ppr.min_commonality`)
        self.repaired = False
        # the pair MinCommonality last ended with (see `ppr.min_commonality`)
        self.commonality_left: PairState | None = None
        self._first = state
        self._catalog = catalog  # see `catalog`: learnt aside, once
        self.label = ""  # the running pass, set by `run_pass`: the engine counts its tests

    @property
    def tokens(self) -> int:
        """Both programs' tokens: what a pass over the pair removes."""
        return measure(self.state)[1]

    def catalog(self) -> Catalog | None:
        """Which kinds stood in the same slot in both programs as the pair began, learnt
        once for MinCommonality (see `Program.of`).

        A single program's tree hoists between kinds that share a slot in its
        original; MinCommonality runs on a seed already reduced, which may no
        longer show a function at top level beside an `impl`, and could then
        never hoist the one out of the other (a held-out Rust pair stayed at
        26/35 tokens so, 6/15 with this). Its tree sweeps offer no stock phrase
        at all, only hoisting: the original's, offered at every node, cost 3-13 %
        more tests on the public pairs for nothing, and so did those of the seed
        MinCommonality began with, once their code was gone (a name the seed no
        longer declares: rustc-105238's pair tested 706 texts with them, 668
        without), and so, last, did those of the seed each sweep starts from:
        a shared node replaced by a name or literal from elsewhere in a seed that
        must still pass was never kept on any public pair or fixture, and cost
        rustc-105238's pair 67 of its 668 tests, figure 3's 52 of 305 (the same
        pairs without them). What the variant's sweeps (`variant_first`) took
        with the original's phrases is kept; a piece from elsewhere is still
        offered once the rounds settle (the `subtrees` pass).
        """
        if self.syntax is None:
            return None
        self.learn_catalog_aside()
        assert self._catalog is not None
        return self._catalog.result()

    def learn_catalog_aside(self) -> None:
        """Start learning `catalog` in a thread of its own, if nothing learns it yet: its
        two full parses and walks (27 ms on an 8,800-token JavaScript pair) then overlap
        the tests instead of holding both jobs idle where MinCommonality begins. A pair
        session starts it while the originals calibrate (`catalog=` of the constructor)."""
        if self._catalog is not None or self.syntax is None:
            return
        learning = ThreadPoolExecutor(1, thread_name_prefix="catalog")
        texts = (self._first.seed_text(), self._first.variant_text())
        self._catalog = learning.submit(slots_of, self.syntax.grammar, texts)
        learning.shutdown(wait=False)

    def judge(self, limit: Measure, parent: PairState | None = None) -> PairJudge:
        """The judge of pairs smaller than `limit`, made from `parent` (the current pair
        if not given), whose texts the syntax checks re-parse incrementally."""
        prechecks = None
        if self.syntax is not None:
            base = self.state if parent is None else parent
            prechecks = (
                syntax_gate(self.syntax, base.seed_text()),
                syntax_gate(self.syntax, base.variant_text()),
            )
        return PairJudge(
            self.engine, self.seed_ok, self.variant_ok, prechecks, limit, self.refusals, self.places
        )

    def adopt(self, state: PairState) -> None:
        """`state` is the new best pair (its programs already judged)."""
        self.state = state
        if self._on_change is not None:
            self._on_change(self)

    def try_states(
        self,
        states: Iterable[PairState],
        parent: PairState | None = None,
        after: AfterSuccess[PairState] | None = None,
        lookahead: Lookahead[PairState] | None = None,
    ) -> int | None:
        """Index of the first state whose pair keeps both properties; it becomes current.

        `parent` is the state they were derived from, if not the current one; `after`,
        what the caller tries next if a given one wins, `lookahead`, if none does
        (`Engine.first_judged`).
        """
        judge = self.judge(measure(self.state), parent)

        def rendered_after(index: int) -> Iterator[PairCandidate]:
            assert after is not None
            return (render(state) for state in after(index))

        def rendered_ahead() -> Iterator[PairCandidate]:
            assert lookahead is not None
            return (render(state) for state in lookahead())

        found = self.engine.first_judged(
            (render(state) for state in states),
            judge,
            label=self.label,
            after=None if after is None else rendered_after,
            lookahead=None if lookahead is None else rendered_ahead,
        )
        if found is None:
            return None
        assert found[1].state is not None
        self.adopt(found[1].state)
        return found[0]

    def _cache_judge(self) -> PairJudge:
        """A judge for looking at what the cache knows of a pair: no syntax checks."""
        return PairJudge(
            self.engine,
            self.seed_ok,
            self.variant_ok,
            None,
            measure(self.state),
            self.refusals,
            self.places,
        )

    def known_refused(self, state: PairState) -> bool:
        """Whether the cache already refuses `state`'s pair (one side's verdict says no)."""
        return self._cache_judge().known_refused(render(state))

    def test_ahead(self, state: PairState) -> tickets.Ticket | None:
        """Start the first test `try_states([state])` will need in a job nobody needs, so
        that the check, made later, finds its verdict known or under way; None when no
        job is free or no test is needed. The caller abandons the ticket once the check
        was made (or will never be)."""
        ahead = self._cache_judge().first_untested(render(state))
        if ahead is None:
            return None
        with self.engine.counting_for(self.label):
            return self.engine.test_beside(*ahead)

    def ddmin_deletions(
        self,
        units: Sequence[Sequence[int]],
        derive: Callable[[PairState, list[int]], PairState],
        *,
        try_empty: bool = True,
    ) -> bool:
        """ddmin over units of token indices, each candidate derived from the state at start."""
        if not units:
            return False
        base = self.state

        def states(subsets: Iterable[Subset]) -> Iterator[PairState]:
            for subset in subsets:
                keep = set(subset)
                removed = [i for u, unit in enumerate(units) if u not in keep for i in unit]
                yield derive(base, removed)

        def first_success(plan: Plan) -> int | None:
            return self.try_states(states(plan), base, lambda index: states(plan.after(index)))

        before = measure(base)
        ddmin(tuple(range(len(units))), first_success, try_empty=try_empty)
        return measure(self.state) < before


class SideCurrent(Current, ABC):
    """One program of a pair as a `Current`, so single-program passes can work on it:
    each candidate text becomes a candidate pair (`_pair`), both programs are judged,
    and the winner replaces the whole pair."""

    def __init__(self, pair: PairCurrent, side: int) -> None:
        self.pair = pair
        self.side = side
        self.grammar: Grammar | None = pair.syntax.grammar if pair.syntax is not None else None
        seed, variant = pair.state.seed_text(), pair.state.variant_text()
        super().__init__(seed if side == SEED else variant, pair.engine, pair.syntax)
        self.label = pair.label
        self._adopt(Alignment.of(seed, variant, self.grammar))

    @abstractmethod
    def _pair(self, candidate: bytes) -> PairCandidate:
        """The pair `candidate` (a text of this side) stands for; measure None if none."""

    @abstractmethod
    def _judge(self) -> PairJudge:
        """The judge of candidate pairs against the current pair."""

    @abstractmethod
    def _adopt(self, alignment: Alignment) -> None:
        """Take `alignment` (of the pair just accepted) as the base of later candidates."""

    def try_candidates(
        self,
        candidates: Iterable[bytes],
        lookahead: Lookahead[bytes] | None = None,
        after: AfterSuccess[bytes] | None = None,
    ) -> int | None:
        def pairs(texts: Iterable[bytes]) -> Iterator[PairCandidate]:
            for candidate in texts:
                yield self._pair(candidate)

        pairs_ahead = None if lookahead is None else lambda: pairs(lookahead())
        pairs_after = None if after is None else lambda index: pairs(after(index))
        found = self.engine.first_judged(
            pairs(candidates),
            self._judge(),
            label=self.label,
            lookahead=pairs_ahead,
            after=pairs_after,
        )
        if found is None:
            return None
        self._accept(found[1])
        return found[0]

    def try_growth(self, candidate: bytes) -> bool:
        """Refused: the pair's judge takes only smaller pairs, and one side cannot grow on
        its own; the pair session puts lost final newlines back on both at the end."""
        return False

    def try_ungated(self, candidates: Iterable[bytes]) -> int | None:
        """Refused: a pair's candidates are judged as pairs, whose gate this would bypass
        for one side only."""
        return None

    def _accept(self, winner: PairCandidate) -> None:
        # plain bytes: a rendered text keeps its base, and that base its own, back to the start
        alignment = Alignment.of(bytes(winner.seed), bytes(winner.variant), self.grammar)
        self.text = alignment.seed.text if self.side == SEED else alignment.variant.text
        self.parsed = self.syntax.parse(self.text) if self.syntax is not None else None
        self._adopt(alignment)
        self.pair.adopt(PairState.full(alignment))


def slots_of(grammar: Grammar, texts: Iterable[bytes]) -> Catalog:
    """Which kinds stand in the same slot in `texts` (`PairCurrent.catalog`), with a parser
    of its own, so any thread may learn it: the syntax check's is the main thread's."""
    parser = grammar.parser()
    trees = ((text, parser.parse(text)) for text in texts)
    return slots_from(grammar, (Parsed(text, tree, *leaf_spans(tree)) for text, tree in trees))


def slots_from(grammar: Grammar, parsed: Iterable[Parsed]) -> Catalog:
    """`slots_of` texts already parsed."""
    catalog = Catalog(grammar)
    for each in parsed:
        catalog.learn(each, phrases=False)
    return catalog
