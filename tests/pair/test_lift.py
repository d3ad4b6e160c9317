"""The seed lifted to a reduced variant, and the `variant-first` pass that uses it.

The pass's oracle is a Python rule standing for the bug (as in test_coarse.py):
the variant fails while it assigns a post-decrement. For the seed to pass it
must also "compile" where said so: every function it calls is defined.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from post_decrement import SEED, VARIANT, bug, flat
from support import PACKAGE_ROOT, bisect_pair

from gitreduce.core import edits
from gitreduce.core.engine import ORIGINALS, Engine
from gitreduce.core.outcome import Outcome, Verdict
from gitreduce.lang import grammars
from gitreduce.pair.alignment import Alignment
from gitreduce.pair.current import PairCurrent
from gitreduce.pair.lift import Provenance, diffed_origins, lift
from gitreduce.pair.ppr import reduce_pair, variant_first
from gitreduce.pair.tokens import TokenList, tokenize

C = grammars.load("c")


def a_seed(text: bytes) -> bool:
    """Whether `text` came from the seed: only the seed has its side of the bug's change."""
    return b"y=x-1;" in flat(text)


def lifted(seed: bytes, variant: bytes, reduced: bytes) -> bytes:
    """The lifted seed; the pair's alignment the lift built is a minimal one, as a search
    would find."""
    pair, tokens = Alignment.of(seed, variant, C), tokenize(reduced, C)
    result = lift(pair, tokens, diffed_origins(pair.variant, tokens))
    built = result.alignment(tokens, C)
    searched = Alignment.of(result.text, reduced, C)
    assert built.diff_size == searched.diff_size
    assert [hunk.size for hunk in built.hunks] == [hunk.size for hunk in searched.hunks]
    return result.text


def test_provenance_follows_tokens_through_deletions_and_hoisting() -> None:
    """Two accepted candidates in a row: a statement deleted, then `if (c) { ... }`
    replaced by its body's statement. Every kept token is traced to its original
    place, the hoisted ones included, and the `g` left after the first `g();` went is
    the second one, which a diff could not tell."""
    variant = b"int f(int c) { g(); g(); if (c) { h(); } return 0; }\n"
    first = edits.apply(variant, [edits.Edit(15, 20)])  # the first `g();`
    assert first == b"int f(int c) { g(); if (c) { h(); } return 0; }\n"
    block = edits.Edit(first.index(b"if"), first.index(b"} return") + 1, b"h();")
    second = edits.apply(first, [block])
    assert second == b"int f(int c) { g(); h(); return 0; }\n"
    made = Provenance.original(variant).after(variant, first.splices)
    made = made.after(bytes(first), second.splices)
    original, reduced = tokenize(variant, C), tokenize(second, C)
    origins = made.origins(original, reduced)
    assert all(origin >= 0 for origin in origins)
    assert [original.token(origin) for origin in origins] == reduced.texts()
    assert original.starts[origins[7]] == variant.index(b"g(); if")  # the second `g`


def token_by_token(made: Provenance, variant: TokenList, reduced: TokenList) -> list[int]:
    """`Provenance.origins` by its definition: each reduced token inside one segment, at
    the variant token that starts at its origin with its length."""
    token_at = {start: index for index, start in enumerate(variant.starts)}
    origins = [-1] * len(reduced)
    for index, (start, end) in enumerate(zip(reduced.starts, reduced.ends, strict=True)):
        for segment_start, segment_end, origin in made.segments:
            if segment_start <= start and end <= segment_end:
                partner = token_at.get(origin + start - segment_start, -1)
                if partner >= 0 and variant.token(partner) == reduced.token(index):
                    origins[index] = partner
    return origins


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_origins_are_found_token_by_token_or_segment_by_segment_alike(data) -> None:
    """Two reductions in a row of a real program, nodes deleted or one replaced by another
    (a hoist): the tokens' origins as the definition finds them."""
    variant = (PACKAGE_ROOT / "benchmarks" / "cases" / "toy-gcc-pattern" / "variant.c").read_bytes()
    made, text = Provenance.original(variant), variant
    for _ in range(2):
        nodes = sorted(
            {(leaf.start_byte, leaf.end_byte) for leaf in _named(C.parser().parse(text))}
        )
        if not nodes:  # the first reduction deleted the whole program
            break
        chosen = sorted(data.draw(st.lists(st.sampled_from(nodes), min_size=1, max_size=5)))
        changes: list[edits.Edit] = []
        for start, end in chosen:
            if not changes or start >= changes[-1].end:
                inner = data.draw(
                    st.sampled_from([None, *[n for n in nodes if start <= n[0] and n[1] <= end]])
                )
                changes.append(edits.Edit(start, end, text[inner[0] : inner[1]] if inner else b""))
        rendered = edits.apply(text, changes)
        made, text = made.after(text, rendered.splices), bytes(rendered)
    original, reduced = tokenize(variant, C), tokenize(text, C)
    assert made.origins(original, reduced) == token_by_token(made, original, reduced)


def _named(tree):
    found, pending = [], [tree.root_node]
    while pending:
        node = pending.pop()
        if node.is_named and node.end_byte > node.start_byte:
            found.append(node)
        pending.extend(node.children)
    return found


def test_a_hoisted_text_the_range_holds_twice_is_taken_for_the_changed_one() -> None:
    """The variant adds `if (c) { break; }` after a loop that ends in its own `break;`, and
    the reduction replaces both statements by `break;`: the same text either way. Told
    which bytes a change holds, the provenance takes the added one (the one the failure
    more likely needs), and the seed lifted to it goes without; taken for the loop's, it
    would be common and stay in the seed."""
    seed = b"int f(int c) { while (c) { g(); break; } return 0; }\n"
    variant = b"int f(int c) { while (c) { g(); break; } if (c) { break; } return 0; }\n"
    hoist = edits.Edit(variant.index(b"while"), variant.index(b" return"), b"break;")
    reduced = edits.apply(variant, [hoist])
    assert reduced == b"int f(int c) { break; return 0; }\n"
    pair, tokens = Alignment.of(seed, variant, C), tokenize(reduced, C)
    hoisted = tokens.texts().index(b"break")
    for changed, lifted_seed, start in (
        (None, reduced, variant.index(b"break")),
        (pair.changed_at, b"int f(int c) { return 0; }\n", variant.rindex(b"break")),
    ):
        made = Provenance.original(variant, changed).after(variant, reduced.splices)
        origins = made.origins(pair.variant, tokens)
        assert pair.variant.starts[origins[hoisted]] == start
        assert lift(pair, tokens, origins).text == lifted_seed


def test_the_unreduced_variant_lifts_to_the_seed_byte_for_byte() -> None:
    assert lifted(SEED, VARIANT, VARIANT) == SEED


def test_a_real_pairs_lift_is_what_a_search_finds_change_by_change() -> None:
    """A fuzzer's pair (5,600 tokens, 500 of them changed) with a stretch of the
    variant deleted: the lift builds its alignment from runs of kept tokens, and every
    hunk is the one a diff of the two texts finds; with nothing deleted, the seed's tokens
    (the white space before a change is the variant's)."""
    case = PACKAGE_ROOT / "benchmarks" / "cases" / "gcc12-pr109392"
    seed, variant = ((case / name).read_bytes() for name in ("seed.c", "variant.c"))
    assert tokenize(lifted(seed, variant, variant), C).texts() == tokenize(seed, C).texts()
    cut = variant.index(b"\n", len(variant) // 2)
    reduced = variant[:cut] + variant[variant.index(b"\n", cut + 2000) :]
    assert len(lifted(seed, variant, reduced)) < len(seed)


def test_changes_the_reduction_kept_come_back_as_the_seed_had_them() -> None:
    seed = b"int f(int x) { int y = x * 2; y++; return y; }\n"
    variant = b"int f(int x) { int y = x - 2; return y; }\n"  # `*` -> `-`, `y++;` deleted
    reduced = b"f(int x) { int y = x - 2; return y; }\n"  # the result type went
    assert lifted(seed, variant, reduced) == b"f(int x) { int y = x * 2; y++; return y; }\n"


def test_a_change_whose_tokens_all_went_goes_from_the_seed_too() -> None:
    seed = b"int a = 1;\nint b = 2;\nint c = 3;\n"
    variant = b"int a = 1;\nint b = 5;\nint c = 3;\n"
    assert lifted(seed, variant, b"int a = 1;\nint c = 3;\n") == b"int a = 1;\nint c = 3;\n"


def test_a_deleted_statement_stays_out_when_its_neighbours_went() -> None:
    seed = b"void g(void) { f(); h(); k(); }\nvoid m(void) { }\n"
    variant = b"void g(void) { f(); k(); }\nvoid m(void) { }\n"  # `h();` deleted
    assert lifted(seed, variant, b"void m(void) { }\n") == b"void m(void) { }\n"
    kept = lifted(seed, variant, b"void g(void) { f(); k(); }\n")
    assert kept == b"void g(void) { f(); h(); k(); }\n"


def test_tokens_the_reduction_introduced_stay_and_tokens_never_glue() -> None:
    seed = b"int f(int x) { return g(x) + x++; }\n"
    variant = b"int f(int x) { return g(x) + x--; }\n"
    reduced = b"int f(int x) { return 0 + x--; }\n"  # a stock phrase for `g(x)`
    assert lifted(seed, variant, reduced) == b"int f(int x) { return 0 + x++; }\n"


def test_a_seed_line_goes_where_a_hoist_moved_its_neighbours() -> None:
    """The variant's reduction took a method out of its class, dedenting its lines (as the
    tree pass hoists a Python body); the line the fuzzer deleted from it comes back at
    the column its neighbours moved to, and the lifted seed is Python. A deeper line
    keeps its depth inside them; lines nothing moved stay where they were."""
    python = grammars.load("python")
    seed = (
        b"class A:\n    def f(self):\n        if self:\n            self.g()\n"
        b"        self.h()\n        return 1\nx = 2\ny = 3\n"
    )
    variant = b"class A:\n    def f(self):\n        self.h()\n        return 1\ny = 3\n"
    reduced = b"def f(self):\n    self.h()\n    return 1\ny = 3\n"
    pair, tokens = Alignment.of(seed, variant, python), tokenize(reduced, python)
    result = lift(pair, tokens, diffed_origins(pair.variant, tokens)).text
    assert result == (
        b"def f(self):\n    if self:\n        self.g()\n    self.h()\n    return 1\nx = 2\ny = 3\n"
    )
    compile(result, "lifted.py", "exec")


def test_lines_a_fuzzer_wrapped_in_an_if_come_back_at_the_seeds_column() -> None:
    """The variant wraps two statements in `if x:` (so they sit four columns deeper),
    and the seed unwraps them where the variant once had them wrapped: lifted, a line
    goes to its seed's column while the wrapping change comes back as the seed's, and
    stays where the reduction put it once the reduction took the wrapper away."""
    python = grammars.load("python")
    plain = b"def f(x):\n    a = 1\n    b = 2\n    return a + b\n"
    wrapped = b"def f(x):\n    if x:\n        a = 1\n        b = 2\n    return a + b\n"

    def lifted_python(seed: bytes, variant: bytes, reduced: bytes) -> bytes:
        pair, tokens = Alignment.of(seed, variant, python), tokenize(reduced, python)
        text = lift(pair, tokens, diffed_origins(pair.variant, tokens)).text
        compile(text, "lifted.py", "exec")
        return text

    assert lifted_python(plain, wrapped, wrapped) == plain
    kept_wrapper = b"def f(x):\n    if x:\n        a = 1\n    return a + b\n"
    assert lifted_python(plain, wrapped, kept_wrapper) == (
        b"def f(x):\n    a = 1\n    return a + b\n"
    )
    hoisted = b"def f(x):\n    a = 1\n    return a\n"  # the reduction took the `if` away
    assert lifted_python(plain, wrapped, hoisted) == hoisted
    unwrapped = b"def f(x):\n    a = 1\n    return a + b\n"
    assert lifted_python(wrapped, plain, unwrapped) == kept_wrapper


# --- the pass ------------------------------------------------------------------------------


def compiles(text: bytes) -> bool:
    """Every called function is defined (the C rule the seed's test stands for)."""
    called = set(re.findall(rb"(\w+)\s*\(", flat_calls(text))) - {b"if", b"for", b"while"}
    defined = set(re.findall(rb"\b\w+\s+\**(\w+)\s*\([^;]*?\)\s*\{", text))
    return called <= defined | {b"printf", b"main"}


def flat_calls(text: bytes) -> bytes:
    """The bodies only: calls, not definitions."""
    return re.sub(rb"\b\w+\s+\**\w+\s*\([^;{]*\)\s*\{", b"{", text)


def has_main(text: bytes) -> bool:
    return re.search(rb"\bint\s+main\s*\(", text) is not None


def pair_current(
    *,
    tested: list[bytes],
    seed_needs: Callable[[bytes], bool] | None = None,
    jobs: int = 1,
    before: Callable[[bytes], None] | None = None,
) -> PairCurrent:
    """The pair under a rule where a text passes unless it has the bug or, with
    `seed_needs`, lacks what the rule asks of a good program; `before` is called with
    each text as its test starts."""

    def run(text: bytes) -> Outcome:
        if before is not None:
            before(text)
        tested.append(text)
        if bug(text):
            return Outcome(Verdict.BAD, 1, 0.0, "exit 1")
        if seed_needs is not None and not seed_needs(text):
            return Outcome(Verdict.SKIP, 125, 0.0)
        return Outcome(Verdict.GOOD, 0, 0.0)

    engine = Engine(run, lambda outcome: outcome.verdict is Verdict.BAD, jobs=jobs)
    assert C is not None
    return bisect_pair(SEED, VARIANT, C, engine)


def test_the_variant_is_reduced_alone_and_the_seed_follows() -> None:
    tested: list[bytes] = []
    current = pair_current(tested=tested)
    assert variant_first(current)
    assert not current.repaired
    seed, variant = current.state.seed_text(), current.state.variant_text()
    assert not bug(seed) and bug(variant)
    assert len(seed) < len(SEED) // 4 and len(variant) < len(VARIANT) // 4
    # only the lifts were seeds: every other test was of a variant
    seeds = [text for text in tested if a_seed(text)]
    assert 0 < len(seeds) <= 2 * len(tested).bit_length(), seeds


def test_a_later_lift_that_is_refused_stops_the_sweeps() -> None:
    """Here the seed must keep `main`: the first lifts pass, then the sweeps hoist the
    body out of `main` and its lift is refused. That ends the variant's sweeps (only
    lifts of variants already accepted are tested after it), and the pair is the
    newest that lifts."""
    tested: list[bytes] = []
    current = pair_current(tested=tested, seed_needs=has_main)
    assert variant_first(current)
    assert not current.repaired
    lifts = [at for at, text in enumerate(tested) if a_seed(text)]
    refused = [at for at in lifts if not has_main(tested[at])]
    assert refused, "no lift failed: the rule does not test what it should"
    assert lifts[0] < refused[0], "the first lift failed: this is the repair's case"
    assert all(a_seed(text) for text in tested[refused[0] :])  # no variant tested after
    assert len(lifts) <= 2 * len(tested).bit_length() + 2
    seed, variant = current.state.seed_text(), current.state.variant_text()
    assert has_main(seed) and not bug(seed) and bug(variant)
    assert b"unrelated" not in variant and b"struct point" not in variant


def test_when_the_first_lift_is_refused_the_pieces_the_seed_needs_come_back() -> None:
    """Deleting `helper` keeps the variant failing but leaves the seed calling an
    undefined function: the very first lift is refused. The variant's sweeps then go
    on to the end (as a single-program reduction would), and the deleted pieces the
    lifted seed needs are put back in both programs: a valid pair far smaller than the
    original, found with a few lifts per piece."""
    assert compiles(SEED) and not compiles(SEED.replace(b"int helper", b"int other"))
    tested: list[bytes] = []
    current = pair_current(tested=tested, seed_needs=compiles)
    assert variant_first(current)
    assert current.repaired  # MinCommonality's rounds then take groups first
    lifts = [at for at, text in enumerate(tested) if a_seed(text)]
    assert not compiles(tested[lifts[0]]), "the first lift passed: the rule tests nothing"
    assert any(not a_seed(text) for text in tested[lifts[0] :])  # the sweeps went on
    assert len(lifts) <= 4 * len(tested).bit_length()
    seed, variant = current.state.seed_text(), current.state.variant_text()
    assert compiles(seed) and not bug(seed) and bug(variant)
    assert len(seed) < len(SEED) // 4 and len(variant) < len(VARIANT) // 4
    reduce_pair(current)
    seed, variant = current.state.seed_text(), current.state.variant_text()
    assert compiles(seed) and not bug(seed) and bug(variant)
    assert b"unrelated" not in seed and b"unrelated" not in variant


@pytest.mark.parametrize("seed_needs", [None, has_main, compiles], ids=["all", "main", "calls"])
def test_at_two_jobs_the_lifts_run_beside_the_sweeps_and_change_nothing(seed_needs) -> None:
    """A lift is one test (the variant's verdict is known): at two jobs it runs while
    the sweeps go on, instead of holding them with the other job idle. Each lift's test
    here waits for a variant's test to start after it, which happens only beside the
    sweeps. Every lift passes, a later one is refused (the sweeps stop as soon as its
    test has ended), or the first one is: the pair is one job's, byte for byte."""
    tested: list[bytes] = []
    alone = pair_current(tested=tested, seed_needs=seed_needs)
    variant_first(alone)

    started = threading.Condition()
    variants_started = 0
    beside: list[bool] = []

    def before(text: bytes) -> None:
        nonlocal variants_started
        with started:
            if not a_seed(text):
                variants_started += 1
                started.notify_all()
                return
            seen = variants_started
            beside.append(started.wait_for(lambda: variants_started > seen, timeout=2))

    in_parallel: list[bytes] = []
    current = pair_current(tested=in_parallel, seed_needs=seed_needs, jobs=2, before=before)
    try:
        variant_first(current)
    finally:
        current.engine.close()
    assert any(beside), "no lift ran while the sweeps went on"
    # the lifts' tests and the repair's syntax checks count for the pass, not as checks
    # made outside any pass
    assert ORIGINALS not in current.engine.stats.passes
    if seed_needs is has_main:
        refused = [at for at, text in enumerate(in_parallel) if a_seed(text) and not has_main(text)]
        # the sweeps stop within the tests under way, not at the next variant accepted
        # (14 variants tested after the refused lift here when they did)
        assert sum(not a_seed(text) for text in in_parallel[refused[0] :]) <= 5
    assert current.state.seed_text() == alone.state.seed_text()
    assert current.state.variant_text() == alone.state.variant_text()
    assert current.repaired == alone.repaired
