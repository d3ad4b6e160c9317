"""The seed as a single program for every single-program pass, its variant patched along.

MinCommonality (PPR, Algorithm 4) is syntax-guided reduction of the seed in
which each candidate's variant is the original variant patched the same way.
Running the whole single-program schedule here, rather than a second,
deletion-only Perses, gives pairs everything single programs get: hoisting,
`{...}` to `;`, names with all their uses, parameters with their arguments,
bracket pairs, token windows (the sweeps' stock phrases excepted: see
`PairCurrent.catalog`).

Every pass renders its candidates through `edits.apply`, so a candidate knows
the byte edits that made it from its base seed. `VariantPatch` carries those
edits over to the variant through the token alignment of the two: bytes of
common tokens change on both sides, seed-only tokens on the seed alone, and
variant-only tokens stay where they were anchored. An edit that would put new
text over a changed region has no sound counterpart and is refused untested.
A candidate that respells a name everywhere (identifier replacement, `rename`)
says so (`Rendered.renames`), and the variant's own occurrences of the name,
in what only the variant has, are respelled with it: the difference of a
fuzzer's pair mostly mentions names the seed has too.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable
from functools import cache

from gitreduce.core import edits
from gitreduce.pair.alignment import SEED, Alignment
from gitreduce.pair.current import (
    Measure,
    PairCandidate,
    PairCurrent,
    PairJudge,
    SideCurrent,
)
from gitreduce.pair.tokens import tokenize

# Seed texts whose variant is remembered: a ddmin renders every candidate from
# the text it started on, several accepted candidates back.
REMEMBERED_BASES = 64


class VariantPatch:
    """Maps byte edits of an aligned seed onto its variant."""

    def __init__(self, alignment: Alignment) -> None:
        self.alignment = alignment
        seed = alignment.seed
        hunk = alignment.seed_hunk
        count = len(seed)
        # re-lexing next to a changed token can change the difference: measure it afresh there
        self._near_hunk = [
            hunk[i] >= 0 or (i > 0 and hunk[i - 1] >= 0) or (i + 1 < count and hunk[i + 1] >= 0)
            for i in range(count)
        ]
        self._has_insertions = any(h.seed_start == h.seed_end for h in alignment.hunks)
        # the exclusive end of each token's run: its common run, or its hunk's seed side
        self._run_end = [0] * count
        for op in alignment.ops:
            for index in range(op.seed_start, op.seed_end):
                self._run_end[index] = op.seed_end

    def _within(self, token: int, position: int) -> int:
        """Where seed byte `position` (inside common token `token`'s span) is in the variant."""
        seed, variant = self.alignment.seed, self.alignment.variant
        partner = self.alignment.seed_to_variant[token]
        if position >= seed.starts[token]:
            return variant.starts[partner] + position - seed.starts[token]
        trivia = variant.starts[partner] - variant.leads[partner]
        return variant.leads[partner] + min(position - seed.leads[token], trivia)

    def carry(
        self, changes: Iterable[edits.Edit], renames: tuple[tuple[bytes, bytes], ...] = ()
    ) -> tuple[list[edits.Edit], bool] | None:
        """The variant's edits for the seed's, and whether the difference may have changed.

        None when an edit has no sound counterpart: new text over a seed-only
        token, or over a place where the variant inserted tokens. `renames`:
        names the seed's edits respell everywhere; the variant's own
        occurrences of them (tokens only the variant has) are respelled too,
        so a name replaced in both programs is replaced in the difference as
        well, where carrying edits alone would leave it dangling.
        """
        carried: list[edits.Edit] = []
        near_change = False
        for change in changes:
            for part in self._as_deletions(change):
                pieces, touched_changed, near = self._pieces(part)
                near_change |= near
                if not part.replacement:
                    carried.extend(edits.Edit(start, end) for start, end in pieces if end > start)
                elif touched_changed or len(pieces) != 1:
                    return None
                else:
                    carried.append(edits.Edit(*pieces[0], part.replacement))
        respelled = self._respelled(renames, carried)
        return carried + respelled, near_change or bool(respelled)

    def _respelled(
        self, renames: tuple[tuple[bytes, bytes], ...], carried: list[edits.Edit]
    ) -> list[edits.Edit]:
        """Edits respelling each variant-only token a rename names, outside `carried`."""
        if not renames:
            return []
        spelling = dict(renames)
        variant = self.alignment.variant
        taken = sorted((edit.start, edit.end) for edit in carried)
        respelled = []
        for hunk in self.alignment.hunks:
            for token in range(hunk.variant_start, hunk.variant_end):
                new = spelling.get(variant.token(token))
                start, end = variant.starts[token], variant.ends[token]
                at = bisect_right(taken, (start, end))
                inside = any(a < end and start < b for a, b in taken[max(0, at - 1) : at + 1])
                if new is not None and not inside:
                    respelled.append(edits.Edit(start, end, new))
        return respelled

    def _as_deletions(self, change: edits.Edit) -> list[edits.Edit]:
        """A replacement by text found inside the replaced range (hoisting a descendant) as
        the two deletions around it, so the variant keeps its own version of that text."""
        text = self.alignment.seed.text
        if not change.replacement:
            return [change]
        inner = text.find(change.replacement, change.start, change.end)
        if inner < 0:
            return [change]
        return [
            edits.Edit(change.start, inner),
            edits.Edit(inner + len(change.replacement), change.end),
        ]

    def _pieces(self, change: edits.Edit) -> tuple[list[tuple[int, int]], bool, bool]:
        """Variant byte ranges under `change`'s range, one per run of common tokens; whether
        it touched seed-only tokens; whether it came near any.

        Runs are walked whole, so deleting a large function costs a few steps,
        not one per token.
        """
        seed, variant = self.alignment.seed, self.alignment.variant
        to_variant = self.alignment.seed_to_variant
        pieces: list[tuple[int, int]] = []
        touched_changed = near = False
        first = token = bisect_right(seed.ends, change.start)
        stop = bisect_left(seed.leads, change.end)
        while token < stop:
            last = min(self._run_end[token], stop) - 1
            near |= self._near_hunk[token] or self._near_hunk[last]
            if to_variant[token] < 0:
                touched_changed = True
            else:
                start = self._within(token, max(change.start, seed.leads[token]))
                pieces.append((start, self._within(last, min(change.end, seed.ends[last]))))
            token = last + 1
        if change.end > seed.tail:  # the trivia after the last token: aligned at the end
            offset = len(variant.text) - len(seed.text)
            start = max(variant.tail, max(change.start, seed.tail) + offset)
            pieces.append((start, max(start, change.end + offset)))
        elif stop <= first:  # an insertion between two tokens
            anchor = self._insertion_point(first)
            pieces = [] if anchor is None else [(anchor, anchor)]
            touched_changed = anchor is None
        return pieces, touched_changed, near

    def _insertion_point(self, token: int) -> int | None:
        """The variant byte matching the start of seed token `token`'s span (its trivia)."""
        seed, variant = self.alignment.seed, self.alignment.variant
        if token >= len(seed):
            return variant.tail
        partner = self.alignment.seed_to_variant[token]
        if partner < 0:
            return None
        previous = self.alignment.seed_to_variant[token - 1] if token else -1
        if self._has_insertions and token and previous != partner - 1:
            return None  # the variant inserted tokens right here: which side is unclear
        return variant.leads[partner]


class SeedCurrent(SideCurrent):
    """The pair's seed as a `Current`; an accepted candidate replaces the whole pair."""

    def __init__(self, pair: PairCurrent) -> None:
        self._patches: dict[bytes, VariantPatch] = {}
        super().__init__(pair, SEED)

    def _adopt(self, alignment: Alignment) -> None:
        self._patches[alignment.seed.text] = VariantPatch(alignment)
        while len(self._patches) > REMEMBERED_BASES:
            del self._patches[next(iter(self._patches))]
        self.variant = alignment.variant.text
        self.diff = alignment.diff_size

    @staticmethod
    def _measure(seed: bytes, variant: bytes, diff: int) -> Measure:
        """Bytes, not tokens, after the difference: the passes' own notion of smaller."""
        return diff, len(seed) + len(variant)

    def _pair(self, candidate: bytes) -> PairCandidate:
        """The candidate seed with its patched variant (measure None: not derivable)."""
        if not isinstance(candidate, edits.Rendered):
            return PairCandidate(candidate, b"", None)
        patch = self._patches.get(candidate.base)
        if patch is None:
            return PairCandidate(candidate, b"", None)
        carried = patch.carry(candidate.edits, candidate.renames)
        if carried is None:
            return PairCandidate(candidate, b"", None)
        variant_edits, near_change = carried
        # both stay rendered: the syntax check re-parses their bases' trees where they changed
        variant: bytes = edits.apply(patch.alignment.variant.text, variant_edits)
        seed: bytes = candidate
        if not near_change:  # the base's difference: candidates of a ddmin share an older base
            diff = patch.alignment.diff_size
            return PairCandidate(seed, variant, self._measure(seed, variant, diff))
        grammar, syntax = self.grammar, self.syntax

        @cache  # once: a candidate read ahead is judged again
        def count() -> Measure:
            """Both texts just passed the syntax check, which kept their trees."""
            seed_tokens, variant_tokens = (
                tokenize(text, grammar, syntax.passed_tree(text) if syntax else None)
                for text in (seed, variant)
            )
            diff = Alignment(seed_tokens, variant_tokens).diff_size
            return self._measure(seed, variant, diff)

        return PairCandidate(seed, variant, count)

    def try_rewrite(self, rewrite: Callable[[bytes], bytes]) -> bool:
        """Both programs rewritten, each on its own: a normaliser has no edits to carry."""
        seed, variant = rewrite(self.text), rewrite(self.variant)
        grammar = self.grammar
        diff = Alignment(tokenize(seed, grammar), tokenize(variant, grammar)).diff_size
        candidate = PairCandidate(seed, variant, self._measure(seed, variant, diff))
        found = self.engine.first_judged([candidate], self._judge(), label=self.label)
        if found is not None:
            self._accept(found[1])
        return found is not None

    def _judge(self) -> PairJudge:
        return self.pair.judge(self._measure(self.text, self.variant, self.diff))
