"""The syntax check: incremental verdicts are the full parse's verdicts, and splices are exact.

`Syntax.acceptable` with a parent re-parses the parent's tree where the
candidate differs; the verdict must be the one a full parse gives (ERROR and
MISSING nodes against the original's count, empty Python blocks as errors).
The reference here is that definition computed from scratch on a fresh parse,
on deletions and replacements of real programs in several languages, some of
them with syntax errors in the original.
"""

from __future__ import annotations

import itertools
import random
from functools import cache
from pathlib import Path

import pytest
import tree_sitter
from hypothesis import given, settings
from hypothesis import strategies as st

from gitreduce.core import edits
from gitreduce.core.current import render_deletions
from gitreduce.lang import grammars
from gitreduce.lang.syntax import (
    Syntax,
    count_errors,
    empty_blocks,
    leaf_spans,
    leaves,
    splices_between,
)

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "benchmarks" / "cases"

# An empty body near the top of a Python program: one error (Python's, not tree-sitter's)
# before everything a change may touch.
_EMPTY_BODY = b"def unfinished():\n\n"


def _python_with_an_error() -> bytes:
    program = (ROOT / "fixtures" / "generator" / "gen_c.py").read_bytes()
    cut = program.index(b"\ndef ") + 1
    return program[:cut] + _EMPTY_BODY + program[cut:]


PROGRAMS = {
    # C with two ERROR nodes in the original (a vector attribute tree-sitter-c misreads)
    "c-errors": ("c", lambda: (CASES / "gcc12-pr109392" / "variant.c").read_bytes()),
    "c": ("c", lambda: (CASES / "toy-gcc-pattern" / "variant.c").read_bytes()),
    "cpp": ("cpp", lambda: (CASES / "gxx12-pr109804" / "variant.cpp").read_bytes()),
    "rust": ("rust", lambda: (CASES / "rustc195-105238" / "variant.rs").read_bytes()),
    "python": ("python", lambda: (ROOT / "fixtures" / "generator" / "gen_c.py").read_bytes()),
    "python-errors": ("python", _python_with_an_error),
}


@cache
def program(name: str) -> tuple[Syntax, bytes, list[tuple[int, int]]]:
    """The program's syntax check (its tree kept), its text, and its nodes' spans."""
    language, read = PROGRAMS[name]
    grammar = grammars.load(language)
    assert grammar is not None
    text = read()
    syntax = Syntax(grammar, text)
    spans = sorted({(node.start_byte, node.end_byte) for node in _nodes(syntax.parse(text).tree)})
    return syntax, text, spans


def _nodes(tree: tree_sitter.Tree) -> list[tree_sitter.Node]:
    found, pending = [], [tree.root_node]
    while pending:
        node = pending.pop()
        if node.end_byte > node.start_byte:
            found.append(node)
        pending.extend(node.children)
    return found


def defects(grammar: grammars.Grammar, text: bytes) -> int:
    """The check's measure, from a fresh parse: ERROR and MISSING nodes, and in Python
    empty blocks too."""
    root = grammar.parser().parse(text).root_node
    count = count_errors(root)
    if grammar.name == "python":
        count += empty_blocks(root)
    return count


@cache
def baseline(name: str) -> int:
    syntax, original, _ = program(name)
    return defects(syntax.grammar, original)


def reference(name: str, text: bytes) -> bool:
    """The full parse's verdict: no more errors than the original program."""
    return defects(program(name)[0].grammar, text) <= baseline(name)


@st.composite
def candidates(draw: st.DrawFn, name: str, parent: bytes | None = None) -> edits.Rendered:
    """A candidate of the kinds passes make: nodes deleted (with the usual widening to
    lines and joined ranges), one node replaced by another's text, or a byte range cut."""
    syntax, text, spans = program(name)
    if parent is not None:
        text = parent
        spans = sorted({(n.start_byte, n.end_byte) for n in _nodes(syntax.parse(text).tree)})
    kind = draw(st.sampled_from(["nodes", "replace", "bytes"]))
    if kind == "nodes":
        chosen = draw(st.lists(st.sampled_from(spans), min_size=1, max_size=12))
        kept: list[tuple[int, int]] = []
        for start, end in sorted(chosen):
            if not kept or start >= kept[-1][1]:
                kept.append((start, end))
        rendered = render_deletions(text, kept)
        assert isinstance(rendered, edits.Rendered)
        return rendered
    if kind == "replace":
        (start, end), (inner_start, inner_end) = draw(
            st.tuples(st.sampled_from(spans), st.sampled_from(spans))
        )
        return edits.apply(text, [edits.Edit(start, end, text[inner_start:inner_end])])
    start = draw(st.integers(0, len(text) - 1))
    length = draw(st.integers(1, 80))
    return render_deletions(text, [(start, min(len(text), start + length))])


def _agree(name: str, candidate: edits.Rendered) -> None:
    syntax = program(name)[0]
    expected = reference(name, bytes(candidate))
    assert syntax.acceptable(candidate, candidate.base, candidate.splices) is expected
    assert syntax.acceptable(bytes(candidate), candidate.base) is expected  # splices found
    assert syntax.acceptable(bytes(candidate)) is expected  # a full parse


@pytest.mark.parametrize("name", PROGRAMS)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_incremental_verdicts_are_the_full_parses(name, data):
    _agree(name, data.draw(candidates(name)))


@pytest.mark.parametrize("name", ["c-errors", "python-errors", "cpp"])
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_candidates_of_an_accepted_candidate(name, data):
    """The parent is itself a reduced text (its tree from a full parse, as `Current` keeps it)."""
    first = data.draw(
        candidates(name).filter(lambda text: len(text) > 100 and reference(name, bytes(text)))
    )
    _agree(name, data.draw(candidates(name, bytes(first))))


@pytest.mark.parametrize("name", PROGRAMS)
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_a_text_the_gate_let_through_parses_to_the_tree_a_full_parse_gives(name, data):
    """`parse` takes the gate's tree of a text it let through (no second parse of the
    text a pass then adopts), or for the original itself the tree its baseline was
    counted on, and that tree is the one a fresh parse builds.

    A check of its own for each example: a text an earlier example parsed is remembered
    with that parse's tree, which `parse` rightly returns instead."""
    shared, original, _ = program(name)
    syntax = Syntax(shared.grammar, original)
    candidate = data.draw(candidates(name))
    passed = syntax.acceptable(candidate, candidate.base, candidate.splices)
    parsed = syntax.parse(bytes(candidate))
    fresh = syntax.grammar.parser().parse(bytes(candidate))
    assert str(parsed.tree.root_node) == str(fresh.root_node)
    assert [leaf.start_byte for leaf in leaves(fresh)] == parsed.token_starts
    assert [leaf.end_byte for leaf in leaves(fresh)] == parsed.token_ends
    if bytes(candidate) == original:
        assert parsed.tree is syntax.parse(original).tree
    elif passed and not fresh.root_node.has_error:
        assert parsed.tree is syntax.passed_tree(bytes(candidate))


def test_the_original_is_parsed_once_for_its_baseline_and_its_first_reduction() -> None:
    """The tree the baseline's errors were counted on is the one the reduction starts from:
    the original is not parsed a second time (18 ms on 23,000 C tokens)."""
    syntax, original, _ = program("c-errors")
    first = syntax.parse(original)
    assert first.tree is syntax.parse(bytes(original)).tree
    fresh = syntax.grammar.parser().parse(original)
    assert str(first.tree.root_node) == str(fresh.root_node)


def test_an_error_before_the_change_is_counted_from_the_parent():
    program = b"int a = ;\nint b;\nint c;\nint d;\nint f(void) { return 1; }\nint g;\n"
    syntax = Syntax(grammars.load("c"), program)
    assert syntax.baseline_errors == 1
    syntax.parse(program)
    for start, end in [(43, 53), (49, 53), (58, 64)]:  # `return 1;`, `1`, `int g;`
        candidate = render_deletions(program, [(start, end)])
        expected = defects(syntax.grammar, candidate) <= 1
        assert syntax.acceptable(candidate, program, candidate.splices) is expected


def test_a_missing_token_at_the_top_level_is_an_error():
    """tree-sitter puts `(MISSING ";")` among the top-level items, where sibling links skip it."""
    program = b"#include <stdio.h>\n\nstruct point { int x; };\n\nint main(void) { return 0; }\n"
    syntax = Syntax(grammars.load("c"), program)
    cut = program.index(b";\n\nint main")
    candidate = render_deletions(program, [(cut, len(program) - 1)])
    assert candidate == b"#include <stdio.h>\n\nstruct point { int x; }\n"
    assert not syntax.acceptable(candidate, program, candidate.splices)
    assert not syntax.acceptable(bytes(candidate))


def test_an_empty_python_body_made_by_a_deletion_is_an_error():
    program = b"def f():\n    return 1\n\n\ndef g():\n    return 2\n\n\ng()\n"
    syntax = Syntax(grammars.load("python"), program)
    candidate = render_deletions(program, [(program.index(b"return 2"), program.index(b"2\n") + 1)])
    assert not syntax.acceptable(candidate, program, candidate.splices)
    whole = render_deletions(program, [(program.index(b"def g"), program.rindex(b"g()"))])
    assert syntax.acceptable(whole, program, whole.splices)


def test_splices_of_a_known_text_only():
    """A parent the check has not seen is parsed once and kept for the next candidates."""
    program = b"int x = 1;\nint y = 2;\n"
    syntax = Syntax(grammars.load("c"), program)
    assert syntax.acceptable(b"int x = 1;\n", program)
    assert not syntax.acceptable(b"int x = 1;\nint y = ;\n", program)
    assert syntax.acceptable(program, program)


def apply_splices(old: bytes, splices: list[tuple[int, int, bytes]]) -> bytes:
    out, position = [], 0
    for start, end, inserted in splices:
        assert position <= start <= end <= len(old)
        out += [old[position:start], inserted]
        position = end
    return b"".join([*out, old[position:]])


@st.composite
def edited(draw: st.DrawFn) -> tuple[bytes, bytes]:
    """A text and a copy with some spans cut out or replaced, in a small alphabet so that
    false agreements (repeated text) are common."""
    old = draw(st.binary(max_size=400).map(lambda raw: bytes(b % 4 + 97 for b in raw)))
    new = old
    for _ in range(draw(st.integers(0, 6))):
        start = draw(st.integers(0, len(new)))
        end = draw(st.integers(start, min(len(new), start + 60)))
        inserted = draw(st.sampled_from([b"", b" ", b"ab", b"dcba" * 3]))
        new = new[:start] + inserted + new[end:]
    return old, new


@settings(max_examples=400, deadline=None)
@given(edited())
def test_splices_turn_the_old_text_into_the_new(pair):
    old, new = pair
    splices = splices_between(old, new)
    assert apply_splices(old, splices) == new
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(splices))


def test_splices_of_a_few_deletions_are_the_deletions():
    old = random.Random(1).randbytes(2048)
    new = old[:100] + old[300:1000] + old[1010:]
    assert splices_between(old, new) == [(100, 300, b""), (1000, 1010, b"")]
    assert splices_between(old, old) == []


def test_rendered_splices_say_what_was_written():
    """Including the space a deletion leaves between two words, which `edits` leave out."""
    text = b"foo+bar+baz = 1;"
    rendered = edits.apply(text, [edits.Edit(3, 8), edits.Edit(14, 15, b"22")])
    assert rendered == b"foo baz = 22;"
    assert rendered.splices == ((3, 8, b" "), (14, 15, b"22"))
    assert apply_splices(text, list(rendered.splices)) == rendered


def test_an_error_no_child_list_shows_counts_as_the_full_check_counts_it():
    """`#include` without its path: tree-sitter-c flags an error, but the MISSING token is in
    no child list, so the count (and the full check) finds none; so must the incremental one."""
    program = b"#include <stdint.h>\n\nuint8_t g;\n"
    syntax = Syntax(grammars.load("c"), program)
    candidate = render_deletions(program, [(9, 19)])
    assert candidate == b"#include \n\nuint8_t g;\n"
    assert syntax.acceptable(bytes(candidate)) is True
    assert syntax.acceptable(candidate, program, candidate.splices) is True


# Comments of every kind the grammars name: line, block and doc comments (whose markers and
# bodies are nodes of their own in Rust), in the middle of code.
_COMMENTED = {
    "c": b"int f(void) { /* block */ return 1; // line\n}\n",
    "cpp": b"/// doc\nint f() { /* a */ return 1; } // b\n",
    "rust": (
        b"//! inner doc\n/// outer doc\nfn f() -> u8 { /* block */ 1 } // line\n"
        b"/** b */ fn g() {}\n"
    ),
    "python": b"# top\ndef f():  # trailing\n    return 1\n",
}


@pytest.mark.parametrize("name", [*PROGRAMS, *(f"commented-{lang}" for lang in _COMMENTED)])
def test_leaf_spans_are_the_spans_of_the_leaves(name):
    """The token spans read by kind number are those `leaves` gives, which leaves out the
    nodes whose kind names a comment."""
    if name.startswith("commented-"):
        language = name.removeprefix("commented-")
        text = _COMMENTED[language]
    else:
        language, read = PROGRAMS[name]
        text = read()
    grammar = grammars.load(language)
    assert grammar is not None
    tree = grammar.parser().parse(text)
    tokens = leaves(tree)
    assert leaf_spans(tree) == ([t.start_byte for t in tokens], [t.end_byte for t in tokens])


class _CountingSyntax(Syntax):
    """A syntax check that counts the verdicts it works out (each a parse)."""

    verdicts = 0

    def acceptable(self, text, parent=None, splices=None):
        self.verdicts += 1
        return super().acceptable(text, parent, splices)


def test_check_remembers_what_it_accepted_and_nothing_it_refused():
    grammar = grammars.load("c")
    assert grammar is not None
    original = b"int a;\nint f(void) { return a; }\n"
    syntax = _CountingSyntax(grammar, original)
    kept, broken = b"int f(void) { return 1; }\n", b"int a;\nint f(void) { return a;\n"
    assert syntax.check(kept, original) and syntax.check(kept, original)
    assert syntax.check(bytes(kept)) and syntax.verdicts == 1  # with or without a parent
    assert not syntax.check(broken, original) and not syntax.check(broken, original)
    assert syntax.verdicts == 3
    syntax.tolerate(grammar.parser().parse(broken))  # a run took the text despite the grammar
    assert syntax.check(broken, original) and syntax.verdicts == 4


def test_a_text_made_from_one_parsed_lately_is_reparsed_to_the_full_parse() -> None:
    """`reparsed` re-reads only where the text differs from a parent parsed lately (a lifted
    seed from its reduced variant) and gives the full parse's tokens; nothing when the
    parent's tree is not kept, or where the re-parse has an error (recovery may differ)."""
    grammar = grammars.load("javascript")
    parent = b"function f(a) {\n  return a + 1;\n}\nconst x = f(2);\nlet y = x * 3;\n"
    syntax = Syntax(grammar, parent)
    syntax.parse(parent)
    made = parent.replace(b"a + 1", b"a - 1 - a").replace(b"x * 3", b"[x, 3]")
    parsed = syntax.reparsed(made, parent)
    assert parsed is not None
    fresh = grammar.parser().parse(made)
    assert str(parsed.tree.root_node) == str(fresh.root_node)
    assert (parsed.token_starts, parsed.token_ends) == leaf_spans(fresh)
    assert syntax.reparsed(made, b"let z = 0;\n") is None  # never parsed: no tree kept
    assert syntax.reparsed(parent.replace(b"a + 1", b"a + + ;"), parent) is None
