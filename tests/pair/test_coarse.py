"""The coarse commonality pass: shared declarations and statements leave both programs at
once, biggest first, and the difference is never touched.

The oracle is a Python rule standing for the bug (see test_ppr.py): the variant
fails while it assigns a post-decrement, the seed passes while it does not.
"""

from __future__ import annotations

from post_decrement import SEED, VARIANT, bug, flat
from support import bisect_pair, make_engine

from gitreduce.lang import grammars
from gitreduce.pair.alignment import Alignment
from gitreduce.pair.coarse import coarse_commonality
from gitreduce.pair.current import PairCurrent
from gitreduce.pair.ppr import reduce_pair

C = grammars.load("c")
PYTHON = grammars.load("python")


def pair_current(
    seed: bytes = SEED,
    variant: bytes = VARIANT,
    *,
    language: str = "c",
    jobs: int = 1,
    tested: list[bytes] | None = None,
    skipped: tuple[str, ...] = (),
) -> PairCurrent:
    assert not bug(seed) and bug(variant)
    engine = make_engine(bug, jobs=jobs, tested=tested)
    engine.skipped_passes = frozenset(skipped)
    grammar = grammars.load(language)
    assert grammar is not None
    return bisect_pair(seed, variant, grammar, engine)


def test_shared_declarations_and_statements_leave_both_programs() -> None:
    current = pair_current()
    assert coarse_commonality(current)
    seed, variant = current.state.seed_text(), current.state.variant_text()
    for gone in (b"#include", b"struct point", b"helper", b"printf", b"for", b"int q = 4;"):
        assert gone not in seed and gone not in variant, gone
    assert not bug(seed) and bug(variant)
    # what is left of the two programs is, outside the difference, the same code
    assert flat(seed).replace(b"y=x-1;", b"x=y--;").replace(b"q*q", b"q+q*2").replace(
        b"y=2;", b"y=2,z=7;"
    ) == flat(variant)


def test_the_difference_is_never_touched() -> None:
    """The rule would take every deletion; the pass still leaves each changed token, and the
    statements and functions that hold one, in place, in every pair it tests."""
    tested: list[bytes] = []
    current = pair_current(tested=tested)
    before = current.state
    coarse_commonality(current)
    after = current.state
    assert after.hunk_counts() == before.hunk_counts() and after.applied == before.applied
    assert after.diff_tokens() == before.diff_tokens() == Alignment.of(SEED, VARIANT, C).diff_size
    final = Alignment.of(after.seed_text(), after.variant_text(), C)
    assert final.diff_size == before.diff_tokens()
    assert tested
    for text in map(flat, tested):
        if b"y--" in text:  # a variant: all three changes of the variant are there
            assert b"x=y--;" in text and b"q+q*2" in text and b"y=2,z=7;" in text
        else:  # a seed: all three of the seed's
            assert b"y=x-1;" in text and b"returnq*q;" in text and b"y=2;" in text
        assert b"intunrelated(void){" in text and b"intmain(void){" in text


def test_results_are_the_same_for_one_and_two_jobs() -> None:
    results = []
    for jobs in (1, 2):
        coarse = pair_current(jobs=jobs)
        coarse_commonality(coarse)
        whole = pair_current(jobs=jobs)
        reduce_pair(whole)
        results.append(
            [
                (current.state.seed_text(), current.state.variant_text())
                for current in (coarse, whole)
            ]
        )
        coarse.engine.close()
        whole.engine.close()
    assert results[0] == results[1]


def test_it_runs_first_and_once_and_can_be_switched_off() -> None:
    """After `variant-first`, which is switched off here: it would leave little to do."""
    current = pair_current(skipped=("variant-first",))
    reduce_pair(current)
    labels = list(current.engine.stats.passes)
    assert labels[:2] == ["coarse-commonality", "min-tdiff"]
    assert current.engine.stats.passes["coarse-commonality"].runs == 1
    assert current.engine.stats.passes["coarse-commonality"].tokens_removed > 0
    skipped = pair_current(skipped=("variant-first", "coarse-commonality"))
    reduce_pair(skipped)
    assert "coarse-commonality" not in skipped.engine.stats.passes
    assert not bug(skipped.state.seed_text()) and bug(skipped.state.variant_text())


def test_a_statement_list_of_an_indented_grammar() -> None:
    seed = b"""import os

def unrelated():
    return os.sep

def main(x, y):
    print(x)
    z = x + 1
    y = x - 1
    return y
"""
    variant = seed.replace(b"y = x - 1", b"x = y--1")

    def python_bug(text: bytes) -> bool:
        return b"x = y--1" in text

    engine = make_engine(python_bug, jobs=1)
    current = bisect_pair(seed, variant, PYTHON, engine)
    assert coarse_commonality(current)
    seed_out, variant_out = current.state.seed_text(), current.state.variant_text()
    # a deleted token's trivia goes with it: the blank lines before `def main` stay
    assert seed_out.lstrip() == b"def main(x, y):\n    y = x - 1\n"
    assert variant_out.lstrip() == b"def main(x, y):\n    x = y--1\n"
