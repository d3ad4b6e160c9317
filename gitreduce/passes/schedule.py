"""Single-program reduction: the pass schedule, declared as data and run to a fixpoint.

Tree sweeps (Perses-style) until they stop paying, then the passes that
delete a construct with everything tied to it (names, parameters, results,
brackets), then a token-level ddmin that catches what no grammar rule offers
(a stray keyword, a qualifier, an operator), then the tree again if anything
went. Files without a grammar get lines, then tokens. A final tidy
normalises white space when the test agrees, and a final newline that
deletions took is put back when the test agrees. The contract every pass
keeps is in docs/passes.md.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace

from gitreduce.core.current import Current, Unit, delete_units, opening_deletions
from gitreduce.core.pass_runner import Pass, pass_label, run_pass, skipped
from gitreduce.lang.syntax import plain_tokens
from gitreduce.passes.aliases import alias_candidates, alias_declarations
from gitreduce.passes.catalog import Catalog, catalog_of
from gitreduce.passes.conversions import conversion_candidates, convert_structures
from gitreduce.passes.identifiers import first_identifiers, replace_identifiers
from gitreduce.passes.inlining import inline_and_fold, inlining_candidates
from gitreduce.passes.lenient import delete_tokens_ungated, worthwhile
from gitreduce.passes.names import delete_names, name_candidates
from gitreduce.passes.parameters import delete_parameters, parameter_candidates
from gitreduce.passes.rename import rename
from gitreduce.passes.results import delete_results, return_candidates
from gitreduce.passes.subtrees import first_subtrees, replace_subtrees
from gitreduce.passes.tree import TreeReducer
from gitreduce.passes.types import first_types, replace_types
from gitreduce.passes.windows import (
    bracket_candidates,
    delete_brackets,
    delete_window_subsets,
    delete_windows,
    first_window_subsets,
    first_windows,
    small_enough,
)

_TRAILING_SPACE = re.compile(rb"[ \t]+$", re.MULTILINE)
_BLANK_RUNS = re.compile(rb"\n{3,}")
_FINAL_BLANK_LINES = re.compile(rb"\n\n+\Z")


def token_units(current: Current) -> list[Unit]:
    """Every token of the current text as a unit (grammar tokens when parsed, else words)."""
    spans: Iterable[tuple[int, int]]
    if current.parsed is not None:
        spans = zip(current.parsed.token_starts, current.parsed.token_ends, strict=True)
    else:
        spans = plain_tokens(current.text)
    return [Unit(start, end) for start, end in spans]


def line_units(text: bytes) -> list[Unit]:
    units, start = [], 0
    for line in text.splitlines(keepends=True):
        if line.strip():
            units.append(Unit(start, start + len(line)))
        start += len(line)
    return units


def tidy(text: bytes) -> bytes:
    """Trailing blanks, runs of blank lines and blank lines at either end removed, and
    the indentation every line shares (what is left of a hoisted body); the
    indentation of lines relative to each other (and so Python) untouched."""
    squeezed = _BLANK_RUNS.sub(b"\n\n", _TRAILING_SPACE.sub(b"", text)).lstrip(b"\n")
    return _dedent(_FINAL_BLANK_LINES.sub(b"\n", squeezed))


def _dedent(text: bytes) -> bytes:
    lines = text.split(b"\n")
    margins = [line[: len(line) - len(line.lstrip(b" \t"))] for line in lines if line.strip()]
    if not margins:
        return text
    shared = os.path.commonprefix(margins)  # noqa: RUF071 -- a prefix of characters is meant
    if not shared:
        return text
    return b"\n".join(line[len(shared) :] if line.strip() else line for line in lines)


@dataclass(frozen=True)
class Program:
    """What the single-program passes work on: the best text so far, the stock
    phrases (a `0`, an `int`) of the original, learnt once before the first pass,
    whether the original ended with a newline, whether the tree sweeps offer
    stock phrases at all (`phrases`), and whether the tree pass sweeps once per
    round (`one_sweep`) rather than until a sweep shrinks nothing."""

    current: Current
    original: Catalog | None
    final_newline: bool
    phrases: bool = True
    one_sweep: bool = False

    @staticmethod
    def of(
        current: Current,
        learnt: Catalog | None = None,
        *,
        phrases: bool = True,
        one_sweep: bool = False,
    ) -> Program:
        """`learnt`: which kinds stood in the same slot in an earlier original (a pair's
        programs as they began), kept with what `current` teaches; without `phrases`,
        only those slots are learnt from `current`, and the tree sweeps offer no stock
        phrase: hoisting only (see `PairCurrent.catalog`)."""
        original = None
        if current.parsed is not None and current.syntax is not None:
            if phrases:
                original = catalog_of(current.syntax.grammar, current.parsed)
            else:
                original = Catalog(current.syntax.grammar)
                original.learn(current.parsed, phrases=False)
            if learnt is not None:
                original.share_slots(learnt)
        return Program(current, original, current.text.endswith(b"\n"), phrases, one_sweep)


def _lost_final_newline(program: Program) -> bool:
    """Whether deletions took the original's final newline (a `\\n` token of some
    grammars, or the end of a last line): a result should end like its original."""
    text = program.current.text
    return program.final_newline and bool(text) and not text.endswith(b"\n")


def sweep(
    current: Current, original: Catalog, *, phrases: bool = True, one_sweep: bool = False
) -> bool:
    """One tree sweep, with stock phrases from the original and the current text (none
    without `phrases`); `one_sweep`: the caller sweeps no more after it, even if it shrank
    the text, so its last batches look ahead to what the caller tries next.

    The original's phrases (a `0`, an `int`) are often gone from the current
    text by the time a node that could take them comes up.
    """
    return _sweep_reducer(current, original, phrases, one_sweep).sweep()


def _sweep_reducer(
    current: Current, original: Catalog, phrases: bool, one_sweep: bool
) -> TreeReducer:
    """The reducer of a sweep over `current` as it is now; the one after it, should it
    shrink the text, is made the same way (what its last batches look ahead to), unless
    there is none (`one_sweep`: they look ahead to what the caller tries next)."""
    assert current.parsed is not None
    return TreeReducer(
        current,
        original.extended(current.parsed, phrases=phrases),
        current.then,
        next_sweep=None
        if one_sweep
        else lambda swept: _sweep_reducer(swept, original, phrases, False),
    )


def _first_sweep(program: Program) -> TreeReducer:
    assert program.original is not None
    return _sweep_reducer(program.current, program.original, program.phrases, program.one_sweep)


def _sweeps(program: Program) -> bool:
    assert program.original is not None
    if program.one_sweep:
        return sweep(program.current, program.original, phrases=program.phrases, one_sweep=True)
    progress = False
    while sweep(program.current, program.original, phrases=program.phrases):
        progress = True
    return progress


def _parsed(program: Program) -> bool:
    return program.current.parsed is not None


def _unparsed(program: Program) -> bool:
    return program.current.parsed is None


ROUND: tuple[Pass[Program], ...] = (
    Pass(
        "tree",
        _sweeps,
        "Perses-style sweeps: delete, hoist or replace by a stock phrase, biggest node first",
        applies=_parsed,
        first_batch=lambda program: _first_sweep(program).first_batch(),
    ),
    Pass(
        "names",
        lambda program: delete_names(program.current),
        "a declared name together with every construct that uses it",
        applies=_parsed,
        first_batch=lambda program: name_candidates(program.current),
        idle_if_first_empty=True,
    ),
    Pass(
        "parameters",
        lambda program: delete_parameters(program.current),
        "the i-th parameter of a function with the i-th argument of each of its calls",
        applies=_parsed,
        first_batch=lambda program: parameter_candidates(program.current),
        idle_if_first_empty=True,
    ),
    Pass(
        "results",
        lambda program: delete_results(program.current),
        "a function's result type with the values it returns",
        applies=_parsed,
        first_batch=lambda program: return_candidates(program.current),
        idle_if_first_empty=True,
    ),
    Pass(
        "brackets",
        lambda program: delete_brackets(program.current),
        "a matching pair of brackets, keeping what they enclose",
        applies=_parsed,
        first_batch=lambda program: bracket_candidates(program.current),
        idle_if_first_empty=True,
    ),
    Pass(
        "lines",
        lambda program: delete_units(program.current, line_units(program.current.text)),
        "ddmin over lines, for a file no grammar parses",
        applies=_unparsed,
    ),
    Pass(
        "tokens",
        lambda program: delete_units(
            program.current, token_units(program.current), lookahead=program.current.then
        ),
        "ddmin over tokens: what no grammar rule offers (a qualifier, an operator)",
        first_batch=lambda program: opening_deletions(
            program.current, token_units(program.current)
        ),
        idle_if_first_empty=True,
    ),
    Pass(
        "windows",
        lambda program: delete_windows(program.current),
        "short unaligned runs of tokens that ddmin's chunks miss",
        applies=_parsed,
        first_batch=lambda program: first_windows(program.current),
    ),
)
"""One round of the single-program schedule, in order; rounds repeat while they shrink."""

_GROUP_PASSES = ("names", "parameters", "results")
GROUPS_FIRST_ROUND: tuple[Pass[Program], ...] = (
    *(declared for declared in ROUND if declared.name in _GROUP_PASSES),
    *(declared for declared in ROUND if declared.name not in _GROUP_PASSES),
)
"""`ROUND` with the passes that take a construct with everything tied to it first: for a
small text whose parts hold each other in place (a result type and the value returned,
a declaration and its uses), where the tree would spend a test on each part it cannot
take alone. On a text not yet swept they would go name by name through what one tree
deletion takes at once (Csmith's 23,000 tokens: four times the time)."""


def _original(program: Program) -> Catalog:
    assert program.original is not None
    return program.original


def _subtrees(program: Program) -> bool:
    return replace_subtrees(program.current, _original(program))


LATE: tuple[Pass[Program], ...] = (
    Pass(
        "identifiers",
        lambda program: replace_identifiers(program.current),
        "a name's uses renamed to another name of its kind in scope (a variable's also to 0), "
        "its declaration deleted",
        applies=lambda program: small_enough(program.current),
        first_batch=lambda program: first_identifiers(program.current),
        idle_if_first_empty=True,
    ),
    Pass(
        "types",
        lambda program: replace_types(program.current),
        "a type alias inlined at its uses, or a type the file does not define made plain (int)",
        applies=lambda program: small_enough(program.current),
        first_batch=lambda program: first_types(program.current),
        idle_if_first_empty=True,
    ),
    Pass(
        "conversions",
        lambda program: convert_structures(program.current),
        "a `for` with a condition to a `while`; an `if` or loop to its condition alone; "
        "a variable without a value to the parameter of the one function using it; "
        "a record's named fields to positional ones (Rust)",
        applies=_parsed,
        first_batch=lambda program: conversion_candidates(program.current),
        idle_if_first_empty=True,
    ),
    Pass(
        "inline",
        lambda program: inline_and_fold(program.current),
        "a function called once inlined at its call (C++: as a lambda); a statement's "
        "expression folded into the value the next statement reads",
        applies=lambda program: small_enough(program.current),
        first_batch=lambda program: inlining_candidates(program.current),
        idle_if_first_empty=True,
    ),
    Pass(
        "aliases",
        lambda program: alias_declarations(program.current),
        "a declaration nothing refers to made an alias of one type it names (`type T = R<1>;`)",
        applies=lambda program: small_enough(program.current),
        first_batch=lambda program: alias_candidates(program.current),
        idle_if_first_empty=True,
    ),
    Pass(
        "subtrees",
        _subtrees,
        "a node replaced by a smaller compatible node from elsewhere in the program",
        applies=lambda program: small_enough(program.current),
        first_batch=lambda program: first_subtrees(program.current, _original(program)),
        idle_if_first_empty=True,
    ),
    Pass(
        "exhaustive",
        lambda program: delete_window_subsets(program.current),
        "every gapped subset of every window of 4 tokens deleted (small programs only)",
        applies=lambda program: small_enough(program.current),
        first_batch=lambda program: first_window_subsets(program.current),
    ),
)
"""Passes past 1-minimality (Vulcan): run once the rounds reach their fixpoint, where the
program is small and each of their candidates costs little; if one of them shrinks the
program, the rounds run again."""

FINAL: tuple[Pass[Program], ...] = (
    Pass(
        "lenient",
        lambda program: delete_tokens_ungated(program.current),
        "each token's deletion without the syntax check: what the grammar rejects and "
        "the language may take (C's implicit int)",
        applies=lambda program: small_enough(program.current) and worthwhile(program.current),
    ),
    Pass(
        "rename",
        lambda program: rename(program.current),
        "in-token reduction: each name to the shortest free one, string literals emptied",
        applies=lambda program: small_enough(program.current),
    ),
    Pass(
        "tidy",
        lambda program: program.current.try_rewrite(tidy),
        "white space normalised (trailing blanks, blank runs, a shared margin), if the test agrees",
        first_batch=lambda program: [tidy(program.current.text)],
    ),
    Pass(
        "newline",
        lambda program: program.current.try_growth(program.current.text + b"\n"),
        "the original's final newline put back where deletions took it, if the test agrees",
        applies=_lost_final_newline,
    ),
)
"""Passes run once, after the rounds reached their fixpoint."""


def _in_order(
    program: Program,
    passes: Iterable[Pass[Program]],
    then: Callable[[], Iterable[bytes]] | None = None,
) -> bool:
    """Run `passes` one after another; whether any shrank the program.

    While a pass runs, the first batch of the one after it (if it declares it and
    will run) is the pass's `Current.then`: its last batch's lookahead, tested by
    the jobs its last candidates leave idle. The last pass's is `then`: what the
    caller runs next.
    """
    current = program.current
    progress = False
    order = list(passes)
    for position, declared in enumerate(order):
        current.then = _first_batch_of(order[position + 1 :], program, then)
        try:
            progress = run_pass(declared, program, current) or progress
        finally:
            current.then = None
    return progress


def _first_batch_of(
    passes: Sequence[Pass[Program]],
    program: Program,
    then: Callable[[], Iterable[bytes]] | None = None,
) -> Callable[[], Iterable[bytes]] | None:
    """The first batch of the first of `passes` that will run, as a lookahead read when
    the pass before them ends; `then` if none of them will. Passes switched off are
    passed over now, while no pass runs and their labels are known; those that will
    not apply, once the pass before them ends (a grammar-less pass after a grammar
    pass: before, its pass ended with nothing to look ahead to), and those whose first
    batch is empty where that means they try nothing (`Pass.idle_if_first_empty`).
    Nothing is looked ahead to past a pass that will run and declares no first
    batch."""
    remaining = [declared for declared in passes if not skipped(declared, program.current)]
    if not remaining:
        return then
    outer = program.current.label  # while no pass of `passes` runs: the one they run in

    def lookahead() -> Iterator[bytes]:
        for declared in remaining:
            if not declared.applies(program):
                continue
            if declared.first_batch is None:
                return
            empty = True
            label = pass_label(declared, outer)
            for candidate in declared.first_batch(program):
                empty = False
                program.current.engine.announce(label)  # its test counts for its own pass
                yield candidate
            if not empty or not declared.idle_if_first_empty:
                return
        if then is not None:
            yield from then()

    return lookahead


def _rounds(program: Program, order: tuple[Pass[Program], ...]) -> None:
    """Rounds of `order` until one leaves the text as long as it was; while a round's
    last pass runs, the next round's first batch is its lookahead if the round shrank
    the text (what runs next then)."""
    current = program.current
    next_round = _first_batch_of(order, program)
    while True:
        before = len(current.text)

        def again(before: int = before) -> Iterable[bytes]:
            if next_round is None or len(current.text) >= before:
                return ()
            return next_round()

        _in_order(program, order, again)
        if len(current.text) >= before:
            return


def reduce_program(
    current: Current,
    *,
    final: bool = True,
    groups_first: bool = False,
    learnt: Catalog | None = None,
    phrases: bool = True,
    one_sweep: bool = False,
) -> None:
    """Shrink `current` in place until neither a whole round nor the late passes find
    anything, then run the final passes; interruptible at any point.

    Each round runs every pass of `ROUND` that applies; the fixpoint is judged
    on bytes, so a round that only re-lexes (same length) ends the loop. With
    `final=False` it stops at that fixpoint and leaves `FINAL` to
    `finish_program`: a file set first runs the passes over the whole set
    there (`passes/across.py`), on texts the lenient pass has not yet taken
    outside their grammar, where names are still found in the trees they
    parse to. With `groups_first` each round is `GROUPS_FIRST_ROUND`; `learnt`,
    `phrases` and `one_sweep`: see `Program`.

    The rounds run again after the late passes only if these removed tokens: a late
    pass that only shortened a spelling (a type `usize` made `i32`, a name another's)
    seldom makes a deletion the rounds refused acceptable, and a round to find out
    retests them all (a pair's seed that must compile: about a tenth of the run, for
    nothing, on a rustc E0308 pair).

    With `one_sweep` the tree pass ends after a sweep that shrank the text: the
    sweep after it would test again every node this one refused, which where
    nearly every candidate is refused (a pair's seed that must still compile)
    is a round's worth of tests for a few tokens, and the rounds repeat while
    they shrink anyway, so the result is as tree-minimal as before: the last
    round's sweep, like every pass of it, shrank nothing.
    """
    program = Program.of(current, learnt, phrases=phrases, one_sweep=one_sweep)
    while True:
        _rounds(program, GROUPS_FIRST_ROUND if groups_first else ROUND)
        tokens = current.tokens
        if not _in_order(program, LATE) or current.tokens >= tokens:
            break
    if final:
        _finish(program)


def finish_program(current: Current, *, ended_with_newline: bool) -> None:
    """The passes of `FINAL`, once, on a text `reduce_program(..., final=False)` left;
    `ended_with_newline` says whether its original did (what `newline` puts back)."""
    _finish(replace(Program.of(current), final_newline=ended_with_newline))


def _finish(program: Program) -> None:
    _in_order(program, FINAL)
