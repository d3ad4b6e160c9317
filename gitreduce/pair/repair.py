"""Putting back what a reduced variant's lifted seed needs: the fewest deleted subtrees.

Where the bug fires whatever else is wrong with the program (a crash before
type checking), the variant's tree sweeps delete freely while the seed must
still pass its test (compile cleanly): the seed lifted to the very first
accepted variant is refused. Reducing both programs together from there costs
several tests per token, since most deletions break the seed. The variant's
own reduction is still the best guide to what the bug needs; what the seed
needs on top of it is usually a few of the deleted pieces: a declaration a
kept line uses, a field, a statement's terminator.

`fewest_needed` finds those pieces among the subtrees of the original variant
the reduction deleted (`deleted_units`), by a search for the shortest prefix
of the pieces that holds, whose last piece is then needed, once per piece
needed (the cost QuickXplain has for minimal conflicts, Junker 2004): a few
candidates per piece needed, where PPR's sweeps try every node of both
programs.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Generic, Protocol, TypeVar

import tree_sitter

from gitreduce.lang.grammars import Grammar
from gitreduce.pair.lift import Margins, Provenance
from gitreduce.pair.token_tree import TokenTree
from gitreduce.pair.tokens import TokenList, join, tokenize

# Original variant token indices, ascending: what one piece puts back
Unit = tuple[int, ...]
Item = TypeVar("Item")


@dataclass(frozen=True)
class Piece:
    """Deleted tokens that come back together: a whole subtree (`node`), or the deleted
    leaves of one node (`node` None)."""

    indices: Unit
    node: tree_sitter.Node | None = field(default=None, compare=False)


def deleted_units(tree: TokenTree, kept: set[int]) -> list[Piece]:
    """The deleted parts of the original variant as restorable pieces, in text order but
    for a node's deleted leaves, which come after the pieces inside the node.

    Each whole subtree the reduction deleted under a node it kept part of is
    one piece; that node's deleted leaves (brackets, separators, keywords a
    hoist left behind) are one more, since they rarely come back one by one.

    The search asks about prefixes of this order, and a restored piece may
    need others or rule them out: a hoist kept `Cond<65535>` of
    `<Cond<{ MAX_LENGTH <= 65535 }, u16, u32> as Ret>::R`, and the seed needs
    the `bool` back. In text order the wrapper's leaves (`<`, then `as Ret`,
    `::R`) come before the block, so every prefix that held rebuilt the
    projection, and with it the trait and its impls; after the pieces inside
    the node, the block is put back into the kept `Cond<...>` first.
    """
    # (where it goes, 1 for a node's leaves, minus their node's depth): a node's leaves go
    # after its last token's position, behind the pieces inside it and deeper nodes' leaves
    placed: list[tuple[tuple[int, int, int], Piece]] = []
    pending = [(tree.tree.root_node, 0)]
    while pending:
        node, depth = pending.pop()
        loose: list[int] = []
        for child in node.children:
            indices = tree.indices(child)
            if not indices:
                continue
            if any(index in kept for index in indices):
                pending.append((child, depth + 1))
            elif child.child_count == 0:
                loose += indices
            else:
                placed.append(((indices[0], 0, 0), Piece(tuple(indices), child)))
        if loose:
            placed.append(((tree.indices(node)[-1], 1, -depth), Piece(tuple(loose))))
    placed.sort(key=lambda entry: (entry[0], entry[1].indices))
    return [piece for _, piece in placed]


def split(tree: TokenTree, piece: Piece) -> tuple[Unit, list[Piece]]:
    """A subtree piece as its node's own leaves and one piece per child subtree."""
    assert piece.node is not None
    leaves: list[int] = []
    children: list[Piece] = []
    for child in piece.node.children:
        indices = tree.indices(child)
        if not indices:
            continue
        if child.child_count == 0:
            leaves += indices
        else:
            children.append(Piece(tuple(indices), child))
    return tuple(leaves), children


class Restoration:
    """A reduced variant with pieces of the original put back.

    Only the original's tokens are rendered: a token the reduction wrote (a
    stock phrase standing for a deleted body, half of a split `>>`) stood for
    something a piece may bring back, and the two together rarely parse. Without
    them the restoration of every piece is the original variant itself.
    """

    def __init__(self, variant: TokenList, reduced: TokenList, origins: list[int]) -> None:
        """`origins`: per token of `reduced`, the variant token it is (-1: written)."""
        self._variant = variant
        self._texts = variant.texts()
        self.kept = {origin for origin in origins if origin >= 0}
        # kept lines stay where the reduction moved them, restored ones move with them
        self._margins = Margins(variant, reduced, origins)
        self._lines = variant.indentations()
        self._line_starts = sorted(self._lines)

    def text(self, units: Iterable[Unit]) -> bytes:
        """The variant with `units` restored: what its syntax is checked on, before the
        tokens of a text worth asking about are matched with the original's."""
        return self._rendered(sorted(self.kept.union(*units)))[0]

    def _rendered(self, included: list[int]) -> tuple[bytes, Provenance]:
        """The text of the original tokens `included`, and where its bytes came from."""
        variant = self._variant
        # each run of consecutive tokens: its parts, the original's bytes from an offset or
        # (None) a line's indentation moved
        runs: list[list[tuple[bytes, int | None]]] = []
        run_start = 0
        for at in range(1, len(included) + 1):
            if at == len(included) or included[at] != included[at - 1] + 1:
                runs.append(self._run(included[run_start], included[at - 1]))
                run_start = at
        runs.append([(variant.text[variant.tail :], variant.tail)])
        chunks = [b"".join(part for part, _ in run) for run in runs]
        text = join(chunks)
        # `join` puts a space before a chunk only where two tokens would merge
        segments = []
        position = 0
        for chunk, run in zip(chunks, runs, strict=True):
            if text[position : position + len(chunk)] != chunk:
                position += 1
            for part, origin in run:
                if origin is not None:
                    segments.append((position, position + len(part), origin))
                position += len(part)
        return text, Provenance(segments)

    def _run(self, first: int, last: int) -> list[tuple[bytes, int | None]]:
        """Original tokens `first` to `last` with their trivia, as parts: the original's
        bytes from an offset, and between them the lines' indentation where it moved."""
        variant = self._variant
        text = variant.text
        parts: list[tuple[bytes, int | None]] = []
        copied = variant.leads[first]
        starts = self._line_starts
        for at in range(bisect_left(starts, first), bisect_right(starts, last)):
            index = starts[at]
            white = self._lines[index]
            moved = self._margins.moved(index)
            now = white if moved is None else moved(index, white)
            if now == white:
                continue
            cut = variant.starts[index] - len(white)
            parts += [(text[copied:cut], copied), (now, None)]
            copied = variant.starts[index]
        parts.append((text[copied : variant.ends[last]], copied))
        return parts

    def render(self, units: Iterable[Unit], grammar: Grammar | None) -> tuple[TokenList, list[int]]:
        """The variant with `units` restored, and each of its tokens' original index: by
        position, or where joined runs lex differently (`>` `>` read as `>>`, perhaps
        with a `>>` read as `>` `>` further on, so the count may even agree), by the
        bytes each token came from."""
        included = sorted(self.kept.union(*units))
        text, provenance = self._rendered(included)
        tokens = tokenize(text, grammar)
        if tokens.texts() != [self._texts[index] for index in included]:
            return tokens, provenance.origins(self._variant, tokens)
        return tokens, included


@dataclass(frozen=True)
class Ahead(Generic[Item]):
    """What the search asks next, known before the answer to its current question: the
    sets if none of them holds (`if_none`), and if the i-th is the first that does
    (`if_held`); empty once it would stop. Jobs the question leaves idle may test these
    for the cache; the questions and the result stay those of one job."""

    if_none: Callable[[], list[list[Item]]]
    if_held: Callable[[int], list[list[Item]]]


class FirstHolding(Protocol[Item]):
    """Asks which of several sets holds first (in order), or None: one batch of candidates,
    so with several jobs the sets are tested at once."""

    def __call__(self, sets: list[list[Item]], ahead: Ahead[Item] | None = None) -> int | None: ...


# Whether a set could hold at all, known without a test (its programs parse)
Testable = Callable[[list[Item]], bool]
# Prefix lengths looked at from each probe on for one a test can decide
_SCANNED = 4


@dataclass(frozen=True)
class _Range(Generic[Item]):
    """Where the search for the next needed item stands: `chosen` with `rest[:high]` holds
    (found or assumed); with `rest[:low]` it was found not to, if `low_refused`."""

    chosen: tuple[Item, ...]
    rest: tuple[Item, ...]
    low: int
    high: int
    low_refused: bool

    @staticmethod
    def starting(chosen: tuple[Item, ...], rest: tuple[Item, ...]) -> _Range[Item]:
        return _Range(chosen, rest, 0, len(rest), False)

    @property
    def narrowed(self) -> bool:
        """Whether `rest[high - 1]` is needed given the chosen and the items before it."""
        return self.low_refused and self.high - self.low <= 1

    def with_needed(self) -> _Range[Item] | None:
        """The search for the next item once `rest[high - 1]` is chosen; None when none is
        left to search."""
        if self.high == 0:
            return None
        needed = self.rest[self.high - 1]
        return _Range.starting((*self.chosen, needed), self.rest[: self.high - 1])

    def question(self, probes: int, testable: Testable[Item] | None) -> tuple[list[int], list[int]]:
        """The prefix lengths to ask about, and those refused untested."""
        step = max(1, (self.high - self.low) // (probes + 1))
        targets = list(range(self.low + step, self.high, step))[:probes]
        probed, untestable = _testable_points(
            list(self.chosen), list(self.rest), targets, self.high, testable
        )
        return (probed if self.low_refused else [self.low, *probed]), untestable

    def sets(self, points: list[int]) -> list[list[Item]]:
        return [[*self.chosen, *self.rest[:point]] for point in points]

    def answered(
        self, points: list[int], untestable: list[int], found: int | None
    ) -> _Range[Item] | None:
        """The range once `found` answered the question at `points`; None when the chosen
        alone hold (the search is over)."""
        if found is None:
            return replace(self, low=max([self.low, *points, *untestable]), low_refused=True)
        if points[found] == 0:
            return None
        narrowed = replace(self, high=points[found])
        refused = [point for point in (*points[:found], *untestable) if point < narrowed.high]
        if refused:
            narrowed = replace(narrowed, low=max(refused), low_refused=True)
        return narrowed


def fewest_needed(
    items: Sequence[Item],
    first_holding: FirstHolding[Item],
    *,
    most: int,
    probes: int = 2,
    testable: Testable[Item] | None = None,
) -> list[Item] | None:
    """The last set of `items` found to hold: at best one whose every item was needed
    given the ones before it; None when no set held before `most` were chosen.

    Each item found needed is the last of the shortest prefix of the rest that
    holds with the ones chosen: a search over prefix lengths that asks about
    `probes` of them at once (and about the chosen ones alone first), cutting
    the range into `probes + 1`. The number of probes is fixed, not the number
    of jobs, so the sets asked about, and the result, do not depend on jobs;
    each question comes with the sets asked next on either answer (`Ahead`),
    for jobs it leaves idle.
    `holds` of all items is assumed (the program as it is) and never asked.
    Every set asked about is a subset of the last one that held, so the asker
    may adopt each success as it comes.

    A prefix that is not `testable` (most cut a construct in two) is refused
    without asking, and the probe moves on to the next longer prefix, a few
    at most, so the sets asked at once are ones a test decides: with the
    untestable ones in the batch, each batch was mostly one test, run alone.
    Whether a set is testable is a syntax check, the same with any number of
    jobs.
    """
    searching: _Range[Item] | None = _Range.starting((), tuple(items))
    held: list[Item] | None = None

    def asked_next(after: _Range[Item] | None) -> list[list[Item]]:
        """The sets the search asks about from `after` on; none once it stops."""
        while after is not None:
            if after.narrowed:
                after = after.with_needed() if len(after.chosen) + 1 < most else None
                continue
            points, untestable = after.question(probes, testable)
            if points:
                return after.sets(points)
            after = after.answered(points, untestable, None)  # refused without a question
        return []

    def announced(asking: _Range[Item], points: list[int], untestable: list[int]) -> Ahead[Item]:
        return Ahead(
            lambda: asked_next(asking.answered(points, untestable, None)),
            lambda found: asked_next(asking.answered(points, untestable, found)),
        )

    while searching is not None and len(searching.chosen) < most:
        while not searching.narrowed:
            points, untestable = searching.question(probes, testable)
            sets = searching.sets(points)
            found = first_holding(sets, announced(searching, points, untestable)) if sets else None
            answered = searching.answered(points, untestable, found)
            if answered is None:
                return list(searching.chosen)
            if found is not None:
                held = sets[found]
            searching = answered
        searching = searching.with_needed()
    return held


def _testable_points(
    chosen: list[Item],
    rest: list[Item],
    targets: list[int],
    high: int,
    testable: Testable[Item] | None,
) -> tuple[list[int], list[int]]:
    """The prefix lengths to ask about, each the first testable one from a target on
    (a few looked at, never reaching the next target), and those refused untested."""
    points: list[int] = []
    untestable: list[int] = []
    for target, limit in zip(targets, [*targets[1:], high][: len(targets)], strict=True):
        end = min(limit, target + _SCANNED)
        point = target
        while point < end and testable is not None and not testable(chosen + rest[:point]):
            untestable.append(point)
            point += 1
        if point < end:
            points.append(point)
    return points, untestable


def restore_fewest(
    tree: TokenTree,
    units: list[Piece],
    first_holding: FirstHolding[Unit],
    *,
    most: int,
    smallest_split: int,
    testable: Testable[Unit] | None = None,
) -> bool:
    """Whether some restoration held: first the fewest `units` the pair needs, then
    inside each restored subtree of `smallest_split` tokens or more, its own leaves
    and the fewest of its children, and so on down (hierarchical delta debugging,
    each level by `fewest_needed`; `testable`: see there).

    Where no set of a subtree's children holds and the search did not give up
    (`most`), every child is needed (the asker refuses the set the pair already
    has: no smaller), and the children are split all the same. Left whole, such a
    subtree kept all it held:
    on a held-out Rust pair (the rustc case's seed, its `Table::with_max_len` call
    given other type arguments in the variant, E0308), a 1,119-token `impl` whose type
    parameters, type and body are all needed came back with every method, the
    seed needing one; split, the pair left the repair at 358 tokens instead of
    1,377, and took 75 s at one job instead of 84 s (the same result).
    """

    def holds_with(fixed: list[Unit]) -> FirstHolding[Piece]:
        def units(sets: list[list[Piece]]) -> list[list[Unit]]:
            return [fixed + [piece.indices for piece in pieces] for pieces in sets]

        def holding(sets: list[list[Piece]], ahead: Ahead[Piece] | None = None) -> int | None:
            if ahead is None:
                return first_holding(units(sets))
            mapped = Ahead(
                lambda: units(ahead.if_none()), lambda found: units(ahead.if_held(found))
            )
            return first_holding(units(sets), mapped)

        return holding

    def testable_with(fixed: list[Unit]) -> Testable[Piece] | None:
        if testable is None:
            return None
        return lambda pieces: testable(fixed + [piece.indices for piece in pieces])

    found = fewest_needed(units, holds_with([]), most=most, testable=testable_with([]))
    if found is None:
        return False
    restored: list[Unit] = [piece.indices for piece in found]
    pending = [piece for piece in found if piece.node is not None]
    while pending:
        piece = pending.pop(0)
        if len(piece.indices) < smallest_split:
            continue
        leaves, children = split(tree, piece)
        others = [unit for unit in restored if unit != piece.indices]
        fixed = [*others, leaves]
        kept = fewest_needed(children, holds_with(fixed), most=most, testable=testable_with(fixed))
        if kept is None:
            if len(children) > most:  # the search gave up: past this many, PPR costs less
                continue
            kept = children  # every child needed: the pair it has is no smaller
        restored = [*fixed, *(child.indices for child in kept)]
        pending += kept
    return True
