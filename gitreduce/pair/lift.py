"""The seed's counterpart of a reduced variant: the variant's reduction carried over.

A reduction of the variant alone costs what single-program reduction costs:
one test per candidate, the variant's. Most of what it deletes is code both
programs share, which PPR would delete from both, testing both, while every
test still runs on the large programs. `lift` turns such a reduced variant
back into a seed: the tokens the reduction kept, with the seed's version put
back at every change of the original pair whose variant tokens survive.

    original pair:  seed  S = a b X c d      variant V = a b Y c d   (X -> Y)
    reduced variant:                               R = b Y d
    lifted seed:                                       b X d

A change whose variant tokens all went is gone from both programs; a change
the variant made by deleting seed tokens comes back where both neighbours
survive. Tokens the reduction introduced (a stock phrase, a hoisted child)
stay unless they fall inside a change, where the seed's version wins. The
lifted seed is only a candidate: the seed's test decides whether it is one.
"""

from __future__ import annotations

from collections import defaultdict

from gitreduce.pair.alignment import Alignment, Hunk
from gitreduce.pair.tokens import TokenList, join


class _Output:
    """The lifted seed's tokens, each with the trivia before it, and where a joint needs
    `join`'s check: only between tokens that were not neighbours in one source."""

    def __init__(self) -> None:
        self.chunks: list[bytes] = []
        self.gaps: list[bool] = []
        self._after: tuple[int, int] = (-1, -1)  # (source, index) the next neighbour would be

    def take(self, tokens: TokenList, start: int, end: int) -> None:
        if start >= end:
            return
        text, leads, ends = tokens.text, tokens.leads, tokens.ends
        self.gaps.append(self._after != (id(tokens), start))
        self.chunks.append(text[leads[start] : ends[end - 1]])
        self._after = (id(tokens), end)


def lift(pair: Alignment, reduced: TokenList) -> bytes:
    """The seed for `reduced`, a reduction of `pair.variant` (see the module's docstring)."""
    variant, seed = pair.variant, pair.seed
    reduction = Alignment(variant, reduced)
    kept = reduction.seed_to_variant
    count = len(variant)

    def survives(index: int) -> bool:
        return index < 0 or index >= count or kept[index] >= 0

    insertions: dict[int, list[Hunk]] = defaultdict(list)  # seed tokens at a variant position
    for hunk in pair.hunks:
        if hunk.variant_start == hunk.variant_end:
            insertions[hunk.variant_start].append(hunk)
    introduced: dict[int, list[Hunk]] = defaultdict(list)  # the reduction's own tokens
    for hunk in reduction.hunks:
        if hunk.variant_start < hunk.variant_end:
            introduced[hunk.seed_start].append(hunk)
    out = _Output()
    for index in range(count + 1):
        for hunk in insertions.get(index, ()):
            if survives(index - 1) and survives(index):
                out.take(seed, hunk.seed_start, hunk.seed_end)
        changed = pair.variant_hunk[index] if index < count else -1
        if changed < 0:
            for hunk in introduced.get(index, ()):
                out.take(reduced, hunk.variant_start, hunk.variant_end)
        if index == count:
            break
        if changed >= 0:
            hunk = pair.hunks[changed]
            if index == hunk.variant_start and any(
                kept[i] >= 0 for i in range(hunk.variant_start, hunk.variant_end)
            ):
                out.take(seed, hunk.seed_start, hunk.seed_end)
        elif kept[index] >= 0:
            out.take(reduced, kept[index], kept[index] + 1)
    return join(out.chunks, out.gaps) + reduced.text[reduced.tail :]
