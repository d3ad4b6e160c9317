"""Pairwise program reduction (PPR, FSE'23, Algorithms 1-4) on a `PairState`.

The pair is one token alignment of seed and variant plus what survives of it
(see `pair.py`), so every reducer is a choice of token deletions or hunk
subsets, and every candidate renders to a seed and a variant that are judged
together: the seed must stay good (psi_s) and the variant bad the same way
(psi_v). The loop runs MinTdiff, MinLdiff and MinCommonality in that order to
a fixpoint: differences before commonality, tree differences before list
differences, as the paper's RQ4 found best. The first round starts by making
both programs small while their tests are slow: the variant's tree sweeps
judged on the variant alone, the seed lifted to the result (`variant_first`,
`pair/lift.py`), then a coarse commonality pass (`pair/coarse.py`): whole
declarations and statements both programs hold identically go, the difference
itself left to the passes after it.

Nodes are addressed by the original seed token indices they cover, which no
deletion ever shifts, so pending work survives every accepted candidate.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from gitreduce.core import edits, tickets
from gitreduce.core.current import Current
from gitreduce.core.ddmin import Plan, Subset, ddmin
from gitreduce.core.pass_runner import Pass, run_pass
from gitreduce.lang.grammars import Grammar
from gitreduce.lang.syntax import Syntax
from gitreduce.pair.alignment import SEED, VARIANT, Alignment
from gitreduce.pair.changed_view import reduce_changed_subtrees
from gitreduce.pair.coarse import coarse_commonality
from gitreduce.pair.current import PairCandidate, PairCurrent, measure
from gitreduce.pair.lift import Provenance, diffed_origins, lift
from gitreduce.pair.repair import Ahead, Restoration, Unit, deleted_units, restore_fewest
from gitreduce.pair.seed_view import SeedCurrent
from gitreduce.pair.state import PairState
from gitreduce.pair.token_tree import TokenTree, parse_tokens, seed_tree
from gitreduce.pair.tokens import TokenList, tokenize
from gitreduce.pair.treediff import Operation, Replacement, TreeDiff, Update, diff_trees
from gitreduce.passes.schedule import Program, finish_program, reduce_program, sweep


def _remove_seed(state: PairState, indices: list[int]) -> PairState:
    return state.without_seed_tokens(indices)


def _remove_variant(state: PairState, indices: list[int]) -> PairState:
    return state.without_variant_tokens(indices)


def _maximal_subtrees(tree: TokenTree, wanted: Callable[[int], bool]) -> list[list[int]]:
    """Token-index groups of the largest subtrees all of whose tokens are `wanted`."""
    groups: list[list[int]] = []
    pending = [tree.tree.root_node]
    while pending:
        node = pending.pop()
        indices = tree.indices(node)
        if not indices:
            continue
        if all(wanted(i) for i in indices):
            groups.append(indices)
        elif node.child_count:
            pending.extend(reversed(node.children))
    groups.sort(key=lambda group: group[0])
    return groups


def min_tdiff(current: PairCurrent, *, hoist: bool = True) -> bool:
    """Algorithm 2: delete the subtrees the seed alone has (under both properties), then
    those the variant alone has, token by token inside what stays; then (with `hoist`)
    MinSubtree, Perses with hoisting, in each side's own subtrees; then undo Δ_T's
    replacements one by one."""
    syntax = current.syntax
    progress = False
    alignment = current.state.alignment
    if syntax is not None:
        tree = seed_tree(syntax, current.state)
        units = _maximal_subtrees(tree, lambda i: alignment.seed_hunk[i] >= 0)
        progress |= current.ddmin_deletions(units, _remove_seed)
        order = current.state.variant_order()
        variant_originals = [index if side == VARIANT else -1 - index for side, index in order]
        tree = parse_tokens(
            syntax,
            current.state.variant_text(),
            variant_originals,
            current.state.variant_token_texts,
        )
        units = _maximal_subtrees(tree, lambda i: i >= 0 and alignment.variant_hunk[i] >= 0)
        progress |= current.ddmin_deletions(units, _remove_variant)
    # Inside the surviving subtrees, token by token (the syntax check keeps it cheap).
    seed_only = [[i] for i in current.state.seed_kept_indices() if alignment.seed_hunk[i] >= 0]
    progress |= current.ddmin_deletions(seed_only, _remove_seed, try_empty=False)
    variant_only = [
        [index]
        for side, index in current.state.variant_order()
        if side == VARIANT and alignment.variant_hunk[index] >= 0
    ]
    progress |= current.ddmin_deletions(variant_only, _remove_variant, try_empty=False)
    if syntax is not None and hoist:
        progress |= reduce_changed_subtrees(current, SEED)
        progress |= reduce_changed_subtrees(current, VARIANT)
    if syntax is not None:
        progress |= undo_replacements(current, syntax)
    return progress


def undo_replacements(current: PairCurrent, syntax: Syntax) -> bool:
    """MinTdiff's last step: put the seed's version back for each replacement and update
    of the tree difference Δ_T (GumTree), one at a time, wherever the variant stays bad.

    Works on the texts, not on the token alignment: Δ_T may pair subtrees that
    the token diff splits into several hunks, or the other way round. Δ_T's
    operations are independent edits of the texts it was computed on, so one
    pass undoes them cumulatively on one tree difference; it is computed again
    only after a pass that changed something.
    """
    progress = False
    grammar = syntax.grammar
    while True:
        seed, variant = current.state.seed_text(), current.state.variant_text()
        tree_diff = diff_trees(syntax.parse(seed).tree, seed, syntax.parse(variant).tree, variant)
        operations: list[Update | Replacement] = sorted(
            [*tree_diff.updates, *tree_diff.replacements], key=lambda op: op.variant_span
        )
        seed_tokens = tokenize(seed, grammar)
        undone: list[Operation] = []
        position = 0
        while position < len(operations):
            rest = operations[position:]
            candidates = (_undone(tree_diff, [*undone, op], seed_tokens, grammar) for op in rest)
            found = current.engine.first_judged(
                candidates, current.judge(measure(current.state)), label=current.label
            )
            if found is None:
                break
            undone.append(rest[found[0]])
            assert found[1].state is not None
            current.adopt(found[1].state)
            position += found[0] + 1
        if not undone:
            return progress
        progress = True


def _undone(
    tree_diff: TreeDiff, operations: list[Operation], seed_tokens: TokenList, grammar: Grammar
) -> PairCandidate:
    variant = tree_diff.undo(operations)
    pair = PairState.full(Alignment(seed_tokens, tokenize(variant, grammar)))
    return PairCandidate(seed_tokens.text, variant, measure(pair), pair)


def min_ldiff(current: PairCurrent) -> bool:
    """Algorithm 3: ddmin over the applied hunks; the variant is the seed plus a subset."""
    live = set(current.state.live_hunks())
    applied = sorted(live & current.state.applied)
    if not applied:
        return False
    base = current.state
    before = measure(base)

    def states(subsets: Iterable[Subset]) -> Iterator[PairState]:
        for subset in subsets:
            yield base.with_hunks({applied[i] for i in subset} | (base.applied - live))

    def first_success(plan: Plan) -> int | None:
        return current.try_states(states(plan), base, lambda index: states(plan.after(index)))

    ddmin(tuple(range(len(applied))), first_success, try_empty=False)
    return measure(current.state) < before


def min_commonality(current: PairCurrent) -> bool:
    """Algorithm 4: syntax-guided reduction of the seed, each candidate's variant patched.

    The single-program schedule's rounds and late passes run on the seed (see
    `SeedCurrent`): Perses-style tree sweeps with hoisting (no stock phrases:
    see `PairCurrent.catalog`), one per round (`reduce_program`'s `one_sweep`:
    rustc-105238's pair 601 tests at one job with a sweep until one shrinks
    nothing, 573 so, figure 1's 341 and 319, the same pairs), names,
    parameters, brackets, tokens, token windows and the passes past
    1-minimality; every candidate seed's edits are carried over to the
    variant, and both are judged. In a pair a repair made, the passes that
    take a name, a parameter or a result with everything tied to it come
    first in each round (`GROUPS_FIRST_ROUND`): the pieces a repair puts back
    are each needed given the others (a result type, the value returned and
    the variable holding it), knots the tree can only take part by part. Its
    final passes wait for `finish_commonality`: a whitespace pass here would
    make every text of the next round new, and the next round's
    MinCommonality pay again for what this one settled. On the pair it left, unchanged
    since (MinTdiff and MinLdiff of the next round found nothing), it does not run again:
    its rounds stopped there on purpose (`reduce_program`: after a late pass that only
    shortened a spelling).
    """
    if current.state == current.commonality_left:
        return False
    before = measure(current.state)
    reduce_program(
        SeedCurrent(current),
        final=False,
        groups_first=current.repaired,
        learnt=current.catalog(),
        phrases=False,
        one_sweep=True,
    )
    current.commonality_left = current.state
    return measure(current.state) < before


def finish_commonality(current: PairCurrent, *, ended_with_newline: bool) -> bool:
    """The single-program schedule's final passes (lenient, rename, tidy, newline) on the
    seed, each candidate's variant patched, once the rounds are done; `ended_with_newline`:
    whether the original seed did."""
    before = current.state
    finish_program(SeedCurrent(current), ended_with_newline=ended_with_newline)
    return current.state is not before


class _Unliftable(Exception):
    """A reduced variant whose lifted seed does not pass: the variant's sweeps stop."""

    def __init__(self, position: int) -> None:
        super().__init__(position)
        self.position = position  # the accepted variant's, in the order of acceptance


def variant_first(current: PairCurrent) -> bool:
    """Perses' tree sweeps on the variant alone, the seed lifted to match (`pair/lift.py`).

    Reducing the variant alone costs one test per candidate, as single-program
    reduction does, and leaves programs whose tests are fast for the passes
    that judge both. The lift is tried after the 1st, 2nd, 4th, 8th, ...
    accepted variant and after the last; each lift that passes becomes the
    pair. The first that does not stops the sweeps (a deletion the variant's
    failure survives broke the seed: a seed that must compile, a crash before
    type checking), and bisection between it and the last good one finds the
    newest variant that still lifts. Where the very first does not, the
    sweeps go on to the end and the fewest deleted pieces the lifted seed
    needs are put back into both programs (`pair/repair.py`).

    With a job to spare, a lift's test runs beside the sweeps
    (`PairCurrent.test_ahead`) instead of holding them while the other job
    idles (a lift is one test: the variant's verdict is known). A lift that
    passed becomes the pair when the next variant is accepted; one refused
    stops the sweeps as soon as its test has ended (looked at between two
    candidates). The lifts checked and their order are the same, so is the
    result; the tests under way when a refused lift ends are spent for
    nothing.
    """
    syntax = current.syntax
    if syntax is None:
        return False
    grammar = syntax.grammar
    original = current.state.variant_text()
    base = current.state.alignment
    if (base.seed.text, base.variant.text) != (current.state.seed_text(), original):
        base = Alignment.of(current.state.seed_text(), original, grammar)
    history: list[bytes] = []
    # the newest accepted variant's tokens, from the parse the view already holds
    newest_tokens: dict[int, TokenList] = {}
    # how each accepted variant was made from the original, while its base's is known
    provenance = {original: Provenance.original(original, base.changed_at)}
    known = -1  # the newest position of `history` whose lift is the pair
    checking = True  # lifts are tried as the sweeps go; not once the very first was refused
    # a lift whose first test runs beside the sweeps: its position, pair and test
    ahead: tuple[int, PairState, tickets.Ticket] | None = None
    watched: tickets.Ticket | None = None  # its ticket, until its ended test was looked at

    def origins_of(position: int) -> tuple[TokenList, list[int]]:
        variant = newest_tokens.get(position) or tokenize(history[position], grammar)
        made = provenance.get(history[position])
        if made is not None:
            return variant, made.origins(base.variant, variant)
        return variant, diffed_origins(base.variant, variant)

    def lifted_pair(variant: TokenList, origins: list[int]) -> PairState:
        lifted = lift(base, variant, origins)
        parsed = syntax.reparsed(lifted.text, variant.text)
        return PairState.full(lifted.alignment(variant, grammar, parsed))

    def lifted_state(position: int) -> PairState:
        return lifted_pair(*origins_of(position))

    def lifted(position: int) -> bool:
        return current.try_states([lifted_state(position)]) is not None

    def lifted_pairs(variants: Iterable[Made]) -> Iterator[PairState]:
        return (lifted_pair(*made) for made in variants)

    def first_lifting(
        variants: Iterable[Made],
        if_none: Callable[[], Iterable[Made]] | None,
        if_held: Callable[[int], Iterable[Made]] | None,
    ) -> int | None:
        return current.try_states(
            lifted_pairs(variants),
            after=None if if_held is None else lambda found: lifted_pairs(if_held(found)),
            lookahead=None if if_none is None else lambda: lifted_pairs(if_none()),
        )

    def variant_parses(variant: bytes) -> bool:
        with current.engine.counting_for(current.label):
            return current.judge(measure(current.state)).variant_parses(variant)

    def check(position: int, state: PairState) -> None:
        nonlocal known, checking
        if current.try_states([state]) is not None:
            known = position
        elif position == 0:
            checking = False
        else:
            raise _Unliftable(position)

    def settle_ahead() -> None:
        nonlocal ahead, watched
        if ahead is not None:
            position, state, ticket = ahead
            ahead = watched = None
            try:
                check(position, state)
            finally:
                ticket.abandon()

    def settle_ended() -> None:
        """Between two candidates of the sweeps: a lift whose test has ended and refused
        stops them now, not at the next accepted variant. Called inside the engine's
        batch, so it only reads the cache; a lift that passed is adopted (judged from
        the cache) once the batch is over."""
        nonlocal ahead, checking, watched
        if watched is None or not watched.ended:
            return
        watched = None  # looked at once: a lift that passed waits, and costs no more looks
        assert ahead is not None
        position, state, ticket = ahead
        if not current.known_refused(state):
            return
        ahead = None
        ticket.abandon()
        if position == 0:
            checking = False
        else:
            raise _Unliftable(position)

    def accepted(reduced: Current) -> None:
        nonlocal ahead, watched
        current.learn_catalog_aside()  # tests are under way from here on
        settle_ahead()
        history.append(reduced.text)
        newest_tokens.clear()
        parsed = reduced.parsed
        if parsed is not None and parsed.text is reduced.text:
            newest_tokens[len(history) - 1] = TokenList(
                parsed.text, parsed.token_starts, parsed.token_ends
            )
        rendered = reduced.rendered
        if isinstance(rendered, edits.Rendered) and rendered.base in provenance:
            made = provenance[rendered.base].after(rendered.base, rendered.splices)
            provenance[reduced.text] = made
        newest = len(history) - 1
        if checking and len(history) & newest == 0:  # a power of two
            state = lifted_state(newest)
            ticket = current.test_ahead(state)
            if ticket is None:
                check(newest, state)
            else:
                ahead, watched = (newest, state, ticket), ticket

    view = Current(
        original,
        current.engine,
        syntax,
        on_change=accepted,
        place=current.places[1] if current.places is not None else None,
        accepts=current.variant_ok,
    )
    view.label = current.label
    view.checkpoint = settle_ended
    program = Program.of(view)
    assert program.original is not None
    try:
        while sweep(view, program.original):
            pass
        settle_ahead()
        newest = len(history) - 1
        if not checking:
            current.repaired = _repair(
                syntax, base, origins_of(newest), first_lifting, variant_parses
            )
            return current.repaired
        if known == newest or lifted(newest):
            return newest >= 0
        refused = newest
    except _Unliftable as unliftable:
        refused = unliftable.position
    finally:
        if ahead is not None:
            ahead[2].abandon()
    while refused - known > 1:
        middle = (known + refused) // 2
        if lifted(middle):
            known = middle
        else:
            refused = middle
    return known >= 0


# A reduced variant and each of its tokens' index in the original variant
Made = tuple[TokenList, list[int]]
# The first of the variants (as `Made`) whose lifted pair holds, becoming the pair; with what
# is asked next if none does and if the i-th does, for idle jobs (`repair.Ahead`)
FirstLifting = Callable[
    [Iterable[Made], Callable[[], Iterable[Made]] | None, Callable[[int], Iterable[Made]] | None],
    int | None,
]

# The most deleted pieces a repair puts back before it settles for its last success: each
# costs about log2(pieces) candidates, and past this many PPR's own sweeps cost less.
_MOST_PIECES = 48
# A restored subtree this small comes back whole: splitting it costs more than MinCommonality.
_SMALLEST_SPLIT = 6


def _repair(
    syntax: Syntax,
    base: Alignment,
    reduced: Made,
    first_lifting: FirstLifting,
    variant_parses: Callable[[bytes], bool],
) -> bool:
    """Whether putting back deleted pieces of the original variant into the reduced one
    gave a pair whose seed, lifted to it, passes (it became the pair)."""
    restoration = Restoration(base.variant, *reduced)
    tree = parse_tokens(
        syntax, base.variant.text, list(range(len(base.variant))), base.variant.texts
    )

    def rendered(sets: list[list[Unit]]) -> Iterator[Made]:
        return (restoration.render(units, syntax.grammar) for units in sets)

    def first_holding(sets: list[list[Unit]], ahead: Ahead[Unit] | None = None) -> int | None:
        if ahead is None:
            return first_lifting(rendered(sets), None, None)
        return first_lifting(
            rendered(sets),
            lambda: rendered(ahead.if_none()),
            lambda found: rendered(ahead.if_held(found)),
        )

    def testable(units: list[Unit]) -> bool:
        """The restored variant parses (the lifted seed rarely fails where it does not):
        its text alone, without the tokens matched or the seed lifted."""
        return variant_parses(restoration.text(units))

    units = deleted_units(tree, restoration.kept)
    return restore_fewest(
        tree,
        units,
        first_holding,
        most=_MOST_PIECES,
        smallest_split=_SMALLEST_SPLIT,
        testable=testable,
    )


@dataclass(frozen=True)
class Round:
    """One PPR round: the pair, and whether MinTdiff may hoist inside the changes yet.

    Hoisting inside the changes pays once MinLdiff has dropped the changes the
    bug does not need; before that it would polish hunks about to go whole. So
    the first round goes without, and only a round with it may end the loop.
    The first round is also the one that thins out the shared code coarsely:
    later rounds start from programs MinCommonality has already reduced.
    """

    current: PairCurrent
    hoist: bool

    @property
    def first(self) -> bool:
        return not self.hoist


ROUND: tuple[Pass[Round], ...] = (
    Pass(
        "variant-first",
        lambda round_: variant_first(round_.current),
        "tree sweeps on the variant alone (one test a candidate), then the seed lifted to it",
        applies=lambda round_: round_.first,
    ),
    Pass(
        "coarse-commonality",
        lambda round_: coarse_commonality(round_.current),
        "whole declarations and statements both programs hold identically, removed from both",
        applies=lambda round_: round_.first,
    ),
    Pass(
        "min-tdiff",
        lambda round_: min_tdiff(round_.current, hoist=round_.hoist),
        "Algorithm 2: subtrees and tokens only one side has, MinSubtree, replacements undone",
    ),
    Pass(
        "min-ldiff",
        lambda round_: min_ldiff(round_.current),
        "Algorithm 3: ddmin over the hunks the variant applies to the seed",
    ),
    Pass(
        "min-commonality",
        lambda round_: min_commonality(round_.current),
        "Algorithm 4: the single-program schedule on the seed, each candidate's variant patched",
    ),
)
"""PPR's order (its RQ4): differences before commonality, tree differences before lists;
in the first round only, the code both programs share is thinned out first, coarsely,
so the difference passes test small programs (see `pair/coarse.py`)."""


def finishing(ended_with_newline: bool) -> Pass[Round]:
    """MinCommonality's final passes as a pass of their own, labelled as MinCommonality's
    (`min-commonality/tidy`, ...); `ended_with_newline`: whether the seed did before the
    rounds (what `newline` puts back)."""
    return Pass(
        "min-commonality",
        lambda round_: finish_commonality(round_.current, ended_with_newline=ended_with_newline),
        "the single-program schedule's final passes on the seed, once, after the rounds",
    )


def reduce_pair(current: PairCurrent) -> None:
    """Algorithm 1: the passes of `ROUND` in order, repeated until a round with hoisting
    shrinks nothing; then MinCommonality's final passes, once."""
    finish = finishing(current.state.seed_text().endswith(b"\n"))
    hoist = False
    while True:
        before = measure(current.state)
        round_ = Round(current, hoist)
        for declared in ROUND:
            run_pass(declared, round_, current)
        if hoist and measure(current.state) >= before:
            break
        hoist = True
    run_pass(finish, round_, current)


__all__ = ["SEED", "PairCurrent", "finishing", "measure", "reduce_pair"]
