"""Syntax-guided passes, observed through reduce_program: hoisting, list separators, validity."""

from __future__ import annotations

import itertools
import re
import time

import pytest
from support import (
    GATED_ONLY,
    LOOKAHEAD_PROGRAMS,
    calls,
    nodes,
    parses_cleanly,
    reduce_text,
    replayed,
)

from gitreduce.core import tickets
from gitreduce.core.current import Current
from gitreduce.core.engine import Engine
from gitreduce.core.outcome import Outcome, Verdict
from gitreduce.lang import grammars
from gitreduce.lang.syntax import Parsed, Syntax
from gitreduce.passes.catalog import Catalog, catalog_of
from gitreduce.passes.tree import TreeReducer, list_units, operand_units

RETURN_KINDS = {"return_statement", "return_expression"}

HOIST_PROGRAMS = {
    "c": b"int f(int a, int b, int c) {\n    return a + (b * c);\n}\n",
    "python": b"def f(a, b, c):\n    return a + (b * c)\n",
    "javascript": b"function f(a, b, c) {\n  return a + (b * c);\n}\n",
    "rust": b"fn f(a: i32, b: i32, c: i32) -> i32 {\n    return a + (b * c);\n}\n",
}


def returned(language: str, text: bytes) -> list[bytes]:
    """The expressions of all return statements."""
    found = []
    for node in nodes(language, text):
        if node.type in RETURN_KINDS and node.named_child_count:
            found.append(node.named_children[0].text)
    return found


def returns_something_with_c(language: str):
    def predicate(text: bytes) -> bool:
        return parses_cleanly(language, text) and any(
            re.search(rb"\bc\b", expression) for expression in returned(language, text)
        )

    return predicate


@pytest.mark.parametrize("language", HOIST_PROGRAMS)
def test_hoisting_replaces_an_expression_by_the_needed_descendant(language):
    program = HOIST_PROGRAMS[language]
    result = reduce_text(program, language, returns_something_with_c(language))
    assert returned(language, result.text) == [b"c"]
    # the tree pass did it in one replacement: `a + (b * c)` straight to `c`
    steps = list(zip(result.passes, [program, *result.accepted][:-1], result.accepted, strict=True))
    assert any(
        pass_name == "tree" and b"a + (b * c)" in before and returned(language, after) == [b"c"]
        for pass_name, before, after in steps
    ), steps


def test_hoisting_through_several_levels():
    program = b"int g(int c) {\n    return f(1, g(2 + (3 * h(c))), 4) - 5;\n}\n"
    result = reduce_text(program, "c", returns_something_with_c("c"))
    assert returned("c", result.text) == [b"c"]


ARGUMENT_PROGRAMS = {
    "c": b"void g(void) {\n    foo(alpha, beta, gamma, delta, epsilon);\n}\n",
    "python": b"def g():\n    foo(alpha, beta, gamma, delta, epsilon)\n",
    "javascript": b"function g() {\n  foo(alpha, beta, gamma, delta, epsilon);\n}\n",
    "rust": b"fn g() {\n    foo(alpha, beta, gamma, delta, epsilon);\n}\n",
}


@pytest.mark.parametrize("language", ARGUMENT_PROGRAMS)
@pytest.mark.parametrize(
    "keep",
    [("beta", "delta"), ("alpha",), ("epsilon",), ("alpha", "epsilon"), ("gamma",), ()],
    ids=lambda keep: "+".join(keep) or "none",
)
def test_argument_lists_keep_valid_commas(language, keep):
    needed = [word.encode() for word in keep]

    def predicate(text: bytes) -> bool:
        return calls(language, b"foo")(text) and all(
            re.search(rb"\b" + word + rb"\b", text) for word in needed
        )

    result = reduce_text(ARGUMENT_PROGRAMS[language], language, predicate)
    assert predicate(result.text)
    assert parses_cleanly(language, result.text)
    expected = rb"foo\(\s*" + rb"\s*,\s*".join(needed) + rb"\s*\)"
    assert re.search(expected, result.text), result.text
    for word in [b"alpha", b"beta", b"gamma", b"delta", b"epsilon"]:
        if word not in needed:
            assert word not in result.text


@pytest.mark.parametrize(
    ("language", "program", "needed", "expected"),
    [
        ("c", b"int a, b, c;\n", rb"int[^;]*\bb\b", rb"^int +b;$"),
        ("c", b"int v[] = {1, 2, 3, 42, 5};\n", rb"v\[\] = \{.*42", rb"^int v\[\] = \{ *42\};$"),
        ("python", b"x = [1, 2, 3, 42, 5]\n", rb"x = \[.*42", rb"^x = \[ *42\]$"),
        ("javascript", b"x = {a: 1, b: 42, c: 3};\n", rb"x = \{.*42", rb"^x = \{ *b: 42\};?$"),
        # tree-sitter (unlike rustc) accepts a parameter without a name, and a
        # bodiless `fn f();` (valid in traits)
        (
            "rust",
            b"fn f(a: i32, b: u8, c: i64) {}\n",
            rb"fn f\(.*u8",
            rb"^fn f\( *(b: *)?u8\) (\{\}|;)$",
        ),
    ],
)
def test_other_lists_keep_valid_separators(language, program, needed, expected):
    def predicate(text: bytes) -> bool:
        return parses_cleanly(language, text) and re.search(needed, text) is not None

    result = reduce_text(program, language, predicate)
    assert re.search(expected, result.text.strip()), result.text
    assert not re.search(rb",\s*[,)\]}]|[(\[{]\s*,", result.text)


def test_original_with_syntax_errors_may_keep_them_but_not_add():
    program = b"int main(void) {\n    int x = ;\n    foo(1, 2);\n    return 0;\n}\n"
    grammar = grammars.load("c")
    syntax = Syntax(grammar, program)
    assert syntax.baseline_errors >= 1
    result = reduce_text(program, "c", lambda text: b"foo" in text, skipped_passes=GATED_ONLY)
    assert b"foo" in result.text
    assert len(result.text) < len(program) / 2
    assert all(syntax.acceptable(text) for text in result.tested)


def test_acceptable_rejects_new_errors():
    grammar = grammars.load("c")
    syntax = Syntax(grammar, b"int x = 1;\n")
    assert syntax.baseline_errors == 0
    assert syntax.acceptable(b"int x;\n")
    assert not syntax.acceptable(b"int x = ;\n")
    assert not syntax.acceptable(b"int x = (1;\n")


def test_an_empty_python_body_is_an_error_though_tree_sitter_parses_it():
    """tree-sitter-python gives `def f():` with nothing under it an empty block and no
    error; Python says "expected an indented block", so no test is spent on it."""
    syntax = Syntax(grammars.load("python"), b"def f():\n    pass\n\nf()\n")
    assert syntax.baseline_errors == 0
    assert not syntax.acceptable(b"def f():\n\nf()\n")
    assert not syntax.acceptable(b"if x:\n    y()\nelse:\n\nz()\n")
    assert syntax.acceptable(b"def f():\n    f\n\nf()\n")


def test_a_reduced_python_body_keeps_a_statement():
    program = b"def helper(a, b):\n    total = a * b\n    return total\n\n\nhelper(1, 2)\n"

    def predicate(text: bytes) -> bool:
        return (
            parses_cleanly("python", text)
            and b"def helper" in text
            and re.search(rb"^helper\(", text, re.M) is not None
        )

    result = reduce_text(program, "python", predicate)
    assert Syntax(grammars.load("python"), program).acceptable(result.text), result.text
    assert re.fullmatch(rb"def helper\(\):\n    \S.*\n+helper\(\)\n", result.text), result.text


# --- the units the tree pass deletes -----------------------------------------------------


def first_node(language: str, text: bytes, kind: str):
    return next(node for node in nodes(language, text) if node.type == kind)


def spans(text: bytes, units) -> list[tuple[bytes, bytes | None]]:
    return [
        (
            text[unit.start : unit.end],
            text[unit.separator[0] : unit.separator[1]] if unit.separator else None,
        )
        for unit in units
    ]


def test_list_units_own_the_comma_after_them():
    text = b"int main(void) { f(a, b, c); }"
    arguments = first_node("c", text, "argument_list")
    assert spans(text, list_units(arguments)) == [(b"a", b","), (b"b", b","), (b"c", None)]


def test_a_terminating_semicolon_is_no_separator():
    text = b"int a, b;"
    declaration = first_node("c", text, "declaration")
    assert spans(text, list_units(declaration)) == [(b"int", None), (b"a", b","), (b"b", None)]


def test_semicolons_between_elements_are_separators():
    text = b"struct s { int a; int b; };"
    fields = first_node("c", text, "field_declaration_list")
    assert [t for t, _ in spans(text, list_units(fields))] == [b"int a;", b"int b;"]


def test_operand_units_take_the_operator_along():
    text = b"int x = a + b;"
    binary = first_node("c", text, "binary_expression")
    assert spans(text, operand_units(binary)) == [(b"+ b", None)]
    enum_text = b"enum e { ENUM_A, ENUM_B = 1 };"
    enumerator = [n for n in nodes("c", enum_text) if n.type == "enumerator"][1]
    assert spans(enum_text, operand_units(enumerator)) == [(b"= 1", None)]


def test_operand_units_leave_brackets_and_separators_alone():
    text = b"int main(void) { f(a, b); }"
    arguments = first_node("c", text, "argument_list")
    assert operand_units(arguments) == []


UNWRAP_PROGRAM = b"""def f(items):
    total = 0
    for item in items:
        if item > 2:
            print("big", item)
            for part in item:
                total = total + part
        else:
            pass
    return total
"""


def test_an_indented_body_is_unwrapped_whole_and_dedented():
    """The two needed statements sit in a loop and a condition whose bodies are no
    statements: hoisting one statement would lose the other, so the body goes up whole,
    its nested loop keeping its own indentation relative to it."""

    def predicate(text: bytes) -> bool:
        return (
            parses_cleanly("python", text)
            and b'print("big", item)' in text
            and re.search(rb"\n( *)for part in item:\n\1    total = total \+ part", text)
            is not None
        )

    result = reduce_text(UNWRAP_PROGRAM, "python", predicate)
    assert result.text.strip() == (
        b'print("big", item)\nfor part in item:\n    total = total + part'
    ), result.text


def test_a_body_with_a_line_less_indented_than_itself_stays_wrapped():
    """A string's continuation line is not indentation: deleting "its" indent would
    change the string, so that body is not unwrapped (and nothing breaks)."""
    program = b'if x:\n    y = """a\nb"""\n    z = 1\n'

    def predicate(text: bytes) -> bool:
        return parses_cleanly("python", text) and b'"""a\nb"""' in text and b"z = 1" in text

    result = reduce_text(program, "python", predicate)
    assert b'"""a\nb"""' in result.text and parses_cleanly("python", result.text)


@pytest.mark.parametrize("language", LOOKAHEAD_PROGRAMS)
def test_a_sweeps_lookahead_is_what_it_tries_next_when_nothing_is_taken(language):
    """At one job, after every batch of the tree pass that took nothing, the candidates
    read next (until one is taken) begin with its lookahead, byte for byte: so a warm-up
    at two jobs tests what the next batch asks for."""
    compared = replayed(language).lookaheads_compared().get("tree", 0)
    assert compared >= 50, compared


@pytest.mark.parametrize("language", LOOKAHEAD_PROGRAMS)
def test_what_a_sweep_says_follows_a_winner_is_what_it_reads_next(language):
    """At one job, after every batch of the tree pass with a winner, the candidates read
    next begin with what the batch's caller said it tries after that winner, byte for
    byte: so a bet on a winner still running, at two jobs, tests what is asked next."""
    engine = replayed(language)
    compared = 0
    for position, following in enumerate(engine.after_winners):
        if not following:
            continue
        _, read, _, _ = engine.batches[position + 1]
        length = min(len(following), len(read))
        assert read[:length] == following[:length], position
        compared += length
    assert compared >= 10, compared


NESTING = 400
NEEDED = 10
# Each program nests one construct NESTING deep; the test wants at least NEEDED levels
NESTED_PROGRAMS = {
    "c": (b"int main() { return " + b"(" * NESTING + b"1" + b")" * NESTING + b"; }\n", b"(", b"1"),
    "python": (b"print(" + b"f(" * NESTING + b"x" + b")" * NESTING + b")\n", b"f(", b"x"),
    "javascript": (b"g(" + b"[" * NESTING + b"1" + b"]" * NESTING + b");\n", b"[", b"1"),
    "rust": (b"fn main() { let x = " + b"-" * NESTING + b"1; }\n", b"-", b"1"),
}


@pytest.mark.parametrize("language", NESTED_PROGRAMS)
def test_a_deep_nesting_shrinks_by_halves_to_the_depth_the_test_needs(language):
    """A parser's stack overflow needs its nesting deep, and no deeper than it is: the
    reduction must find that depth. Hoisting looks four levels down, so before, a chain of
    400 levels took over 100 accepted hoists, a test each; the top of the chain now also
    offers the nodes 8, 16, 32, ... levels down, deepest first (tests: C 146 -> 52, Python
    442 -> 56, JavaScript 161 -> 66, Rust 196 -> 102)."""
    program, opener, inner = NESTED_PROGRAMS[language]
    needed = opener * NEEDED + inner

    def predicate(text: bytes) -> bool:
        return parses_cleanly(language, text) and needed in text

    result = reduce_text(program, language, predicate)
    assert needed in result.text and opener * (NEEDED + 1) + inner not in result.text
    # about log2(NESTING) accepted hoists, not NESTING / 4
    assert result.stats.of_pass("tree").successes <= 2 * NESTING.bit_length()


SENTINEL = b"int sentinel;\n"


PROGRAM = b"int f(int a) { return a; }\nint main(void) { return f(1); }\n"


@pytest.mark.parametrize(
    ("bad", "swept_again", "taken", "sentinel_tested"),
    [
        (lambda text: text == PROGRAM, True, False, True),
        (lambda text: b"int f(int a" in text, True, True, False),
        (lambda text: b"int f(int a" in text, False, True, True),
    ],
    ids=["nothing-taken", "something-taken", "something-taken-one-sweep"],
)
def test_a_sweep_ending_as_it_began_warms_up_what_its_caller_tries_next(
    bad, swept_again, taken, sentinel_tested
):
    """At one job, the sweep's last batch takes `then` (the schedule's next pass) as the end
    of its lookahead when the sweep has taken nothing: the job whose last candidate
    refuses goes on with it. A sweep that took something is followed by another sweep
    (`next_sweep`), not by `then`, so nothing of it is tested; unless no sweep follows
    (a caller that sweeps once a round), and then `then` is what comes next."""
    tests: list[bytes] = []

    def run(text: bytes) -> Outcome:
        tickets.test_under_way()
        tests.append(text)
        time.sleep(0.02)
        return Outcome(Verdict.BAD, 1, 0.0) if bad(text) else Outcome(Verdict.GOOD, 0, 0.0)

    grammar = grammars.load("c")
    assert grammar is not None
    engine = Engine(run, lambda outcome: outcome.verdict is Verdict.BAD, jobs=1)
    current = Current(PROGRAM, engine, Syntax(grammar, PROGRAM))
    assert current.parsed is not None
    try:
        catalog = Catalog(grammar).extended(current.parsed)
        again = (lambda swept: TreeReducer(swept, catalog)) if swept_again else None
        progress = TreeReducer(current, catalog, then=lambda: [SENTINEL], next_sweep=again).sweep()
        deadline = time.monotonic() + 10
        while engine._jobs.busy() and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        engine.close()
    assert progress is taken
    assert (SENTINEL in tests) is sentinel_tested


def _two_sweeps(warm: bool) -> tuple[int, bytes]:
    """Two sweeps over `PROGRAM` at one job, the first taking something; with `warm` its
    last batch looks ahead to the second. How many tests the second ran, and the text."""
    tests: list[bytes] = []

    def run(text: bytes) -> Outcome:
        tickets.test_under_way()
        tests.append(text)
        time.sleep(0.02)
        bad = b"int f(int a" in text
        return Outcome(Verdict.BAD, 1, 0.0) if bad else Outcome(Verdict.GOOD, 0, 0.0)

    grammar = grammars.load("c")
    assert grammar is not None
    engine = Engine(run, lambda outcome: outcome.verdict is Verdict.BAD, jobs=1)
    current = Current(PROGRAM, engine, Syntax(grammar, PROGRAM))

    def reducer(swept: Current) -> TreeReducer:
        assert swept.parsed is not None
        catalog = Catalog(grammar).extended(swept.parsed)
        return TreeReducer(swept, catalog, next_sweep=reducer if warm else None)

    try:
        assert reducer(current).sweep()
        deadline = time.monotonic() + 10
        while engine._jobs.busy() and time.monotonic() < deadline:
            time.sleep(0.01)
        tested_by_the_first = len(tests)
        reducer(current).sweep()
    finally:
        engine.close()
    return len(tests) - tested_by_the_first, current.text


def test_a_sweep_that_shrank_the_text_warms_up_the_next_sweep():
    """At one job, the last batch of a sweep that took something looks ahead to the sweep
    its caller runs next (`next_sweep`): the job its last refusal frees tests that sweep's
    first candidates before the sweep returns, so the next sweep runs fewer tests of its
    own, and ends on the same text."""
    warmed, warmed_text = _two_sweeps(warm=True)
    cold, cold_text = _two_sweeps(warm=False)
    assert warmed < cold
    assert warmed_text == cold_text


def walks_of_trees(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """The texts catalogs walk the trees of (`Catalog.learn`) from now on, in order."""
    walks: list[bytes] = []
    learn = Catalog.learn

    def counted(catalog: Catalog, parsed: Parsed, *, phrases: bool = True) -> None:
        walks.append(parsed.text)
        learn(catalog, parsed, phrases=phrases)

    monkeypatch.setattr(Catalog, "learn", counted)
    return walks


def test_a_catalog_extended_by_the_text_it_learnt_walks_no_tree_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A first sweep starts from the very text its program's catalog was learnt from: the
    copy it gets offers the same phrases without a second walk of the tree; a text the
    reduction changed is learnt as before."""
    grammar = grammars.load("c")
    assert grammar is not None
    text = b"int f(int a) { return a + 1; }\nint g(void) { return f(2) * 3; }\n"
    syntax = Syntax(grammar, text)
    original = Catalog(grammar)
    original.learn(syntax.parse(text))
    walks = walks_of_trees(monkeypatch)
    again = original.extended(syntax.parse(bytes(text)))  # equal, not the same object
    assert walks == []
    kinds = ("number_literal", "binary_expression", "return_statement")
    for kind in kinds:
        assert again.for_kind(kind) == original.for_kind(kind)
    reduced = text.replace(b" * 3", b"")
    original.extended(syntax.parse(reduced))
    assert walks == [reduced]


def test_a_texts_catalog_is_learnt_once_and_each_caller_gets_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A session learns its original's catalog while the test calibrates; the program's
    first catalog is then that one, without a second walk, and a copy of its own: what
    one caller adds (a pair's slots) the next does not see."""
    grammar = grammars.load("c")
    assert grammar is not None
    text = b"int f(int a) { return a + 1; }\nstruct s { int x; };\n"
    parsed = Syntax(grammar, text).parse(text)
    first = catalog_of(grammar, parsed)
    walks = walks_of_trees(monkeypatch)
    second = catalog_of(grammar, Syntax(grammar, text).parse(bytes(text)))
    assert walks == []
    assert second is not first and second.for_kind("number_literal") == first.for_kind(
        "number_literal"
    )
    assert not second.compatible("number_literal", "struct_specifier")
    other = Catalog(grammar)
    other._slots = {
        kind: {("field_expression", "argument")} for kind in ("number_literal", "struct_specifier")
    }
    first.share_slots(other)
    assert first.compatible("number_literal", "struct_specifier")
    assert not catalog_of(grammar, parsed).compatible("number_literal", "struct_specifier")


NESTED = (
    b"int g(int x) { return x; }\n"
    b"int f(int a, int b) {\n"
    b"    if (a) { while (b) { b = g(g(a + (b * 2))); } }\n"
    b"    h(1, 2, 3);\n"
    b"    return a;\n"
    b"}\n"
)


class _Observed(Current):
    """A current that keeps, for every batch it sends, its candidates, the one taken and,
    for each of them, the first candidates the sweep says it tries next should that one
    win (`after`, read while the batch is the sweep's, as a bet reads it)."""

    batches: list[tuple[list[bytes], list[list[bytes]], int | None]]

    def try_candidates(self, candidates, lookahead=None, after=None):
        read = list(candidates)
        following = [
            [] if after is None else list(itertools.islice(after(index), 3))
            for index in range(len(read))
        ]
        taken = super().try_candidates(read, lookahead, after)
        self.batches.append((read, following, taken))
        return taken


def test_what_a_sweep_tries_after_each_winner_is_what_its_bets_read():
    """A bet on a running candidate tests what the sweep says it tries next should that
    one win: for every winner of a sweep, a hoist (`g(g(a + (b * 2)))` by `a`) or a
    deletion that ends ddmin on a node (`h(1, 2, 3)`'s arguments, all at once), those are
    the candidates the sweep sends next, up to its next winner. Before, a hoist's winner
    and ddmin's last had none, and a free job beside their test went on with candidates
    that only count if it loses."""
    grammar = grammars.load("c")
    assert grammar is not None

    def run(text: bytes) -> Outcome:
        frame = all(
            part in text for part in (b"int f(int a, int b) {", b"while (b)", b"h(", b"return a;")
        )
        kept = frame and (b"b = g(" in text or b"b = a;" in text)
        bad = kept and parses_cleanly("c", text)
        return Outcome(Verdict.BAD, 1, 0.0) if bad else Outcome(Verdict.GOOD, 0, 0.0)

    engine = Engine(run, lambda outcome: outcome.verdict is Verdict.BAD, jobs=1)
    current = _Observed(NESTED, engine, Syntax(grammar, NESTED))
    current.batches = []
    assert current.parsed is not None
    try:
        catalog = Catalog(grammar).extended(current.parsed)
        assert TreeReducer(current, catalog).sweep()
    finally:
        engine.close()
    checked = hoists = 0
    before = NESTED
    for position, (read, following, taken) in enumerate(current.batches):
        if taken is None:
            continue
        hoists += b"b = g(" in before and b"b = a;" in read[taken]
        before = read[taken]
        sent_next: list[bytes] = []
        for later, _, later_taken in current.batches[position + 1 :]:
            sent_next += later if later_taken is None else later[: later_taken + 1]
            if later_taken is not None or len(sent_next) >= 3:
                break
        expected = following[taken]
        assert expected or not sent_next, f"nothing to bet on after {read[taken]!r}"
        assert sent_next[: len(expected)] == expected[: len(sent_next)]
        checked += bool(sent_next)
    assert checked >= 3
    assert hoists == 1
    assert b"b = a;" in current.text
    assert b"h();" in current.text
