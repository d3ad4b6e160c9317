"""Token spans moved past a change: `respanned` gives what a walk of the whole new tree gives.

The reference is `leaf_spans` on the candidate's tree, re-parsed from the
parent's as the syntax gate does it, on the kinds of change passes make (whole
nodes deleted, a node replaced by another's text, a byte range cut) in real
programs of several languages; and the changes that make tokens of the
parent's that did not change in bytes change anyway (two joined into one).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest
import tree_sitter
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitreduce.lang import grammars, respan, syntax
from gitreduce.lang.respan import MAX_SPLICES, respanned
from gitreduce.lang.syntax import Syntax, leaf_spans

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "benchmarks" / "cases"

PROGRAMS = {
    "c": ("c", CASES / "toy-gcc-pattern" / "variant.c"),
    "csmith": ("c", ROOT / "fixtures" / "csmith-23k" / "seed.c"),
    "cpp": ("cpp", CASES / "gxx12-pr109804" / "variant.cpp"),
    "rust": ("rust", CASES / "rustc195-105238" / "variant.rs"),
    "javascript": ("javascript", ROOT / "fixtures" / "javascript-break-pair" / "seed.js"),
    "python": ("python", ROOT / "fixtures" / "python-break-pair" / "seed.py"),
}


@cache
def program(name: str) -> tuple[grammars.Grammar, bytes, tree_sitter.Tree, list[tuple[int, int]]]:
    """The grammar, the text, its tree and its named nodes' spans."""
    language, path = PROGRAMS[name]
    grammar = grammars.load(language)
    assert grammar is not None
    text = path.read_bytes()
    tree = grammar.parser().parse(text)
    nodes, pending = set(), [tree.root_node]
    while pending:
        node = pending.pop()
        if node.is_named and node.end_byte > node.start_byte:
            nodes.add((node.start_byte, node.end_byte))
        pending.extend(node.children)
    return grammar, text, tree, sorted(nodes)


def moved_in(
    language: str, text: bytes, splices: list[tuple[int, int, bytes]]
) -> tuple[object, object]:
    """`respanned`'s spans and the whole walk's, for the candidate `splices` make of
    `text`, re-parsed from its tree as the syntax gate does it."""
    grammar = grammars.load(language)
    assert grammar is not None
    tree = grammar.parser().parse(text)
    edited = syntax._edited(syntax._Parent(text, tree), splices)
    candidate = bytearray(text)
    for start, end, replacement in sorted(splices, reverse=True):
        candidate[start:end] = replacement
    new_tree = grammar.parser().parse(bytes(candidate), edited)
    comments = syntax._comment_kinds(grammar.language)
    return respanned(leaf_spans(tree), splices, edited, new_tree, comments), leaf_spans(new_tree)


def moved(name: str, splices: list[tuple[int, int, bytes]]) -> tuple[object, object]:
    return moved_in(PROGRAMS[name][0], program(name)[1], splices)


@st.composite
def changes(draw: st.DrawFn, name: str) -> list[tuple[int, int, bytes]]:
    """Splices of the kinds passes make: nodes deleted or replaced, or bytes cut."""
    _, text, _, nodes = program(name)
    chosen = sorted(draw(st.lists(st.sampled_from(nodes), min_size=1, max_size=6)))
    kind = draw(st.sampled_from(["delete", "replace", "cut"]))
    splices: list[tuple[int, int, bytes]] = []
    for start, end in chosen:
        if splices and start < splices[-1][1]:
            continue
        if kind == "cut":
            start = draw(st.integers(start, end - 1))
            end = draw(st.integers(start + 1, end))
        other = draw(st.sampled_from(nodes))
        replacement = text[other[0] : other[1]][:40] if kind == "replace" else b""
        splices.append((start, end, replacement))
    return splices


@pytest.mark.parametrize("name", PROGRAMS)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_moved_spans_are_the_whole_walks(name, data):
    got, expected = moved(name, data.draw(changes(name)))
    if got is not None:
        assert got == expected


def test_deleting_the_space_between_two_names_joins_them_into_one_token() -> None:
    """`int a = b c;` minus the space: the parent's `b` and `c`, unchanged bytes on either
    side of the cut, are one token `bc` now."""
    grammar = grammars.load("c")
    assert grammar is not None
    text = b"int f(void) { int a = b c; return a; }\n"
    tree = grammar.parser().parse(text)
    space = text.index(b"b c") + 1
    splices = [(space, space + 1, b"")]
    edited = syntax._edited(syntax._Parent(text, tree), splices)
    candidate = grammar.parser().parse(text.replace(b"b c", b"bc"), edited)
    comments = syntax._comment_kinds(grammar.language)
    got = respanned(leaf_spans(tree), splices, edited, candidate, comments)
    assert got == leaf_spans(candidate)
    assert got is not None and len(got[0]) == len(leaf_spans(tree)[0]) - 1


def test_an_edit_that_opens_a_comment_drops_the_tokens_it_swallows() -> None:
    """A `/*` written before `x;` and a `*/` after it: the tokens in between are a comment
    now, though their bytes did not change."""
    _, text, tree, _ = program("c")
    at = text.index(b"{") + 1
    close = text.index(b";", at) + 1
    splices = [(at, at, b"/*"), (close, close, b"*/")]
    got, expected = moved("c", splices)
    assert got == expected
    assert got is not None and len(got[0]) < len(leaf_spans(tree)[0])


def test_whitespace_free_code_is_moved_around_the_change_only() -> None:
    """Csmith writes initializers with no space between tokens (`{&l_217,(void*)0,...}`): a
    deleted element leaves the others where they were. (A region taking in every leaf
    that touched it spread over the whole line.)"""
    _, text, _, _ = program("csmith")
    start = text.index(b"(void*)0,") + len(b"(void*)0")
    splices = [(start, start + 1 + len(b"(void*)0"), b"")]
    regions = []
    original = respan._leaves_across

    def recorded(tree, begin, end, comments):
        regions.append((begin, end))
        return original(tree, begin, end, comments)

    respan._leaves_across = recorded
    try:
        got, expected = moved("csmith", splices)
    finally:
        respan._leaves_across = original
    assert got == expected
    assert max(end - begin for begin, end in regions) < 40


def test_too_many_splices_are_left_to_the_whole_walk() -> None:
    nodes = program("csmith")[3]
    splices = [(start, end, b"") for start, end in nodes[:: len(nodes) // (MAX_SPLICES + 5)]]
    disjoint = [splices[0]]
    for splice in splices[1:]:
        if splice[0] >= disjoint[-1][1]:
            disjoint.append(splice)
    assert len(disjoint) > MAX_SPLICES
    assert moved("csmith", disjoint)[0] is None


def test_parse_moves_the_spans_of_a_text_the_gate_let_through(monkeypatch) -> None:
    """The text a pass adopts is the gate's, made from the current text: `parse` reads its
    spans from the current text's, not from a walk of its whole tree."""
    grammar, text, tree, _ = program("javascript")
    check = Syntax(grammar, text)
    check.parse(text)
    pending, found = [tree.root_node], None
    while found is None:  # a statement of a block, the first `if` deleted whole
        node = pending.pop()
        if node.type == "if_statement" and node.parent.type == "statement_block":
            found = node
        pending.extend(reversed(node.children))
    start, end = found.start_byte, found.end_byte
    candidate = text[:start] + text[end:]
    assert check.acceptable(candidate, text, [(start, end, b"")])
    walks = []
    monkeypatch.setattr(syntax, "leaf_spans", lambda tree: walks.append(tree) or leaf_spans(tree))
    parsed = check.parse(candidate)
    assert walks == []
    fresh = grammar.parser().parse(candidate)
    assert (parsed.token_starts, parsed.token_ends) == leaf_spans(fresh)


PAIRS = {
    "javascript": ("javascript", ROOT / "fixtures" / "javascript-break-pair"),
    "python": ("python", ROOT / "fixtures" / "python-break-pair"),
    "c": ("c", CASES / "gcc12-pr109392"),
}


@pytest.mark.parametrize("name", PAIRS)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_variant_with_some_of_its_seeds_hunks_put_back_is_moved_alike(name, data):
    """What a lift makes: the variant with a subset of the differences from the seed
    written back, many splices of every length side by side, where one region's
    widening reaches past a splice that changed the length (before, the widened edge
    was moved by the region's own shift, not the splice's, and the tokens past it
    landed a few bytes off)."""
    language, folder = PAIRS[name]
    variant = next(folder.glob("variant.*")).read_bytes()
    seed = next(folder.glob("seed.*")).read_bytes()
    every = syntax.splices_between(variant, seed)
    chosen = data.draw(
        st.lists(st.sampled_from(every), min_size=1, max_size=MAX_SPLICES, unique=True)
    )
    got, expected = moved_in(language, variant, sorted(chosen))
    if got is not None:
        assert got == expected


def test_a_command_split_over_two_lines_in_bash_is_read_whole() -> None:
    """A newline written after `cmd` makes its arguments a command of their own: the
    region starts between two commands, where bash has a hidden newline token and the
    cursor's search by byte finds no child (before, the region's leaves were missed and
    the arguments' tokens dropped)."""
    text = b"echo one\ncmd 'a b' 'c'\necho two\n"
    at = text.index(b" 'a b'")
    got, expected = moved_in("bash", text, [(at, at, b"\n")])
    assert got == expected


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (b"a { padding: 10px; }\n", b"a { padding: 10; }\n"),
        (b"a { padding: 10; }\n", b"a { padding: 10px; }\n"),
    ],
)
def test_a_node_that_loses_or_gains_its_only_child_next_to_the_change(before, after) -> None:
    """CSS reads `10px` as a number whose one child is the unit: without `px` the number
    itself is a token, with it only the unit is, though the bytes `10` did not change
    and tree-sitter reports no changed range over them."""
    at = before.index(b"10") + 2
    splices = [(at, at + 2, b"")] if len(before) > len(after) else [(at, at, b"px")]
    got, expected = moved_in("css", before, splices)
    assert got == expected
