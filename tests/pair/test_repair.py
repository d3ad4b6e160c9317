"""The deleted pieces of a reduced variant, put back: which pieces, how they render, and
the search for the fewest a lifted seed needs."""

from __future__ import annotations

from collections.abc import Callable

from hypothesis import given
from hypothesis import strategies as st

from gitreduce.lang import grammars
from gitreduce.lang.syntax import Syntax
from gitreduce.pair.lift import diffed_origins
from gitreduce.pair.repair import (
    Ahead,
    FirstHolding,
    Piece,
    Restoration,
    Unit,
    deleted_units,
    fewest_needed,
    restore_fewest,
)
from gitreduce.pair.token_tree import parse_tokens
from gitreduce.pair.tokens import TokenList, tokenize

C = grammars.load("c")

PROGRAM = b"""int helper(int a) { return a + 1; }

struct unused { int x; };

int main(void) {
    int x = helper(2);
    return (x);
}
"""


def deleted_but(tokens: TokenList, kept: list[int]) -> TokenList:
    """The reduced variant deleting every token but `kept` with its trivia leaves, token
    for token (nothing lexed anew)."""
    text, starts, ends = b"", [], []
    for index in kept:
        text += tokens.text[tokens.leads[index] : tokens.starts[index]]
        starts.append(len(text))
        text += tokens.token(index)
        ends.append(len(text))
    return TokenList(text + tokens.text[tokens.tail :], starts, ends)


def pieces(text: bytes, kept_texts: list[bytes]) -> tuple[list[Unit], list[bytes], Restoration]:
    """The units of `text` with the tokens of its last function (`main`, or the last
    eight tokens) whose text is in `kept_texts` kept."""
    assert C is not None
    tokens = tokenize(text, C)
    texts = tokens.texts()
    last = texts.index(b"main") - 2 if b"main" in texts else len(texts) - 8
    kept = [index for index, token in enumerate(texts) if index > last and token in kept_texts]
    tree = parse_tokens(Syntax(C, text), text, list(range(len(tokens))), tokens.texts)
    restoration = Restoration(tokens, deleted_but(tokens, kept), kept)
    units = [piece.indices for piece in deleted_units(tree, restoration.kept)]
    return units, texts, restoration


def test_whole_deleted_subtrees_are_pieces_and_loose_leaves_go_together() -> None:
    units, texts, restoration = pieces(PROGRAM, [b"main", b"x", b"return"])
    as_text = [b" ".join(texts[index] for index in unit) for unit in units]
    # the two deleted top-level declarations, each one piece
    assert b"int helper ( int a ) { return a + 1 ; }" in as_text
    assert b"struct unused { int x ; }" in as_text
    # the parentheses around the kept `x`: deleted leaves of one kept node, one piece
    assert b"( )" in as_text
    covered = sorted(index for unit in units for index in unit)
    assert len(covered) == len(set(covered))  # no token in two pieces
    assert not restoration.kept & set(covered)
    # in text order, but a node's own leaves after the pieces inside it: the `int` and
    # `{ }` of `main` after its body's pieces, the `;` of the top level last
    assert as_text[2:-2] == [b"( void )", b"helper ( 2 )", b"=", b"int ;", b"( )", b";", b"{ }"]
    assert as_text[-2:] == [b"int", b";"]


def test_a_hoisted_expression_is_filled_in_before_the_call_it_was_hoisted_from() -> None:
    """`wrap(x + 1)` was reduced to `x`, and the seed needs `x + 1` but breaks on the
    undeclared `wrap`. The call's own leaves come after the piece inside it, so the
    prefixes asked about fill in the kept `x` first; in text order every prefix holding
    `+ 1` held `wrap (` too, and only the whole call came back."""
    assert C is not None
    text = b"int main(void) {\n    return wrap(x + 1);\n}\n"
    tokens = tokenize(text, C)
    texts = tokens.texts()
    hoisted = {texts.index(b"wrap"), texts.index(b"wrap") + 1, texts.index(b"+"), texts.index(b"1")}
    hoisted.add(texts.index(b";") - 1)  # the call's `)`
    kept = [index for index in range(len(tokens)) if index not in hoisted]
    tree = parse_tokens(Syntax(C, text), text, list(range(len(tokens))), tokens.texts)
    restoration = Restoration(tokens, deleted_but(tokens, kept), kept)
    units = deleted_units(tree, restoration.kept)
    assert [b" ".join(texts[index] for index in piece.indices) for piece in units] == [
        b"+ 1",
        b"( )",
        b"wrap",
    ]

    def holds(chosen: list[Piece]) -> bool:
        restored = restoration.text(piece.indices for piece in chosen)
        return b"x + 1" in restored and b"wrap" not in restored

    found = fewest_needed(units, asking(holds), most=4)
    assert found is not None
    assert (
        restoration.text(piece.indices for piece in found)
        == b"int main(void) {\n    return x + 1;\n}\n"
    )


def test_restoring_every_piece_renders_the_original_and_none_the_kept_tokens() -> None:
    assert C is not None
    units, texts, restoration = pieces(PROGRAM, [b"main", b"x", b"return", b";"])
    everything, origins = restoration.render(units, C)
    kept_only, kept_origins = restoration.render([], C)
    assert everything.text.startswith(PROGRAM.rstrip())
    assert origins == list(range(len(texts)))
    assert kept_only.texts() == [texts[index] for index in kept_origins]
    assert kept_origins == sorted(restoration.kept)


def test_restored_pieces_never_glue_to_their_neighbours() -> None:
    """Restoring `int` between kept words must not write `intx`."""
    assert C is not None
    text = b"int f(void) { int x = 1; return x; }\n"
    units, texts, restoration = pieces(text, [b"f", b"x", b"return", b";", b"{", b"}"])
    rendered, origins = restoration.render(units[:1], C)
    assert [texts[index] for index in origins] == rendered.texts()


def asking(holds: Callable[[list[Unit]], bool]) -> FirstHolding[Unit]:
    """`holds` asked of each set of a batch in order, as the engine's first success."""

    def first_holding(sets: list[list[Unit]], ahead: Ahead[Unit] | None = None) -> int | None:
        return next((at for at, units in enumerate(sets) if holds(units)), None)

    return first_holding


def test_the_fewest_needed_pieces_are_found_with_a_few_questions_each() -> None:
    units: list[Unit] = [(index,) for index in range(64)]
    needed = {(5,), (40,), (41,)}
    asked: list[list[Unit]] = []

    def holds(chosen: list[Unit]) -> bool:
        asked.append(chosen)
        return needed <= set(chosen)

    batches: list[int] = []

    def first_holding(sets: list[list[Unit]], ahead: Ahead[Unit] | None = None) -> int | None:
        batches.append(len(sets))
        return asking(holds)(sets)

    found = fewest_needed(units, first_holding, most=10)
    assert found is not None and set(found) == needed
    assert max(batches) <= 3  # the chosen ones alone and two probes
    assert len(batches) <= len(needed) * ((64).bit_length() + 1)
    assert units not in asked  # everything restored is the original: never asked


def test_prefixes_that_cannot_be_tested_are_never_asked_and_batches_stay_full() -> None:
    """Only prefixes of even length parse here: those of odd length are refused without
    a test, and the probes move to testable lengths, so each batch asks two of them."""
    units: list[Unit] = [(index,) for index in range(64)]
    needed = {(5,), (40,), (41,)}
    batches: list[list[list[Unit]]] = []

    def testable(chosen: list[Unit]) -> bool:
        return len(chosen) % 2 == 0

    def first_holding(sets: list[list[Unit]], ahead: Ahead[Unit] | None = None) -> int | None:
        batches.append(sets)
        # as the judge does, an untestable set asked all the same is refused
        return asking(lambda chosen: needed <= set(chosen) and testable(chosen))(sets)

    found = fewest_needed(units, first_holding, most=10, testable=testable)
    # what cannot be tested counts as refused: a piece may come back to make a length even
    assert found is not None and needed <= set(found) and testable(found)
    # a batch's first set may be the pieces chosen so far alone, asked whatever it is
    assert all(testable(chosen) for batch in batches for chosen in batch[1:])
    assert sum(len(batch) == 3 for batch in batches) >= len(batches) // 3


def test_every_question_is_a_subset_of_the_last_set_that_held() -> None:
    units: list[Unit] = [(index,) for index in range(20)]
    last_held: set[Unit] = set(units)

    def holds(chosen: list[Unit]) -> bool:
        nonlocal last_held
        assert set(chosen) <= last_held
        if {(3,), (17,)} <= set(chosen):
            last_held = set(chosen)
            return True
        return False

    assert fewest_needed(units, asking(holds), most=10) is not None


@given(
    needed=st.sets(st.integers(0, 23), max_size=6),
    odd_untestable=st.booleans(),
    most=st.integers(1, 8),
)
def test_each_question_announces_the_sets_asked_next_on_either_answer(
    needed: set[int], odd_untestable: bool, most: int
) -> None:
    """What `Ahead` says the search asks next, if none of a batch holds or if the i-th
    is the first that does, is what it then asks (nothing once it stops): idle jobs
    test the right sets, and the questions are those of one job."""
    units: list[Unit] = [(index,) for index in range(24)]
    wanted = {(index,) for index in needed}
    testable = (lambda chosen: len(chosen) % 2 == 0) if odd_untestable else None
    announced: list[list[list[Unit]]] = []
    asked: list[list[list[Unit]]] = []

    def first_holding(sets: list[list[Unit]], ahead: Ahead[Unit] | None = None) -> int | None:
        assert ahead is not None
        asked.append(sets)
        found = next((at for at, chosen in enumerate(sets) if wanted <= set(chosen)), None)
        announced.append(ahead.if_none() if found is None else ahead.if_held(found))
        return found

    fewest_needed(units, first_holding, most=most, testable=testable)
    assert announced[:-1] == asked[1:]
    if announced:
        assert announced[-1] == []


def test_too_many_needed_pieces_give_the_last_set_that_held_or_nothing() -> None:
    units: list[Unit] = [(index,) for index in range(16)]

    def needs_four(chosen: list[Unit]) -> bool:
        return {(5,), (9,), (12,), (14,)} <= set(chosen)

    found = fewest_needed(units, asking(needs_four), most=2)
    assert found is not None and needs_four(found) and len(found) < len(units)
    assert fewest_needed(units, asking(lambda chosen: False), most=3) is None


def test_inside_a_restored_subtree_only_the_children_needed_come_back() -> None:
    """The seed needs the function `helper` back, but not its second statement: the
    function is put back whole, then split into its own tokens and children, and the
    body, needed as the declarator is, into its statements. As the engine does, a set
    no smaller than the restoration the pair has is refused: where every child is
    needed the search finds no set that holds, and the children are split all the
    same (the body's statements came back whole)."""
    assert C is not None
    text = (
        b"int unused;\nint helper(int a) { int b = a; int c = 9; return b; }\nint main(void) { }\n"
    )
    tokens = tokenize(text, C)
    texts = tokens.texts()
    tree = parse_tokens(Syntax(C, text), text, list(range(len(tokens))), tokens.texts)
    main = texts.index(b"main")
    kept = list(range(main - 1, len(tokens)))
    restoration = Restoration(tokens, deleted_but(tokens, kept), kept)
    units = deleted_units(tree, restoration.kept)

    def holds(chosen: list[Unit]) -> bool:
        rendered, _ = restoration.render(chosen, C)
        body = b" ".join(rendered.texts())
        return b"return b ;" in body and b"int b = a ;" in body and b"helper (" in body

    restored: list[list[Unit]] = [[piece.indices for piece in units]]  # the original's

    def tokens_of(chosen: list[Unit]) -> set[int]:
        return {index for unit in chosen for index in unit}

    def first_holding(sets: list[list[Unit]], ahead: Ahead[Unit] | None = None) -> int | None:
        smaller = [chosen for chosen in sets if tokens_of(chosen) < tokens_of(restored[-1])]
        at = asking(holds)(smaller)
        if at is None:
            return None
        restored.append(smaller[at])
        return sets.index(smaller[at])

    assert restore_fewest(tree, units, first_holding, most=8, smallest_split=4)
    final = b" ".join(restoration.render(restored[-1], C)[0].texts())
    assert b"int c = 9" not in final and b"return b ;" in final


def test_tokens_lexed_anew_where_runs_join_are_matched_by_their_bytes() -> None:
    """With `let a` gone, Rust lexes the `> >` closing `Vec<Vec<u8>>` as one `>>`, and the
    shift `x >> 2` as two `>`: the count agrees, the tokens do not. Only the tokens whose
    bytes are one original token's keep its index; the relexed ones have none."""
    rust = grammars.load("rust")
    assert rust is not None
    tokens = tokenize(b"fn f() { let a: Vec<Vec<u8>> = x >> 2; }\n", rust)
    texts = tokens.texts()
    kept = [index for index in range(len(tokens)) if texts[index] not in (b"{", b"let", b"a")]
    rendered, origins = Restoration(tokens, deleted_but(tokens, kept), kept).render([], rust)
    assert len(rendered) == len(kept)
    for token, origin in zip(rendered.texts(), origins, strict=True):
        if origin >= 0:
            assert texts[origin] == token
    assert [
        token for token, origin in zip(rendered.texts(), origins, strict=True) if origin < 0
    ] == [
        b">>",
        b">",
        b">",
    ]


def test_kept_lines_stay_where_a_hoist_moved_them_and_restored_ones_join_them() -> None:
    """The reduction hoisted `a = 1` out of its `if` in Python (dedenting it) and deleted
    `b = 2`: the restoration renders the kept lines where the reduction put them, and
    `b = 2` put back goes to its neighbours' new column, so both texts are Python."""
    python = grammars.load("python")
    assert python is not None
    text = b"def f():\n    c = 0\n    if x:\n        a = 1\n        b = 2\n    return c\n"
    variant = tokenize(text, python)
    reduced = tokenize(b"def f():\n    c = 0\n    a = 1\n    return c\n", python)
    restoration = Restoration(variant, reduced, diffed_origins(variant, reduced))
    assert restoration.text([]) == reduced.text
    tree = parse_tokens(Syntax(python, text), text, list(range(len(variant))), variant.texts)
    texts = variant.texts()
    (second,) = (
        piece.indices
        for piece in deleted_units(tree, restoration.kept)
        if [texts[index] for index in piece.indices] == [b"b", b"=", b"2"]
    )
    restored = restoration.text([second])
    assert restored == b"def f():\n    c = 0\n    a = 1\n    b = 2\n    return c\n"
    compile(restored, "restored.py", "exec")
