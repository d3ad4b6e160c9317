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
survive. Tokens the reduction wrote (a stock phrase) stay unless they fall
inside a change, where the seed's version wins. The lifted seed is only a
candidate: the seed's test decides whether it is one.

Which reduced token is which variant token is known, not guessed: every
accepted candidate is its base with a few byte ranges replaced
(`edits.Rendered`), so `Provenance` follows the variant's bytes through the
reduction at the cost of a few segments per accepted candidate. Diffing the
programs instead costs a Myers run, seconds on 20,000 tokens with thousands
deleted, and may match a kept `;` with the wrong one. For the same reason the
lifted pair's token diff is built by the lift, not searched (see `_Output`).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import defaultdict
from collections.abc import Callable, Iterable

from gitreduce.lang.grammars import Grammar
from gitreduce.lang.syntax import Parsed
from gitreduce.pair.alignment import Alignment, Hunk, diff_ops
from gitreduce.pair.tokens import TokenList, join, tokenize

# (start, end, origin): text[start:end] is the original variant's bytes from `origin` on
Segment = tuple[int, int, int]


# Hoisted texts looked at, per replacement, for one from a change of the pair
_MOST_PLACES = 64


class Provenance:
    """Which bytes of a reduced variant are the original variant's, and from where.

    `changed`: whether the original's byte at an offset belongs to a change of the
    pair, to tell which of several equal texts a hoist kept (see `after`).
    """

    def __init__(
        self, segments: list[Segment], changed: Callable[[int], bool] | None = None
    ) -> None:
        self.segments = segments
        self._starts = [segment[0] for segment in segments]
        self._changed = changed

    @classmethod
    def original(cls, text: bytes, changed: Callable[[int], bool] | None = None) -> Provenance:
        return cls([(0, len(text), 0)] if text else [], changed)

    def after(self, base: bytes, splices: Iterable[tuple[int, int, bytes]]) -> Provenance:
        """The provenance of `base` (whose provenance this is) with `splices` written:
        (start, end, replacement) in `base`'s offsets, ordered. A replacement found
        inside the range it replaces (a hoisted child) keeps its bytes' origin."""
        kept: list[tuple[int, int, int]] = []  # (base start, base end, new start)
        position = written = 0
        for start, end, replacement in splices:
            if start > position:
                kept.append((position, start, written))
                written += start - position
            inner = self._hoisted(base, replacement, start, end) if replacement.strip() else -1
            if inner >= 0:
                kept.append((inner, inner + len(replacement), written))
            written += len(replacement)
            position = end
        kept.append((position, len(base), written))
        segments: list[Segment] = []
        own = self.segments
        first = 0
        for kept_start, kept_end, new_start in kept:
            while first < len(own) and own[first][1] <= kept_start:
                first += 1
            at = first
            while at < len(own) and own[at][0] < kept_end:
                start, end, origin = own[at]
                low, high = max(start, kept_start), min(end, kept_end)
                if low < high:
                    shift = new_start - kept_start
                    segments.append((low + shift, high + shift, origin + low - start))
                at += 1
        return Provenance(segments, self._changed)

    def _hoisted(self, base: bytes, replacement: bytes, start: int, end: int) -> int:
        """Where in `base[start:end]` the hoisted `replacement` came from; -1 if nowhere.

        A hoist offers each distinct text once, so where the range holds it several
        times (`break;` in a switch and the `break;` a fuzzer put in a function) the
        candidate does not say which one it kept. The first one from a change of the
        pair is taken, else the first: the variant's reduction keeps what its failure
        needs, and that is its changes; taken for the unchanged one, the lift put the
        `break;` into the seed too, and the seed's test refused it."""
        first = base.find(replacement, start, end)
        if self._changed is None:
            return first
        at, looked = first, 0
        while at >= 0 and looked < _MOST_PLACES:
            origin = self._origin(at)
            if origin is not None and self._changed(origin):
                return at
            at, looked = base.find(replacement, at + 1, end), looked + 1
        return first

    def _origin(self, offset: int) -> int | None:
        """The original's offset of this text's byte at `offset`; None for a written one."""
        at = bisect_right(self._starts, offset) - 1
        if at < 0 or self.segments[at][1] <= offset:
            return None
        segment_start, _, origin = self.segments[at]
        return origin + offset - segment_start

    def origins(self, variant: TokenList, reduced: TokenList) -> list[int]:
        """Per token of `reduced`, the variant token it is (same bytes, same place in the
        original), or -1 for one the reduction wrote.

        Segment by segment: where the reduced tokens inside one are the variant's at the
        same place, token for token (nearly all of them: a reduction deletes whole
        tokens), they are matched by comparing two shifted lists, not one token at a
        time (8,600 JavaScript tokens: 0.6 ms instead of 3)."""
        origins = [-1] * len(reduced)
        starts, ends = reduced.starts, reduced.ends
        token_at: dict[int, int] | None = None
        for segment_start, segment_end, origin in self.segments:
            first = bisect_left(starts, segment_start)
            last = bisect_left(starts, segment_end)
            while last > first and ends[last - 1] > segment_end:
                last -= 1  # a token running past the segment: the reduction wrote it
            if first == last:
                continue
            shift = origin - segment_start
            partner = bisect_left(variant.starts, starts[first] + shift)
            end = partner + last - first
            if variant.starts[partner:end] == [start + shift for start in starts[first:last]] and (
                variant.ends[partner:end] == [stop + shift for stop in ends[first:last]]
            ):
                origins[first:last] = range(partner, end)
                continue
            if token_at is None:
                token_at = {start: index for index, start in enumerate(variant.starts)}
            for index in range(first, last):
                match = token_at.get(starts[index] + shift, -1)
                if match >= 0 and variant.ends[match] == ends[index] + shift:
                    origins[index] = match
        return origins


def diffed_origins(variant: TokenList, reduced: TokenList) -> list[int]:
    """`Provenance.origins` by a token diff, for a reduced text of unknown making."""
    return Alignment(variant, reduced).variant_to_seed


# The indentation token i's line goes to, given the one it has
Moved = Callable[[int, bytes], bytes]


def _shifted(tokens: TokenList, index: int, moved: Moved) -> bytes:
    """Token `index` with its trivia, its line's indentation moved if it starts one."""
    text = tokens.text
    trivia = text[tokens.leads[index] : tokens.starts[index]]
    white = tokens.indentation(index)
    if white is not None:
        trivia = trivia[: len(trivia) - len(white)] + moved(index, white)
    return trivia + text[tokens.starts[index] : tokens.ends[index]]


class Margins:
    """Where the reduction moved lines sideways, read off the kept variant tokens that
    start a line before and after it.

    A body hoisted out of the statement around it goes back to that statement's
    column (in Python it must: `passes/tree.py`), while a seed line the lift puts
    among its lines kept the column it had in the original: in Python an
    IndentationError, so the lifted seed was refused and the variant's sweeps
    stopped there (on a 12,000-token Python pair, at 2,900 tokens where the variant
    alone went on to one). So a line put back moves as its kept neighbours moved.
    """

    def __init__(self, variant: TokenList, reduced: TokenList, origins: list[int]) -> None:
        """`origins`: per token of `reduced`, the variant token it is (-1: written)."""
        moves = []  # (variant index, its indentation in the original, in `reduced`)
        for now, after in reduced.indentations().items():
            origin = origins[now]
            before = variant.indentation(origin) if origin >= 0 else None
            if before is not None:
                moves.append((origin, before, after))
        moves.sort()
        self._at = [origin for origin, _, _ in moves]  # kept tokens that start a line
        self._moves = [(before, after) for _, before, after in moves]

    def moved(self, position: int) -> Moved | None:
        """How lines put in at variant position `position` move: as the nearest kept line
        at or after it, or the one before, whichever's indentation theirs extends (the
        innermost block they share), the one after where both fit; None where neither
        moved. A kept line's own is where the reduction put it."""
        after = bisect_left(self._at, position)
        moves = [self._moves[at] for at in (after, after - 1) if 0 <= at < len(self._moves)]
        if all(before == now for before, now in moves):
            return None

        def moved(_: int, white: bytes) -> bytes:
            fitting = [move for move in moves if white.startswith(move[0])]
            if not fitting:
                return white
            before, now = max(fitting, key=lambda move: len(move[0]))
            return now + white[len(before) :]

        return moved


def _alike(now: bytes, theirs: bytes, ours: bytes) -> bytes:
    """The indentation of a seed line whose variant counterpart had `theirs` in the
    original and has `now` in the reduction, where the seed's had `ours`: `now`, as much
    deeper or shallower as `ours` was than `theirs` (white space of one kind assumed)."""
    if ours.startswith(theirs):
        return now + ours[len(theirs) :]
    if theirs.startswith(ours):
        return now[: max(0, len(now) - (len(theirs) - len(ours)))]
    return now


class _Output:
    """The lifted seed's tokens, each with the trivia before it; where a joint needs
    `join`'s check (only between tokens that were not neighbours in one source); and
    the token diff of the lifted seed and the reduced variant.

    The diff is built, not searched: the reduced variant's tokens the lift
    takes are common to both, everything between two of them is one side's
    own, and only those stretches, one change each, are diffed.
    """

    def __init__(self, reduced: TokenList) -> None:
        self.chunks: list[bytes] = []
        self.gaps: list[bool] = []
        self.tokens = 0  # the lifted seed's
        self.token_diff: list[tuple[int, int]] = []
        self._reduced = reduced
        self._reduced_texts = reduced.texts()
        self._after: tuple[int, int] = (-1, -1)  # (source, index) the next neighbour would be
        self._own: list[bytes] = []  # seed tokens taken since the last common one
        self._common = -1  # the reduced variant's last common token

    def take(self, tokens: TokenList, start: int, end: int, moved: Moved | None = None) -> None:
        """Tokens `start` to `end` with their trivia; `moved`: the indentation each of them
        that starts a line goes to."""
        if start >= end:
            return
        text, starts, leads, ends = tokens.text, tokens.starts, tokens.leads, tokens.ends
        self.gaps.append(self._after != (id(tokens), start))
        if moved is None:
            self.chunks.append(text[leads[start] : ends[end - 1]])
        else:
            self.chunks.append(
                b"".join(_shifted(tokens, index, moved) for index in range(start, end))
            )
        self._after = (id(tokens), end)
        self.tokens += end - start
        if tokens is not self._reduced:
            self._own += [text[starts[index] : ends[index]] for index in range(start, end)]
            return
        changes = len(self.token_diff)
        self._close(start)
        diff = self.token_diff
        if len(diff) == changes and diff and diff[-1][0] == 0:
            diff[-1] = (0, diff[-1][1] + end - start)  # right after the last common run
        else:
            diff.append((0, end - start))
        self._common = end - 1

    def _close(self, common: int) -> None:
        """The change between the last common token and `common` (the reduced variant's)."""
        theirs = self._reduced_texts[self._common + 1 : common]
        if self._own or theirs:
            self.token_diff += diff_ops(self._own, theirs)
        self._own = []

    def finish(self) -> None:
        self._close(len(self._reduced))


class Lifted:
    """A lifted seed, and its alignment with the reduced variant."""

    def __init__(self, text: bytes, out: _Output) -> None:
        self.text = text
        self._tokens = out.tokens
        self._token_diff = out.token_diff

    def alignment(
        self, reduced: TokenList, grammar: Grammar | None, parsed: Parsed | None = None
    ) -> Alignment:
        """Aligned by the diff the lift built when the lifted text lexes into as many tokens
        as it was built from and every token the diff calls common is (a string's
        inner white space may lex differently in its new place); else diffed afresh.
        `parsed`: the full parse of the lifted text and its tokens, if known
        (`Syntax.reparsed`)."""
        seed = tokenize(self.text, grammar, parsed=parsed)
        if len(seed) == self._tokens and self._commons_agree(seed.texts(), reduced.texts()):
            return Alignment(seed, reduced, self._token_diff)
        return Alignment(seed, reduced)

    def _commons_agree(self, seed: list[bytes], reduced: list[bytes]) -> bool:
        seed_at = reduced_at = 0
        for change, count in self._token_diff:
            if change == 0:
                if seed[seed_at : seed_at + count] != reduced[reduced_at : reduced_at + count]:
                    return False
                seed_at += count
                reduced_at += count
            elif change < 0:
                seed_at += count
            else:
                reduced_at += count
        return True


def lift(pair: Alignment, reduced: TokenList, origins: list[int]) -> Lifted:
    """The seed for `reduced`, a reduction of `pair.variant` whose token j is variant token
    `origins[j]` (-1: written by the reduction); see the module's docstring."""
    variant, seed = pair.variant, pair.seed
    count = len(variant)
    kept = [-1] * count
    introduced: dict[int, list[int]] = defaultdict(list)  # variant position -> written tokens
    pending: list[int] = []
    for index, origin in enumerate(origins):
        if origin < 0:
            pending.append(index)
            continue
        kept[origin] = index
        if pending:
            introduced[origin] += pending
            pending = []
    introduced[count] += pending

    def survives(index: int) -> bool:
        return index < 0 or index >= count or kept[index] >= 0

    insertions: dict[int, list[Hunk]] = defaultdict(list)  # seed tokens at a variant position
    for hunk in pair.hunks:
        if hunk.variant_start == hunk.variant_end:
            insertions[hunk.variant_start].append(hunk)
    margins = Margins(variant, reduced, origins)
    apart = pair.indented_apart
    apart_at = sorted(apart)

    def seed_column(now: int, white: bytes) -> bytes:
        """A kept common line at the seed's column, moved as far as the reduction moved
        it, where the change that re-indented it comes back as the seed's version (one
        the reduction took away took its indentation along: a hoisted `if`)."""
        columns = apart.get(origins[now])
        if columns is None or not seeds_version(pair.hunks[columns[2]]):
            return white
        return _alike(white, columns[0], columns[1])

    def seeds_version(hunk: Hunk) -> bool:
        """Whether the lifted seed holds the seed's side of `hunk`."""
        if hunk.variant_start == hunk.variant_end:
            return survives(hunk.variant_start - 1) and survives(hunk.variant_start)
        return any(kept[i] >= 0 for i in range(hunk.variant_start, hunk.variant_end))

    out = _Output(reduced)
    variant_hunk = pair.variant_hunk
    index = 0
    while True:
        for hunk in insertions.get(index, ()):
            if survives(index - 1) and survives(index):
                out.take(seed, hunk.seed_start, hunk.seed_end, margins.moved(index))
        changed = variant_hunk[index] if index < count else -1
        if changed < 0:
            for written in introduced.get(index, ()):
                out.take(reduced, written, written + 1)
        if index == count:
            break
        if changed >= 0:
            hunk = pair.hunks[changed]
            if index == hunk.variant_start and any(
                kept[i] >= 0 for i in range(hunk.variant_start, hunk.variant_end)
            ):
                out.take(seed, hunk.seed_start, hunk.seed_end, margins.moved(index))
        elif kept[index] >= 0:
            # the run of kept tokens from here that nothing else comes between, at once
            end = index + 1
            while (
                end < count
                and kept[end] == kept[end - 1] + 1
                and variant_hunk[end] < 0
                and end not in insertions
                and end not in introduced
            ):
                end += 1
            between = bisect_left(apart_at, index)
            apart_here = between < len(apart_at) and apart_at[between] < end
            out.take(reduced, kept[index], kept[end - 1] + 1, seed_column if apart_here else None)
            index = end
            continue
        index += 1
    out.finish()
    return Lifted(join(out.chunks, out.gaps) + reduced.text[reduced.tail :], out)
