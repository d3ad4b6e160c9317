"""reduce_program end to end in process: C, Python, Rust, JavaScript, and plain text.

Each case is a small real program and a predicate; the checks are the
reducer's contract: the result is still interesting, never larger, a fixpoint
(reducing it again changes nothing), independent of the number of jobs, and
only syntactically acceptable candidates ever reach the test.
"""

from __future__ import annotations

import ast
import itertools
import re
import threading
import time
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import (
    GATED_ONLY,
    LOOKAHEAD_PROGRAMS,
    LookaheadLog,
    Predicate,
    calls,
    current_for,
    logged_reduction,
    make_engine,
    parses_cleanly,
    reduce_text,
    replayed,
)

from gitreduce.core import tickets
from gitreduce.core.current import Current, Unit, delete_units, first_then_delete_units
from gitreduce.core.engine import Engine
from gitreduce.core.outcome import Outcome, Verdict
from gitreduce.core.pass_runner import Pass
from gitreduce.lang import grammars
from gitreduce.lang.syntax import Syntax
from gitreduce.passes.schedule import (
    _GROUP_PASSES,
    FINAL,
    LATE,
    ROUND,
    Program,
    _in_order,
    finish_program,
    line_units,
    reduce_program,
    tidy,
    token_units,
)

C_PROGRAM = b"""#include <stdio.h>

struct point { int x; int y; };

static int scale(int a, int b) { return a * b + 3; }

int main(void) {
    int x = 1, y = 2, z = 3;
    struct point p = { 1, 2 };
    for (int i = 0; i < 10; i++) {
        x += scale(i, y);
        if (x > 5) {
            z = z * 2;
        }
    }
    x = y--;
    foo(p.x, z);
    printf("%d %d %d\\n", x, y, z);
    return 0;
}
"""

PYTHON_PROGRAM = b"""import os


def helper(a, b):
    total = 0
    for i in range(a):
        total += i * b
    return total


class Thing:
    def __init__(self, value):
        self.value = value

    def run(self):
        if self.value > 3:
            foo(self.value, helper(1, 2))
        return self.value


print(Thing(4).run(), os.sep)
"""

RUST_PROGRAM = b"""use std::collections::HashMap;

struct Point { x: i32, y: i32 }

fn helper(a: i32) -> i32 { a * 2 }

fn main() {
    let mut m = HashMap::new();
    let p = Point { x: 1, y: 2 };
    for i in 0..10 {
        m.insert(i, helper(i));
    }
    let q = foo(p.x, p.y, 3);
    println!("{} {}", m.len(), q);
}
"""

JS_PROGRAM = b"""const fs = require("fs");

function helper(a, b) {
  return a + b;
}

class Box {
  constructor(v) { this.v = v; }
  get() { return foo(this.v, helper(1, 2), [1, 2, 3]); }
}

for (let i = 0; i < 3; i++) {
  console.log(new Box(i).get(), fs.constants);
}
"""


# CPython 3.11 (3.11.7 here) can raise a spurious "AST constructor recursion depth
# mismatch" SystemError when threads build ASTs at once (python/cpython#106905), and
# the engine's jobs call the predicate from several threads: one compile at a time.
_COMPILING = threading.Lock()


def python_calls_foo(text: bytes) -> bool:
    """The real Python compiler must accept it, and it must call foo."""
    try:
        with _COMPILING:
            tree = ast.parse(text)
            compile(tree, "<candidate>", "exec")
    except (SyntaxError, ValueError):
        return False
    return any(
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "foo"
        for node in ast.walk(tree)
    )


def contains(needle: bytes) -> Predicate:
    return lambda text: needle in text


CASES = {
    "c-pattern": ("c", C_PROGRAM, contains(b"x = y--")),
    "c-call": ("c", C_PROGRAM, calls("c", b"foo")),
    "python-call": ("python", PYTHON_PROGRAM, python_calls_foo),
    "rust-call": ("rust", RUST_PROGRAM, calls("rust", b"foo")),
    "js-call": ("javascript", JS_PROGRAM, calls("javascript", b"foo")),
}


@pytest.fixture(scope="module")
def reductions():
    """Each case reduced with 1, 2 and 4 jobs (computed once, shared by the checks), with
    the passes the syntax check guards: the predicates here stand for compilers only as
    far as the grammar goes (the lenient pass meets real ones in test_lenient.py)."""
    cache: dict[tuple[str, int], object] = {}

    def get(name: str, jobs: int):
        if (name, jobs) not in cache:
            language, program, predicate = CASES[name]
            cache[name, jobs] = reduce_text(
                program, language, predicate, jobs=jobs, skipped_passes=GATED_ONLY
            )
        return cache[name, jobs]

    return get


@pytest.mark.parametrize("name", CASES)
def test_result_is_interesting_and_much_smaller(reductions, name):
    _, program, predicate = CASES[name]
    result = reductions(name, 1)
    assert predicate(result.text)
    assert len(result.text) < len(program) / 4
    assert result.stats.tests_run > 0


@pytest.mark.parametrize("name", CASES)
def test_every_accepted_step_is_smaller_and_interesting(reductions, name):
    _, program, predicate = CASES[name]
    result = reductions(name, 1)
    sizes = [len(program)] + [len(text) for text in result.accepted]
    assert all(later < earlier for earlier, later in itertools.pairwise(sizes))
    assert all(predicate(text) for text in result.accepted)
    assert result.accepted[-1] == result.text


@pytest.mark.parametrize("name", CASES)
def test_only_parsable_candidates_are_tested(reductions, name):
    language, program, _ = CASES[name]
    assert parses_cleanly(language, program)
    result = reductions(name, 2)
    assert result.tested
    bad = [text for text in result.tested if not parses_cleanly(language, text)]
    assert bad == []
    # and nothing was tested twice
    assert len(set(result.tested)) == len(result.tested)


@pytest.mark.parametrize("name", CASES)
def test_idempotent(reductions, name):
    language, _, predicate = CASES[name]
    once = reductions(name, 1).text
    again = reduce_text(once, language, predicate, skipped_passes=GATED_ONLY)
    assert again.text == once
    assert again.accepted == []


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("jobs", [2, 4])
def test_same_result_for_any_jobs(reductions, name, jobs):
    assert reductions(name, jobs).text == reductions(name, 1).text


def test_c_pattern_reduces_to_the_statement(reductions):
    assert reductions("c-pattern", 1).text.strip() == b"x = y--;"


def test_python_result_still_compiles(reductions):
    text = reductions("python-call", 1).text
    compile(text, "<reduced>", "exec")
    assert len(text.split()) <= 6, text


def test_original_left_unchanged_when_nothing_can_go():
    program = b"int main(void) { return foo(); }\n"

    def predicate(text: bytes) -> bool:
        return text == program or text == tidy(program)

    result = reduce_text(program, "c", predicate)
    assert result.text == program
    assert result.accepted == []


# --- the final newline -------------------------------------------------------------------

# R's grammar makes the newline ending a statement a token of its own, so the token pass
# deletes the file's last one like any other token
R_PROGRAM = b"y <- 2\nx <- 1/0\n"


def test_a_final_newline_deletions_took_is_put_back_when_the_test_agrees():
    result = reduce_text(R_PROGRAM, "r", lambda text: b"1/0" in text)
    assert result.text == b"1/0\n"
    assert result.passes[-1] == "newline"
    assert b"1/0" in result.accepted  # what the deletions left, before the newline came back


def test_a_final_newline_the_test_refuses_stays_away():
    def predicate(text: bytes) -> bool:  # the bug shows only without a final newline here
        return b"1/0" in text and (text == R_PROGRAM or not text.endswith(b"\n"))

    result = reduce_text(R_PROGRAM, "r", predicate)
    assert result.text == b"1/0"
    assert b"1/0\n" in result.tested  # tried, refused


@pytest.mark.parametrize("name", ["c-pattern", "python-call"])
def test_a_result_that_ends_with_a_newline_costs_no_test_more(reductions, name):
    result = reductions(name, 1)
    assert result.text.endswith(b"\n")
    assert "newline" not in result.stats.by_pass


def test_an_original_without_a_final_newline_gets_none():
    result = reduce_text(R_PROGRAM.rstrip(b"\n"), "r", lambda text: b"1/0" in text)
    assert result.text == b"1/0"
    assert "newline" not in result.stats.by_pass


def test_the_final_passes_can_wait_for_a_later_finish_that_knows_the_original_newline():
    """A file set stops each file's schedule before `FINAL` and runs it at the end: the
    newline comes back then, judged by what the original had, not the text left."""
    engine = make_engine(lambda text: b"1/0" in text, jobs=1)
    grammar = grammars.load("r")
    assert grammar is not None
    current = Current(R_PROGRAM, engine, Syntax(grammar, R_PROGRAM))
    try:
        reduce_program(current, final=False)
        assert current.text == b"1/0"
        assert not {"newline", "tidy", "lenient"} & set(engine.stats.passes)
        finish_program(current, ended_with_newline=False)
        assert current.text == b"1/0"  # an original without one gets none
        finish_program(current, ended_with_newline=True)
    finally:
        engine.close()
    assert current.text == b"1/0\n"
    assert engine.stats.passes["newline"].successes == 1


# --- plain text --------------------------------------------------------------------------

TEXT = b"""the quick brown fox
jumps over the lazy dog

and then some more words here
a needle in a haystack somewhere
last line of the file
"""


@pytest.mark.parametrize("jobs", [1, 2])
def test_plain_text_reduces_by_lines_then_words(jobs):
    def predicate(text: bytes) -> bool:
        return b"needle" in text and b"haystack" in text

    result = reduce_text(TEXT, None, predicate, jobs=jobs)
    assert result.text.split() == [b"needle", b"haystack"]
    assert list(result.stats.by_pass)[:2] == ["lines", "tokens"]
    # the line pass alone got it down to the one line
    assert b"a needle in a haystack somewhere\n" in result.accepted


def test_plain_text_without_grammar_current_counts_words():
    engine = make_engine(lambda text: True, jobs=1)
    try:
        current = Current(b"alpha beta, gamma\n", engine, None)
        assert current.parsed is None
        assert current.tokens == 4
    finally:
        engine.close()


def test_plain_text_idempotent_and_jobs_independent():
    def predicate(text: bytes) -> bool:
        return text.count(b"the") >= 2

    one = reduce_text(TEXT, None, predicate, jobs=1).text
    assert reduce_text(TEXT, None, predicate, jobs=2).text == one
    assert reduce_text(one, None, predicate).text == one


# --- units and tidy ----------------------------------------------------------------------


def test_line_units_skip_blank_lines():
    text = b"a\n\n  \nbb\nc"
    units = line_units(text)
    assert [text[u.start : u.end] for u in units] == [b"a\n", b"bb\n", b"c"]


def test_token_units_follow_the_grammar_or_words():
    engine = make_engine(lambda text: True, jobs=1)
    try:
        text = b"int x = a+b; // note\n"
        grammar = grammars.load("c")
        parsed = Current(text, engine, Syntax(grammar, text))
        spans = [text[u.start : u.end] for u in token_units(parsed)]
        assert spans == [b"int", b"x", b"=", b"a", b"+", b"b", b";"]  # no comment
        plain = Current(text, engine, None)
        assert [text[u.start : u.end] for u in token_units(plain)] == [
            b"int", b"x", b"=", b"a", b"+", b"b", b";", b"/", b"/", b"note",
        ]  # fmt: skip
    finally:
        engine.close()


def test_tidy_keeps_indentation():
    assert tidy(b"\n\nif x:  \n    y = 1\t\n\n\n\nz\n") == b"if x:\n    y = 1\n\nz\n"
    assert tidy(b"int f() {\n}\n\n\n") == b"int f() {\n}\n"
    assert tidy(b"int f;") == b"int f;"


def test_tidy_removes_only_the_indentation_all_lines_share():
    assert tidy(b"    if x:\n        y = 1\n\n    z\n") == b"if x:\n    y = 1\n\nz\n"
    assert tidy(b"  a\n b\n") == b" a\nb\n"
    assert tidy(b"\t  a\n  b\n") == b"\t  a\n  b\n"  # no margin in common


def test_delete_units_drops_separators_with_their_units():
    text = b"f(a, b, c);"
    units = [Unit(2, 3, (3, 4)), Unit(5, 6, (6, 7)), Unit(8, 9)]
    engine = make_engine(lambda t: t.startswith(b"f(") and b"a" in t, jobs=1)
    try:
        current = Current(text, engine, None)
        assert delete_units(current, units)
        assert current.text == b"f(a);"
    finally:
        engine.close()


CALL = b"f(a, b, c);"
CALL_UNITS = [Unit(2, 3, (3, 4)), Unit(5, 6, (6, 7)), Unit(8, 9)]
FIRST = [b"f(x, y);", b"f(y);"]


def keeps_a(text: bytes) -> bool:
    return text.startswith(b"f(") and b"a" in text


def offered_then_deleted(
    interesting: Predicate,
) -> tuple[tuple[int | None, bool], bytes, list[bytes]]:
    tested: list[bytes] = []
    engine = make_engine(interesting, 1, tested)
    try:
        current = Current(CALL, engine, None)
        outcome = first_then_delete_units(current, FIRST, bytes, CALL_UNITS)
    finally:
        engine.close()
    return outcome, current.text, tested


def test_ddmin_goes_on_after_the_texts_offered_first_as_if_called_after_them():
    outcome, text, tested = offered_then_deleted(keeps_a)
    assert outcome == (None, True) and text == b"f(a);"
    alone: list[bytes] = []
    engine = make_engine(keeps_a, 1, alone)
    try:
        assert delete_units(Current(CALL, engine, None), CALL_UNITS)
    finally:
        engine.close()
    assert tested == FIRST + alone


def test_a_text_offered_first_that_is_taken_ends_the_stream():
    outcome, text, tested = offered_then_deleted(lambda candidate: candidate == b"f(y);")
    assert outcome == (1, False) and text == b"f(y);"
    assert tested == FIRST


def test_delete_units_reports_no_progress():
    text = b"f(a, b);"
    engine = make_engine(lambda t: t == text, jobs=1)
    try:
        current = Current(text, engine, None)
        assert not delete_units(current, [Unit(2, 3, (3, 4)), Unit(5, 6)])
        assert current.text == text
    finally:
        engine.close()


# --- a property over generated C programs ------------------------------------------------

STATEMENTS = [
    b"int a = 1;",
    b"a = a + 2;",
    b"if (a) { b = 3; }",
    b"while (b > 0) b--;",
    b"c = f(a, b, 4);",
    b"return a;",
    b"d[2] = c * (a - b);",
    b"{ int e = 5; e++; }",
]


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    st.lists(st.sampled_from(STATEMENTS), min_size=2, max_size=8),
    st.data(),
)
def test_generated_c_programs(statements, data):
    body = "\n".join("    " + s.decode() for s in statements)
    program = f"int main(void) {{\n{body}\n}}\n".encode()
    needle = data.draw(st.sampled_from(sorted({s for s in statements})))
    key = re.findall(rb"\w+|[^\w\s]", needle)[:3]  # a short token prefix must survive

    def predicate(text: bytes) -> bool:
        return (
            parses_cleanly("c", text)
            and re.search(rb"\s*".join(re.escape(k) for k in key), text) is not None
        )

    one = reduce_text(program, "c", predicate, jobs=1)
    assert predicate(one.text)
    assert len(one.text) <= len(program)
    assert reduce_text(program, "c", predicate, jobs=2).text == one.text
    assert reduce_text(one.text, "c", predicate).text == one.text


@pytest.mark.parametrize(
    ("groups_first", "first_passes"),
    [
        (False, ["tree", "names", "parameters", "results"]),
        (True, ["names", "parameters", "results", "tree"]),
    ],
)
def test_the_group_passes_can_go_before_the_tree(groups_first, first_passes):
    """A pair a repair made runs its rounds with the passes that take a name, a
    parameter or a result with everything tied to it first (`ppr.min_commonality`)."""
    program = b"int f(int a) { return a; }\nint main(void) { int unused; foo(f(1)); }\n"
    current = current_for(program, "c", calls("c", b"foo"))
    try:
        reduce_program(current, groups_first=groups_first)
    finally:
        current.engine.close()
    ran = [entry["pass"] for entry in current.engine.stats.pass_profile()]
    assert ran[:4] == first_passes
    assert b"foo" in current.text


# --- stock phrases of the text being reduced ------------------------------------------------

PHRASES_PROGRAM = b"""long big(long q) { return q; }
int main(void) { int a = 1; int c = a * 3; return c + bug; }
"""


def declares_what_it_uses(text: bytes) -> bool:
    """Keeps `bug`, and `q` only inside `big`, which declares it (its two uses there)."""
    uses = re.findall(rb"\bq\b", text)
    return b"bug" in text and uses == ([b"q", b"q"] if b"big(" in text else [])


def reduced_with(phrases: bool) -> tuple[bytes, list[bytes]]:
    """The result and every text tested, the original's stock phrases offered or not."""
    tested: list[bytes] = []
    engine = make_engine(declares_what_it_uses, jobs=1, tested=tested)
    grammar = grammars.load("c")
    assert grammar is not None
    current = Current(PHRASES_PROGRAM, engine, Syntax(grammar, PHRASES_PROGRAM))
    try:
        reduce_program(current, final=False, phrases=phrases)
    finally:
        engine.close()
    return current.text, tested


def test_without_phrases_the_sweeps_offer_only_the_current_texts():
    """`big` goes first; afterwards the original's phrase `q` could still stand in for an
    expression (`int c = q;`), a candidate a program that must keep compiling always
    refuses. Without the original's phrases (MinCommonality's seed: the code it
    deleted is no guide to what the seed may use) it is never offered; the result is
    the same, for fewer tests."""
    results = {}
    for phrases in (True, False):
        result, tested = reduced_with(phrases)
        assert b"big" not in result and b"bug" in result
        stale = [text for text in tested if b"big" not in text and re.search(rb"\bq\b", text)]
        assert bool(stale) is phrases, stale
        results[phrases] = result, len(tested)
    assert results[False][0] == results[True][0]
    assert results[False][1] < results[True][1]


# --- one pass's end, the next one's start ------------------------------------------------

GROUPS_PROGRAM = b"""int g(int p, int q) { return p + q; }
int f(int a, int b) { return a * b; }
int main(void) {
  int x = 3;
  int y = 4;
  return f(x, y) + g(y, x);
}
"""


def _grouped(
    passes: list[Pass[Program]], skipped: tuple[str, ...] = ()
) -> tuple[bytes, list[bytes], int, dict[str, int]]:
    """The text `passes` leave of GROUPS_PROGRAM at one job, the tests in the order they
    ran, how many jobs the main thread handed to the pool and the tests each pass counted.
    Each test takes 20 ms and says when it runs, as the oracle's do."""
    tests: list[bytes] = []

    def run(text: bytes) -> Outcome:
        tickets.test_under_way()
        tests.append(text)
        time.sleep(0.02)
        keeps = b"f(x" in text and text.count(b"y") in (0, 3)  # `y` goes whole or not at all
        return Outcome(Verdict.BAD if keeps else Verdict.GOOD, 1 if keeps else 0, 0.0)

    engine = Engine(
        run, lambda outcome: outcome.verdict is Verdict.BAD, jobs=1, skipped_passes=skipped
    )
    hand_offs = []
    submit = engine._jobs._pool.submit

    def counted(*args, **kwargs):
        hand_offs.append(args)
        return submit(*args, **kwargs)

    engine._jobs._pool.submit = counted
    grammar = grammars.load("c")
    assert grammar is not None
    current = Current(GROUPS_PROGRAM, engine, Syntax(grammar, GROUPS_PROGRAM))
    try:
        _in_order(Program.of(current), passes)
    finally:
        engine.close()
    return current.text, tests, len(hand_offs), engine.stats.by_pass


def test_a_pass_ending_hands_its_idle_job_the_next_passs_first_test():
    """The grouped passes in order at one job: each pass's last batch, once it refuses,
    goes on with the next pass's first candidate (its `first_batch`, the last batch's
    lookahead), so the main thread hands fewer jobs to the pool. The tests, their order
    and the result are those of passes that declare no first batch."""
    passes = [declared for declared in ROUND if declared.name in _GROUP_PASSES]
    text, tests, hand_offs, _ = _grouped(passes)
    plain_text, plain_tests, plain_hand_offs, _ = _grouped(
        [replace(declared, first_batch=None) for declared in passes]
    )
    assert (text, tests) == (plain_text, plain_tests)
    assert len(text) < len(GROUPS_PROGRAM)
    assert hand_offs < plain_hand_offs


@pytest.mark.parametrize("nest", [False, True])
def test_a_warm_up_counts_for_the_pass_whose_candidate_it_tests(nest):
    """A pass's last batch queues the next pass's first candidate, which the job tests once
    the batch's last test refuses: that test counts for the pass the candidate is
    from (`min-commonality/parameters` inside MinCommonality), so the per-pass
    profile reads as it does for passes that declare no first batch. It used to count
    for the pass that queued it."""
    passes = [declared for declared in ROUND if declared.name in _GROUP_PASSES]
    plain = [replace(declared, first_batch=None) for declared in passes]
    wrap = _nested if nest else list
    by_pass = _grouped(wrap(passes))[3]
    assert by_pass == _grouped(wrap(plain))[3]
    assert len(by_pass) >= 3, by_pass


def _nested(passes: list[Pass[Program]]) -> list[Pass[Program]]:
    """`passes` run inside a pass named `outer`, as MinCommonality runs the schedule."""
    return [Pass("outer", lambda program: _in_order(program, passes), "the passes, nested")]


@pytest.mark.parametrize(("skipped", "nest"), [("parameters", False), ("outer/parameters", True)])
def test_a_switched_off_pass_is_not_warmed_up(skipped, nest):
    """`--skip-pass parameters`, or its full label: the names pass's last batch does not
    warm up the parameters pass's first one, so the tests are those of passes that
    declare no first batch."""
    passes = [declared for declared in ROUND if declared.name in _GROUP_PASSES]
    plain = [replace(declared, first_batch=None) for declared in passes]
    wrap = _nested if nest else list
    assert _grouped(wrap(passes), (skipped,))[:2] == _grouped(wrap(plain), (skipped,))[:2]


# Under a test nothing passes, every batch takes nothing: every lookahead is read.
NAMED = b"""int g;
int helper(int a) { return a + g; }
int main(void) { int x = 1; return helper(x) + x; }
"""


def _nothing_passes(text: bytes) -> bool:
    return False


@pytest.mark.parametrize(
    ("language", "program", "predicate"),
    [
        *(
            (
                language,
                program,
                lambda text, language=language: (
                    parses_cleanly(language, text) and b"h(" in text and b"g(" in text
                ),
            )
            for language, program in LOOKAHEAD_PROGRAMS.items()
        ),
        ("c", NAMED, _nothing_passes),
    ],
    ids=[*LOOKAHEAD_PROGRAMS, "c-nothing-passes"],
)
def test_every_lookahead_is_what_is_read_next_when_its_batch_takes_nothing(
    language, program, predicate
):
    """At one job, over a whole reduction, after every batch of any pass that took
    nothing, the candidates read next (until one is taken) begin with the batch's
    lookahead, byte for byte: a warm-up at two jobs never tests what one job would not.
    (`test_tree` checks the tree pass's alone, on the first two programs.)"""
    compared = logged_reduction(language, program, predicate).lookaheads_compared()
    assert len([label for label, count in compared.items() if count]) >= 3, compared


@pytest.mark.parametrize("language", LOOKAHEAD_PROGRAMS)
def test_a_round_that_shrank_looks_ahead_to_the_next_rounds_first_batch(language):
    """The last batch of a round that shrank the text (the windows pass's, taking nothing)
    looks ahead to the next round's first batch, the tree's first sweep: at two jobs its
    idle job starts on that round instead of waiting for the round to end. What it
    looks ahead to is the start of that batch, byte for byte."""

    def predicate(text: bytes) -> bool:
        return parses_cleanly(language, text) and b"h(" in text and b"g(" in text

    batches = logged_reduction(language, LOOKAHEAD_PROGRAMS[language], predicate).batches
    crossings = [
        (batches[position], batches[position + 1])
        for position in range(len(batches) - 1)
        if batches[position][0] == "windows" and batches[position + 1][0] == "tree"
    ]
    assert crossings
    for (_, _, ahead, won), (_, read, _, _) in crossings:
        assert not won and ahead
        length = min(len(ahead), len(read))
        assert ahead[:length] == read[:length]


@pytest.mark.parametrize("language", LOOKAHEAD_PROGRAMS)
def test_a_pass_looks_ahead_past_the_passes_that_will_not_run(language):
    """`brackets` is followed by `lines`, a pass for a file no grammar parses: its last
    batch looks ahead to the first batch of `tokens`, the pass that runs next. A pass
    whose empty first batch means it tries nothing (`results` here, most of `LATE`) is
    read past too. Each lookahead is what is read next, byte for byte. Before, these
    passes looked ahead to nothing (`identifiers` had no first batch), and at two jobs
    one job idled through their last test."""
    compared = replayed(language).lookaheads_compared()
    looked_past = {"brackets", "names", "parameters", "identifiers", "types", "inline"}
    assert all(compared.get(label, 0) > 0 for label in looked_past), compared


def sent_first(declared: Pass[Program], language: str, program: bytes) -> tuple[list, list]:
    """What `declared` declares as its first batch on `program`, and the candidates of the
    first batch it sends the engine, under a test nothing passes; None if it does not
    apply."""
    grammar = grammars.load(language)
    assert grammar is not None and declared.first_batch is not None
    engine = make_engine(lambda text: False, jobs=1)
    current = Current(program, engine, Syntax(grammar, program))
    target = Program.of(current)
    batches: list[list[bytes]] = []
    first_judged = engine.first_judged

    def recorded(candidates, judge, **options):
        seen: list[bytes] = []
        batches.append(seen)

        def reading():
            for candidate in candidates:
                seen.append(bytes(candidate))
                yield candidate

        return first_judged(reading(), judge, **options)

    engine.first_judged = recorded
    try:
        if not declared.applies(target):
            return None
        expected = [bytes(candidate) for candidate in declared.first_batch(target)]
        declared.run(target)
    finally:
        engine.close()
    assert batches, declared.name
    return expected, batches[0]


@pytest.mark.parametrize(
    ("language", "program"), [("c", C_PROGRAM), ("c", GROUPS_PROGRAM), ("r", R_PROGRAM)]
)
def test_a_declared_first_batch_is_what_its_pass_tries_first(language, program):
    """Each pass that declares its first batch sends exactly that to the engine first (all
    of it, for a test nothing passes): what the pass before it warms up is never a test
    one job would not have run."""
    checked = []
    for declared in (*ROUND, *LATE, *FINAL):
        if declared.first_batch is None:
            continue
        sent = sent_first(declared, language, program)
        if sent is not None:
            assert sent[0] == sent[1], declared.name
            checked.append(declared.name)
    assert {"tree", "names", "parameters", "tokens", "windows", "identifiers", "tidy"} <= set(
        checked
    )


@pytest.mark.parametrize("language", LOOKAHEAD_PROGRAMS)
def test_a_tree_pass_that_sweeps_once_looks_ahead_to_the_next_pass(language):
    """With `one_sweep` (a pair's MinCommonality) no sweep follows one that shrank the
    text: its last batches look ahead to the next pass's first batch, what is read next,
    byte for byte. Before, they looked ahead to a sweep that never ran, a test spent at
    one job and speculation lost at two."""
    engine = LookaheadLog(
        lambda text: parses_cleanly(language, text) and b"h(" in text and b"g(" in text
    )
    program = LOOKAHEAD_PROGRAMS[language]
    try:
        reduce_program(
            Current(program, engine, Syntax(grammars.load(language), program)), one_sweep=True
        )
    finally:
        engine.close()
    assert engine.lookaheads_compared().get("tree", 0) > 0


def test_a_late_pass_that_only_shortens_a_spelling_runs_no_round_again():
    """`usize` made `i32` (the `types` pass) removes no token: the rounds, which refused
    every deletion before it, are not run again to find out whether they still do."""
    program = b"fn f(x: usize) -> usize { x }\nfn g() {}\n"

    def keeps_f(text: bytes) -> bool:
        return b"fn f(x: " in text and b") -> " in text and b"{ x }" in text

    reduction = reduce_text(program, "rust", keeps_f)
    assert reduction.text == b"fn f(x: i32) -> i32 { x }\n"
    assert reduction.passes == ["tree", "types"]
    # one round that shrank, one that found nothing; none after `types`
    assert reduction.stats.passes["tree"].runs == 2
    assert reduction.stats.passes["types"].runs == 1
