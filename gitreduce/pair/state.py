"""A point in PPR's search space: which tokens of an alignment survive, which hunks apply.

A `PairState` records only that and renders the two programs from it. This is
the paper's Patch: deleting a seed token deletes the same common token from the
variant (MinCommonality reduces both programs at once), insertions stay anchored
where they were in the seed, and applying a subset of the hunks gives a variant
between the seed and the original variant (MinLdiff, dd).

Surviving tokens are kept as runs of indices, and rendering copies whole runs of
consecutive surviving tokens as slices of the original text, so its cost grows
with the number of gaps, not with the file size: the hot loop renders thousands
of candidates of 25,000-token files.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Sequence

from gitreduce.pair.alignment import SEED, VARIANT, Alignment, diff_ops
from gitreduce.pair.tokens import join

# A set of token indices as a flat tuple of half-open runs [start0, end0, start1, end1, ...],
# sorted, disjoint and never adjacent, so equal sets have equal (hashable) tuples.
Runs = tuple[int, ...]


# --- runs of indices ---------------------------------------------------------------------------


def _full(count: int) -> Runs:
    return (0, count) if count else ()


def _runs_of(indices: Iterable[int]) -> list[int]:
    """Index runs of any iterable; a step-1 range converts in O(1) (a whole subtree's tokens)."""
    if isinstance(indices, range) and indices.step == 1:
        return [indices.start, indices.stop] if len(indices) else []
    runs: list[int] = []
    for index in sorted(set(indices)):
        if runs and runs[-1] == index:
            runs[-1] = index + 1
        else:
            runs += (index, index + 1)
    return runs


def _subtract(kept: Runs, removed: Sequence[int]) -> Runs:
    """kept minus removed, both as runs; untouched runs are copied in bulk slices."""
    if not removed or not kept:
        return kept
    out: list[int] = []
    position = 0
    count = len(kept)
    carry: tuple[int, int] | None = None  # the right part of a run cut by the previous removal
    for pair_at in range(0, len(removed), 2):
        start, stop = removed[pair_at], removed[pair_at + 1]
        if carry is not None:
            carried_start, carried_end = carry
            if carried_end <= start:
                out += carry
                carry = None
            else:
                if carried_start < start:
                    out += (carried_start, start)
                if carried_end > stop:
                    carry = (stop, carried_end)
                    continue
                carry = None
        first = bisect_right(kept, start, position) & ~1
        out.extend(kept[position:first])
        position = first
        while position < count and kept[position] < stop:
            run_start, run_end = kept[position], kept[position + 1]
            position += 2
            if run_start < start:
                out += (run_start, start)
            if run_end > stop:
                carry = (stop, run_end)
                break
    if carry is not None:
        out += carry
    out.extend(kept[position:])
    return tuple(out)


def _counts(kept: Runs, ranges: Sequence[tuple[int, int]]) -> list[int]:
    """Kept indices inside each of `ranges` (ordered, disjoint), in one sweep over both."""
    counts: list[int] = []
    position = 0
    count = len(kept)
    for low, high in ranges:
        while position < count and kept[position + 1] <= low:
            position += 2
        total = 0
        while position < count and kept[position] < high:
            start, end = kept[position], kept[position + 1]
            if end > high:
                total += high - (start if start > low else low)
                break
            total += end - (start if start > low else low)
            position += 2
        counts.append(total)
    return counts


def runs_indices(kept: Runs) -> list[int]:
    indices: list[int] = []
    for at in range(0, len(kept), 2):
        indices.extend(range(kept[at], kept[at + 1]))
    return indices


# --- pair states -------------------------------------------------------------------------------


class PairState:
    """A point in PPR's search space: surviving tokens and applied hunks of one alignment.

    Immutable and hashable, so reducers can cache verdicts by state; deriving a
    state with a few more deletions copies run boundaries, not per-token data.
    Common tokens live in `seed_kept` only (they are kept or removed in both
    programs at once); `variant_kept` is consulted for variant-only tokens.
    """

    __slots__ = (
        "_hash",
        "_hunk_counts",
        "_variant_runs",
        "alignment",
        "applied",
        "seed_kept",
        "variant_kept",
    )

    def __init__(
        self,
        alignment: Alignment,
        seed_kept: Runs,
        variant_kept: Runs,
        applied: frozenset[int],
        hunk_counts: tuple[list[int], list[int]] | None = None,
    ) -> None:
        self.alignment = alignment
        self.seed_kept = seed_kept
        self.variant_kept = variant_kept
        self.applied = applied
        self._hash = hash((id(alignment), seed_kept, variant_kept, applied))
        # Computed on first use; hunk counts depend on the kept tokens only, so a state
        # that differs in its hunks alone (MinLdiff, dd) inherits them.
        self._hunk_counts = hunk_counts
        self._variant_runs: tuple[list[tuple[int, int, int]], list[bool], bool] | None = None

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PairState):
            return NotImplemented
        return (
            self._hash == other._hash
            and self.alignment is other.alignment
            and self.seed_kept == other.seed_kept
            and self.variant_kept == other.variant_kept
            and self.applied == other.applied
        )

    def __repr__(self) -> str:
        return (
            f"PairState(seed={self.seed_tokens()}, variant={self.variant_tokens()}, "
            f"diff={self.diff_tokens()}, applied={sorted(self.applied)})"
        )

    @classmethod
    def full(cls, alignment: Alignment) -> PairState:
        """The original pair: every token kept, every hunk applied."""
        return cls(
            alignment,
            _full(len(alignment.seed)),
            _full(len(alignment.variant)),
            frozenset(range(len(alignment.hunks))),
        )

    # derivations

    def without_seed_tokens(self, indices: Iterable[int]) -> PairState:
        """Delete seed tokens; common ones leave the variant too (Patch(seed', d))."""
        removed = _runs_of(indices)
        if removed and (removed[0] < 0 or removed[-1] > len(self.alignment.seed)):
            raise IndexError("seed token index out of range")
        kept = _subtract(self.seed_kept, removed)
        if kept == self.seed_kept:
            return self
        return PairState(self.alignment, kept, self.variant_kept, self.applied)

    def without_variant_tokens(self, indices: Iterable[int]) -> PairState:
        """Delete variant tokens by variant index.

        Variant-only tokens leave the variant alone. A common token cannot leave
        one program only, so it is deleted from both, like a seed deletion; a
        caller that wants the seed untouched passes variant-only indices
        (`alignment.variant_hunk[i] >= 0`) and tests ψ_v only.
        """
        alignment = self.alignment
        to_seed = alignment.variant_to_seed
        seed_removed: list[int] = []
        variant_removed: list[int] = []
        for index in indices:
            if not 0 <= index < len(to_seed):
                raise IndexError("variant token index out of range")
            common = to_seed[index]
            if common >= 0:
                seed_removed.append(common)
            else:
                variant_removed.append(index)
        seed_kept = _subtract(self.seed_kept, _runs_of(seed_removed))
        variant_kept = _subtract(self.variant_kept, _runs_of(variant_removed))
        if seed_kept == self.seed_kept and variant_kept == self.variant_kept:
            return self
        return PairState(alignment, seed_kept, variant_kept, self.applied)

    def with_hunks(self, subset: Iterable[int]) -> PairState:
        """Apply exactly `subset` of the hunks (by index): Patch(seed', subset of Δ_L)."""
        applied = frozenset(subset)
        if applied and (min(applied) < 0 or max(applied) >= len(self.alignment.hunks)):
            raise IndexError("hunk index out of range")
        if applied == self.applied:
            return self
        return PairState(
            self.alignment, self.seed_kept, self.variant_kept, applied, self._hunk_counts
        )

    # queries

    def seed_kept_indices(self) -> list[int]:
        """Seed token indices that survive, in order: the tokens of seed_text()."""
        return runs_indices(self.seed_kept)

    def variant_order(self) -> list[tuple[int, int]]:
        """(SEED or VARIANT, token index) for each token of variant_text(), in order.

        Each token is named in the program its bytes are copied from: variant-only
        tokens and common tokens that carry the variant's trivia by variant
        index, seed-only tokens of hunks not applied and common tokens that carry
        the seed's trivia by seed index (`alignment.seed_to_variant` translates).
        """
        return [
            (side, index)
            for side, start, stop in self.variant_runs()
            for index in range(start, stop)
        ]

    def live_hunks(self) -> tuple[int, ...]:
        """Hunks that still change something: some seed-only or variant-only token survives.

        A hunk whose tokens have all been reduced away renders the same applied
        or not; MinLdiff and dd need not spend a test on it.
        """
        seed_counts, variant_counts = self.hunk_counts()
        return tuple(
            index
            for index, (deleted, inserted) in enumerate(
                zip(seed_counts, variant_counts, strict=True)
            )
            if deleted or inserted
        )

    def hunk_counts(self) -> tuple[list[int], list[int]]:
        """Per hunk, the surviving seed-only and variant-only tokens (applied or not)."""
        if self._hunk_counts is None:
            alignment = self.alignment
            self._hunk_counts = (
                _counts(self.seed_kept, alignment._hunk_seed_ranges),
                _counts(self.variant_kept, alignment._hunk_variant_ranges),
            )
        return self._hunk_counts

    def seed_tokens(self) -> int:
        kept = self.seed_kept
        return sum(kept[at + 1] - kept[at] for at in range(0, len(kept), 2))

    def variant_tokens(self) -> int:
        return sum(stop - start for _, start, stop in self.variant_runs())

    def diff_tokens(self) -> int:
        """Tokens inserted plus deleted, counted from the state.

        An applied hunk contributes its surviving seed-only and variant-only
        tokens. This is the benchmarks' difference size for the rendered pair
        whenever the kept tokens re-tokenise to themselves and the reductions
        touched only hunk tokens (then, by the triangle inequality, no diff can
        be shorter); deleting common tokens can let a shorter alignment appear,
        so after MinCommonality it is an upper bound and `minimal_diff_tokens()`
        is exact.
        """
        seed_counts, variant_counts = self.hunk_counts()
        return sum(seed_counts[index] + variant_counts[index] for index in self.applied)

    def seed_token_texts(self) -> list[bytes]:
        token = self.alignment.seed.token
        return [token(index) for index in self.seed_kept_indices()]

    def variant_token_texts(self) -> list[bytes]:
        seed, variant = self.alignment.seed, self.alignment.variant
        return [
            (variant if side == VARIANT else seed).token(index)
            for side, index in self.variant_order()
        ]

    def minimal_diff_tokens(self) -> int:
        """A fresh minimal token diff of the kept tokens (costly on big pairs: a Myers run)."""
        return sum(
            count
            for op, count in diff_ops(self.seed_token_texts(), self.variant_token_texts())
            if op
        )

    # rendering

    def seed_text(self) -> bytes:
        seed = self.alignment.seed
        text, leads, ends, kept = seed.text, seed.leads, seed.ends, self.seed_kept
        chunks = [text[leads[kept[at]] : ends[kept[at + 1] - 1]] for at in range(0, len(kept), 2)]
        if kept and kept[-1] == len(seed):  # the tail follows its own last token: no joint
            chunks[-1] += text[seed.tail :]
        else:
            chunks.append(text[seed.tail :])
        return join(chunks)

    def variant_text(self) -> bytes:
        alignment = self.alignment
        sources = (alignment.seed, alignment.variant)
        runs, gaps, tail_gap = self._variant_layout()
        chunks = []
        for side, start, stop in runs:
            tokens = sources[side]
            chunks.append(tokens.text[tokens.leads[start] : tokens.ends[stop - 1]])
        governor = alignment._tail_governor
        tail_side = sources[VARIANT if governor < 0 or governor in self.applied else SEED]
        chunks.append(tail_side.text[tail_side.tail :])
        return join(chunks, [*gaps, tail_gap])

    def variant_runs(self) -> list[tuple[int, int, int]]:
        """The variant as maximal runs (SEED or VARIANT, start, stop) of one source's tokens."""
        return self._variant_layout()[0]

    def _variant_layout(self) -> tuple[list[tuple[int, int, int]], list[bool], bool]:
        """Variant runs, whether a deleted token precedes each, and whether one precedes the tail.

        One sweep over the ops and the kept seed runs together (both are in seed
        order); rendering, counting and mapping all read this, and it is cached.
        """
        if self._variant_runs is not None:
            return self._variant_runs
        applied = self.applied
        kept = self.seed_kept
        variant_kept = self.variant_kept
        count = len(kept)
        runs: list[tuple[int, int, int]] = []
        gaps: list[bool] = []
        side = last_start = last_stop = -1
        last_gap = gap = False
        position = 0
        for (
            is_hunk,
            seed_start,
            seed_end,
            variant_start,
            variant_end,
            decider,
        ) in self.alignment._table:
            if is_hunk and decider in applied:
                source_runs, low, high = variant_kept, variant_start, variant_end
                source, offset = VARIANT, 0
                at = bisect_right(variant_kept, low) & ~1
            else:
                source_runs, low, high = kept, seed_start, seed_end
                if not is_hunk and (decider < 0 or decider in applied):
                    source, offset = VARIANT, variant_start - seed_start
                else:
                    source, offset = SEED, 0
                while position < count and kept[position + 1] <= low:
                    position += 2
                at = position
            if low == high:
                continue
            expected = low
            limit = len(source_runs)
            while at < limit and source_runs[at] < high:
                start, stop = source_runs[at], source_runs[at + 1]
                if start < low:
                    start = low
                beyond = stop > high
                if beyond:
                    stop = high
                if start != expected:
                    gap = True
                expected = stop
                start += offset
                stop += offset
                if not gap and side == source and last_stop == start:
                    last_stop = stop
                else:
                    if side >= 0:
                        runs.append((side, last_start, last_stop))
                        gaps.append(last_gap)
                    side, last_start, last_stop, last_gap = source, start, stop, gap
                gap = False
                if beyond:
                    break
                at += 2
            if source_runs is kept:
                position = at
            if expected != high:
                gap = True
        if side >= 0:
            runs.append((side, last_start, last_stop))
            gaps.append(last_gap)
        self._variant_runs = (runs, gaps, gap)
        return self._variant_runs
