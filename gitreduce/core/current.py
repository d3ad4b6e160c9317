"""The best text so far, and the deletion-rendering every list-style pass shares."""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TypeVar

from gitreduce.core import edits
from gitreduce.core.ddmin import Plan, Subset, ddmin, opening
from gitreduce.core.engine import Engine
from gitreduce.core.judges import Accepts, AfterSuccess, Lookahead, Precheck
from gitreduce.lang.syntax import Parsed, Syntax, plain_tokens

T = TypeVar("T")


class Current:
    """Holds the smallest interesting text found so far; only the engine's answers change it.

    `place` makes the text one file of a file set: each candidate is tested as
    `place(candidate)`, the whole set with it in place (see `TextJudge`).
    `accepts` replaces the engine's "interesting" for such a file when its set
    is the passing seed of a pair of sets (it must stay good).
    """

    def __init__(
        self,
        text: bytes,
        engine: Engine,
        syntax: Syntax | None,
        on_change: Callable[[Current], None] | None = None,
        *,
        place: Callable[[bytes], bytes] | None = None,
        accepts: Accepts | None = None,
    ) -> None:
        self.engine = engine
        self.syntax = syntax
        self.place = place
        self.accepts = accepts
        self.label = ""  # the running pass, set by `run_pass`: the engine counts its tests
        # called before each candidate is read: it may raise to stop the pass at once
        self.checkpoint: Callable[[], None] | None = None
        # what the schedule tries next once the running pass takes nothing more: the
        # lookahead of a pass's batches whose refusing all ends the pass
        self.then: Lookahead[bytes] | None = None
        self._on_change = on_change
        self.text = text
        # the text as the engine took it: a rendered candidate remembers its base and edits
        self.rendered = text
        self.parsed: Parsed | None = syntax.parse(text) if syntax else None

    @property
    def tokens(self) -> int:
        if self.parsed is not None:
            return self.parsed.tokens
        return len(plain_tokens(self.text))

    def try_candidates(
        self,
        candidates: Iterable[bytes],
        lookahead: Lookahead[bytes] | None = None,
        after: AfterSuccess[bytes] | None = None,
    ) -> int | None:
        """Index of the first interesting candidate, which becomes current; None if none is.
        `lookahead`: what the caller tries next if none is; `after`: what it tries next
        if a given one is (`Engine.first_judged`)."""
        return self._first(candidates, len(self.text), lookahead=lookahead, after=after)

    def try_growth(self, candidate: bytes) -> bool:
        """Try one candidate that may be larger than the current text: what no deletion can
        give back (a final newline). It must still parse and be interesting to be taken."""
        return self._first([candidate], len(candidate) + 1) is not None

    def try_ungated(self, candidates: Iterable[bytes]) -> int | None:
        """`try_candidates` without the syntax check: for where the grammar is stricter
        than the language (C's implicit `int`). A text taken with more syntax errors
        than the original had becomes the measure the check holds later candidates to."""
        found = self._first(candidates, len(self.text), gated=False)
        if found is not None and self.syntax is not None and self.parsed is not None:
            self.syntax.tolerate(self.parsed.tree)
        return found

    def _first(
        self,
        candidates: Iterable[bytes],
        smaller_than: int,
        *,
        gated: bool = True,
        lookahead: Lookahead[bytes] | None = None,
        after: AfterSuccess[bytes] | None = None,
    ) -> int | None:
        precheck = syntax_gate(self.syntax, self.text) if self.syntax and gated else None
        if self.checkpoint is not None:
            candidates = _checked(candidates, self.checkpoint)
        found = self.engine.first_success(
            candidates,
            smaller_than=smaller_than,
            label=self.label,
            precheck=precheck,
            place=self.place,
            accepts=self.accepts,
            lookahead=lookahead,
            after=after,
        )
        if found is None:
            return None
        self.text = bytes(found[1])  # not the rendered text: it holds its base, and that its own
        self.rendered = found[1]
        if self.syntax is not None:
            self.parsed = self.syntax.parse(self.text)
        if self._on_change is not None:
            self._on_change(self)
        return found[0]

    def try_until_none(self, candidates_of: Callable[[Current], Iterable[bytes]]) -> bool:
        """Take the first interesting candidate `candidates_of` derives from the current
        parse, derive again, until none is; True if any was taken. A round that takes
        nothing ends the pass: `then` is its lookahead. What a round derives if its
        candidate `i` is taken is its `after`: a bet while that candidate's test runs."""

        def after(index: int) -> Iterable[bytes]:
            # made again up to `index`, rather than every candidate read kept for a bet
            # that is rarely made
            taken = next(itertools.islice(candidates_of(self), index, None), None)
            if taken is None:
                return ()
            supposed = self.supposing(taken)
            return candidates_of(supposed) if supposed.parsed is not None else ()

        progress = False
        while self.parsed is not None:
            if self.try_candidates(candidates_of(self), self.then, after) is None:
                return progress
            progress = True
        return progress

    def supposing(self, text: bytes) -> Current:
        """This text as if the engine had taken `text`: for deriving what a pass tries
        next should it, never for trying (nothing is told of it). What the schedule
        tries after the pass (`then`) is not known for it: it reads the text taken."""
        supposed = copy.copy(self)
        supposed._on_change = None
        supposed.then = None
        supposed.text = bytes(text)
        supposed.rendered = text
        supposed.parsed = self.syntax.parse(supposed.text) if self.syntax else None
        return supposed

    def try_rewrite(self, rewrite: Callable[[bytes], bytes]) -> bool:
        """Try the whole text rewritten by `rewrite` (a normaliser, not an edit of one place)."""
        return self.try_candidates([rewrite(self.text)], self.then) is not None


def _checked(candidates: Iterable[bytes], checkpoint: Callable[[], None]) -> Iterator[bytes]:
    for candidate in candidates:
        checkpoint()
        yield candidate


def syntax_gate(syntax: Syntax, parent: bytes | None = None) -> Precheck:
    """The syntax check for candidates made from known texts.

    A rendered candidate names its base and where it differs from it; any
    other is compared with `parent`, the text it most likely came from. Either
    way the check re-parses a known tree incrementally instead of the whole text.
    """

    def acceptable(text: bytes) -> bool:
        if isinstance(text, edits.Rendered):
            return syntax.check(text, text.base, text.splices)
        return syntax.check(text, parent)

    return acceptable


def render_deletions(text: bytes, ranges: Iterable[tuple[int, int]]) -> bytes:
    """Delete byte ranges, joining ranges separated only by white space and taking whole lines.

    Merging and line-widening keep candidates free of blank-line debris, so
    they stay readable and their diffs stay small.
    """
    return edits.apply(text, deletion_edits(text, ranges))


def deletion_edits(text: bytes, ranges: Iterable[tuple[int, int]]) -> list[edits.Edit]:
    """The edits `render_deletions` applies, for passes that add edits of their own."""
    merged: list[list[int]] = []
    for start, end in sorted(ranges):
        if merged and not text[merged[-1][1] : start].strip():
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    deletions = []
    previous_end = 0
    for start, end in merged:
        start, end = edits.widen_to_lines(text, start, end)
        end = edits.take_following_blanks(text, start, end)
        start = max(start, previous_end)
        deletions.append(edits.Edit(start, end))
        previous_end = end
    return deletions


@dataclass(frozen=True)
class Unit:
    """One deletable element: its byte span and the list separator it owns, if any."""

    start: int
    end: int
    separator: tuple[int, int] | None = None


def deletion_spans(units: Sequence[Unit], kept: Sequence[int]) -> list[tuple[int, int]]:
    """Spans that delete every unit not in `kept` (ascending indices), separators included.

    A unit takes its separator along; the last kept unit drops its separator
    too when everything after it went, so no list ends in a dangling `,`.
    """
    keep = set(kept)
    spans = []
    for index, unit in enumerate(units):
        if index not in keep:
            spans.append((unit.start, unit.end))
            if unit.separator is not None:
                spans.append(unit.separator)
    if kept:
        last = units[kept[-1]]
        if kept[-1] < len(units) - 1 and last.separator is not None:
            spans.append(last.separator)
    return spans


def delete_units(
    current: Current,
    units: Sequence[Unit],
    *,
    try_empty: bool = True,
    lookahead: Lookahead[bytes] | None = None,
) -> bool:
    """ddmin over units of the current text (see `deletion_spans`); True if any went.
    `lookahead`: what the caller tries next once ddmin takes nothing more."""
    return first_then_delete_units(
        current, (), bytes, units, try_empty=try_empty, lookahead=lookahead
    )[1]


def opening_deletions(current: Current, units: Sequence[Unit]) -> Iterator[bytes]:
    """The candidates `delete_units(current, units)` tries first, in its order."""
    snapshot = current.text
    for kept in opening(len(units)):
        yield render_deletions(snapshot, deletion_spans(units, kept))


def _lazily(make: Callable[[bytes], Iterable[bytes]], text: bytes) -> Iterator[bytes]:
    """`make(text)`, made only once the items before it in a chain are read."""
    yield from make(text)


class _FirstTaken(Exception):
    """One of the texts offered before ddmin's candidates was taken: ddmin stops there."""


def first_then_delete_units(
    current: Current,
    first: Sequence[T],
    render_first: Callable[[T], bytes],
    units: Sequence[Unit],
    *,
    try_empty: bool = True,
    lookahead: Lookahead[bytes] | None = None,
    after_first: AfterSuccess[bytes] | None = None,
    after_deleting: Callable[[bytes], Iterable[bytes]] | None = None,
) -> tuple[int | None, bool]:
    """The texts of `first` (rendered as they are reached), in order, then ddmin over
    `units` if none is taken, all read as one stream of candidates; which of `first`
    was taken, and whether units went.

    The same candidates in the same order as trying `first` and then calling
    `delete_units`, but with no wait between the two: the last of `first` and
    ddmin's first candidates are tested side by side (`Engine.first_judged`).
    `lookahead`: what the caller tries next if nothing here is taken, for every
    stream ddmin reads. What ddmin reads after each of its candidates, should it be
    taken, goes with every stream too (`Plan.after`), for a bet while that
    candidate's test runs; what the caller does next is its own: `after_first(i)`
    once `first[i]` is taken, `after_deleting(text)` once ddmin ends on `text`
    (after the candidate ddmin reads then, all refused). Without them a bet on the
    last of ddmin's candidates, or on one of `first`, has nothing to test.
    """
    snapshot = current.text
    before = len(snapshot)
    leading: Sequence[T] = first
    taken: int | None = None
    if not units:
        found = current.try_candidates((render_first(item) for item in first), lookahead)
        return found, False

    def render(kept: Subset) -> bytes:
        return render_deletions(snapshot, deletion_spans(units, kept))

    def first_success(plan: Plan) -> int | None:
        nonlocal leading, taken
        offered, leading = leading, ()

        def after(index: int) -> Iterable[bytes]:
            if index < len(offered):
                return after_first(index) if after_first is not None else ()
            following = (render(subset) for subset in plan.after(index - len(offered)))
            if after_deleting is None:
                return following
            step = plan.step(index - len(offered))
            taken = render(() if step is None else step.kept)
            return itertools.chain(following, _lazily(after_deleting, taken))

        found = current.try_candidates(
            itertools.chain(
                (render_first(item) for item in offered), (render(subset) for subset in plan)
            ),
            lookahead,
            after,
        )
        if found is not None and found < len(offered):
            taken = found
            raise _FirstTaken
        return None if found is None else found - len(offered)

    try:
        ddmin(tuple(range(len(units))), first_success, try_empty=try_empty)
    except _FirstTaken:
        return taken, False
    return None, len(current.text) < before
