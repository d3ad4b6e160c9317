"""The pair every pairwise reducer works on: a seed, a variant, and one token alignment of them.

PPR (FSE'23) reduces three things at once: the seed, the variant and the
difference between them. All three are views of one object here. The seed and
the variant are tokenised once and aligned once (Δ_L: a minimal token diff, the
same difference size the benchmarks report); a `PairState` (state module) then
only records which tokens survive and which hunks of the diff are applied, and
renders the two programs from that.

`SEED` and `VARIANT` name the two programs wherever a token index needs one.
"""

from __future__ import annotations

from bisect import bisect_right
from functools import cached_property
from typing import NamedTuple

import diff_match_patch

from gitreduce.lang.grammars import Grammar
from gitreduce.pair.tokens import TokenList, tokenize

SEED = 0
VARIANT = 1


class Equal(NamedTuple):
    """Common tokens: seed[seed_start:seed_end] is, token for token, variant[variant_start:...]."""

    seed_start: int
    seed_end: int
    variant_start: int
    variant_end: int


class Hunk(NamedTuple):
    """A maximal change between two common runs: seed-only tokens replaced by variant-only ones.

    Either side may be empty (a pure insertion or deletion). A pure insertion is
    anchored at seed position `seed_start`, between seed tokens seed_start-1 and
    seed_start, wherever those tokens went.
    """

    # the hunk's number: as a field it shadows the tuple method index (NamedTuple allows that,
    # mypy reports it)
    index: int  # type: ignore[assignment]
    seed_start: int
    seed_end: int
    variant_start: int
    variant_end: int

    @property
    def size(self) -> int:
        return self.seed_end - self.seed_start + self.variant_end - self.variant_start


def diff_ops(seed: list[bytes], variant: list[bytes]) -> list[tuple[int, int]]:
    """(op, token count) of a minimal token diff, computed as the benchmarks compute its size.

    With Diff_Timeout = 0 diff-match-patch runs Myers' algorithm to the end and
    skips its half-match shortcut, so the diff is minimal and our difference
    sizes agree with the benchmark's figure token for token.
    """
    table: dict[bytes, int] = {}

    def encode(tokens: list[bytes]) -> str:
        return "".join(chr(0x100 + table.setdefault(token, len(table))) for token in tokens)

    differ = diff_match_patch.diff_match_patch()
    differ.Diff_Timeout = 0
    encoded_seed, encoded_variant = encode(seed), encode(variant)
    return [(op, len(text)) for op, text in differ.diff_main(encoded_seed, encoded_variant, False)]


def _starts_line(tokens: TokenList, index: int) -> bool:
    """Whether token `index` is the first of its line (the end of the text counts as one)."""
    if index == 0 or index >= len(tokens):
        return True
    return b"\n" in tokens.text[tokens.ends[index - 1] : tokens.starts[index]]


def slid_to_lines(
    token_diff: list[tuple[int, int]],
    seed: TokenList,
    variant: TokenList,
    token_texts: tuple[list[bytes], list[bytes]],
) -> list[tuple[int, int]]:
    """`token_diff` with each pure insertion or deletion slid to the place where it covers
    whole lines, where it can slide.

    A minimal diff may place an inserted statement anywhere its first token repeats
    after it: `let a = 1; let` inserted after the seed's `let`, rather than the
    statement before it. Every placement is as small, but this one pairs the seed's
    `let` with the inserted statement's, so every edit of the seed's statement the
    reducers carry over to the variant breaks both statements there, and the shared
    code around a difference can never go. As git's diff slides its hunks to blank
    lines, a hunk here goes where it starts and ends at line breaks, the most whole
    lines first; where no placement does better, it stays where Myers put it.
    `token_texts`: both programs' token texts, as the diff compared them.
    """
    ops = [list(op) for op in token_diff if op[1]]
    seed_texts, variant_texts = token_texts
    seed_at = variant_at = 0
    for position, (change, count) in enumerate(ops):
        sliding = (
            change != 0
            and 0 < position < len(ops) - 1
            and ops[position - 1][0] == 0
            and ops[position + 1][0] == 0
        )
        if sliding:
            tokens, texts, start = (
                (variant, variant_texts, variant_at) if change > 0 else (seed, seed_texts, seed_at)
            )
            before, after = ops[position - 1][1], ops[position + 1][1]
            low = start
            while start - low < before - 1 and texts[low - 1] == texts[low - 1 + count]:
                low -= 1
            high = start
            while high - start < after - 1 and texts[high] == texts[high + count]:
                high += 1
            best = max(
                range(low, high + 1),
                key=lambda at: (
                    _starts_line(tokens, at) + _starts_line(tokens, at + count),
                    at == start,
                ),
            )
            shift = best - start
            ops[position - 1][1] += shift
            ops[position + 1][1] -= shift
            seed_at += shift
            variant_at += shift
        if change <= 0:
            seed_at += count
        if change >= 0:
            variant_at += count
    return [(change, count) for change, count in ops]


class Alignment:
    """Δ_L of two token lists: common runs and the hunks between them, in text order.

    Besides the ops, it keeps per-token maps (which hunk a token belongs to, which
    token it corresponds to on the other side) so reducers working on parse trees
    of either program can translate token indices.
    """

    def __init__(
        self,
        seed: TokenList,
        variant: TokenList,
        token_diff: list[tuple[int, int]] | None = None,
    ) -> None:
        """`token_diff`: the diff as `diff_ops` gives it, when the caller knows it already."""
        self.seed = seed
        self.variant = variant
        if token_diff is None:
            texts = seed.texts(), variant.texts()
            token_diff = slid_to_lines(diff_ops(*texts), seed, variant, texts)
        ops: list[Equal | Hunk] = []
        hunks: list[Hunk] = []
        seed_at = variant_at = 0
        pending: list[int] | None = None  # [seed_start, seed_end, variant_start, variant_end]

        def close() -> None:
            nonlocal pending
            if pending is not None:
                hunk = Hunk(len(hunks), *pending)
                hunks.append(hunk)
                ops.append(hunk)
                pending = None

        for change, count in token_diff:
            if count == 0:
                continue
            if change == 0:
                close()
                if ops and isinstance(ops[-1], Equal):  # never after cleanup, but stay canonical
                    last = ops.pop()
                    ops.append(Equal(last[0], seed_at + count, last[2], variant_at + count))
                else:
                    ops.append(Equal(seed_at, seed_at + count, variant_at, variant_at + count))
                seed_at += count
                variant_at += count
                continue
            if pending is None:
                pending = [seed_at, seed_at, variant_at, variant_at]
            if change < 0:
                seed_at += count
                pending[1] = seed_at
            else:
                variant_at += count
                pending[3] = variant_at
        close()
        if seed_at != len(seed) or variant_at != len(variant):
            raise AssertionError("token diff does not cover both token lists")

        self.ops: tuple[Equal | Hunk, ...] = tuple(ops)
        self.hunks: tuple[Hunk, ...] = tuple(hunks)
        self.equals: tuple[Equal, ...] = tuple(op for op in ops if isinstance(op, Equal))
        self.diff_size: int = sum(hunk.size for hunk in hunks)

        self.seed_hunk = [-1] * len(seed)
        self.variant_hunk = [-1] * len(variant)
        self.seed_to_variant = [-1] * len(seed)
        self.variant_to_seed = [-1] * len(variant)
        for hunk in hunks:
            for index in range(hunk.seed_start, hunk.seed_end):
                self.seed_hunk[index] = hunk.index
            for index in range(hunk.variant_start, hunk.variant_end):
                self.variant_hunk[index] = hunk.index
        for equal in self.equals:
            offset = equal.variant_start - equal.seed_start
            for index in range(equal.seed_start, equal.seed_end):
                self.seed_to_variant[index] = index + offset
                self.variant_to_seed[index + offset] = index

        # Which hunk decides the trivia of common tokens in the variant: the hunk right
        # before their run (a run before every hunk follows the first hunk). Where seed and
        # variant differ only in white space (re-indentation around an inserted `if`), the
        # white space follows that hunk, so applying every hunk reproduces the variant and
        # applying none reproduces the seed, byte for byte.
        self._governor: list[int] = []
        for position, op in enumerate(ops):
            if isinstance(op, Hunk):
                self._governor.append(op.index)
            elif position > 0:
                self._governor.append(self._governor[-1])
            else:
                self._governor.append(0 if hunks else -1)
        self._tail_governor = self._governor[-1] if ops else -1
        # (is_hunk, seed_start, seed_end, variant_start, variant_end, deciding hunk) per op,
        # flat tuples for the rendering sweep
        self._table: tuple[tuple[bool, int, int, int, int, int], ...] = tuple(
            (isinstance(op, Hunk), op[-4], op[-3], op[-2], op[-1], decider)
            for op, decider in zip(ops, self._governor, strict=True)
        )
        self._hunk_seed_ranges = [(hunk.seed_start, hunk.seed_end) for hunk in hunks]
        self._hunk_variant_ranges = [(hunk.variant_start, hunk.variant_end) for hunk in hunks]

    def changed_at(self, offset: int) -> bool:
        """Whether the variant's byte at `offset` lies in a token of a change (its trivia
        counts with it)."""
        token = bisect_right(self.variant.leads, offset) - 1
        return token >= 0 and offset < self.variant.ends[token] and self.variant_hunk[token] >= 0

    @cached_property
    def indented_apart(self) -> dict[int, tuple[bytes, bytes, int]]:
        """The common tokens that start a line in both programs at different indentation:
        variant index -> (the variant's indentation, the seed's, the hunk that decides
        which of them a rendering takes). A fuzzer that wraps statements in an `if`
        re-indents them, and in Python a line is only right at its own side's column."""
        apart = {}
        equal_starts = [op.seed_start for op in self.ops if isinstance(op, Equal)]
        positions = [position for position, op in enumerate(self.ops) if isinstance(op, Equal)]
        for index, ours in self.seed.indentations().items():
            partner = self.seed_to_variant[index]
            theirs = self.variant.indentation(partner) if partner >= 0 else None
            if theirs is not None and theirs != ours:
                equal = bisect_right(equal_starts, index) - 1
                apart[partner] = (theirs, ours, self._governor[positions[equal]])
        return apart

    @classmethod
    def of(cls, seed: bytes, variant: bytes, grammar: Grammar | None = None) -> Alignment:
        return cls(tokenize(seed, grammar), tokenize(variant, grammar))
