"""A declaration nothing refers to, made an alias of one type it names."""

from __future__ import annotations

import pytest
from support import bisect_pair, derived, nodes, parser, parses_cleanly, reduce_text

from gitreduce.core.engine import Engine
from gitreduce.core.outcome import Outcome, Verdict
from gitreduce.lang import grammars
from gitreduce.pair.ppr import reduce_pair
from gitreduce.passes.aliases import alias_candidates


def candidates(text: bytes, language: str) -> list[bytes]:
    return derived(alias_candidates, text, language)


@pytest.mark.parametrize(
    ("language", "text", "expected"),
    [
        (
            "rust",
            b"struct R<const N: usize>;\nfn f() { let v = size_of::<R<1>>(); }\n",
            b"struct R<const N: usize>;\ntype T = R<1>;\n",
        ),
        (
            "c",
            b"struct S { int a; };\nvoid f(void) { struct S *p; }\n",
            b"struct S { int a; };\ntypedef struct S T;\n",
        ),
        (
            "go",
            b"package p\n\nfunc f() {\n\tvar m map[int]string\n\t_ = m\n}\n",
            b"package p\n\ntype T map[int]string\n",
        ),
        (
            "cpp",
            b"template <typename T, int N> struct Box {};\nvoid f() { g<Box<long, 2>>(); }\n",
            b"template <typename T, int N> struct Box {};\nusing T0 = Box<long, 2>;\n",
        ),
    ],
)
def test_an_unreferenced_declaration_becomes_an_alias_of_a_type_it_names(
    language: str, text: bytes, expected: bytes
) -> None:
    found = candidates(text, language)
    assert expected in found
    assert parses_cleanly(language, expected)


def test_the_largest_types_come_first_each_spelling_once_and_no_built_in_one() -> None:
    text = b"struct R<T>(T);\nfn f(a: R<i32>, b: R<i32>, c: Vec<u8>) -> i32 { 0 }\n"
    assert candidates(text, "rust") == [
        b"struct R<T>(T);\ntype T0 = Vec<u8>;\n",
        b"struct R<T>(T);\ntype T0 = R<i32>;\n",
    ]
    assert candidates(b"int f(void) { unsigned long n; return 0; }\n", "c") == []


def test_a_declaration_something_uses_is_not_offered() -> None:
    """`helper` is called by `main`, and `R` is named in `helper`: only `main` may go."""
    text = b"struct R;\nfn helper() -> R { R }\nfn main() { let r: Vec<u8> = helper(); }\n"
    found = candidates(text, "rust")
    assert found == [b"struct R;\nfn helper() -> R { R }\ntype T = Vec<u8>;\n"]


def test_a_grammar_without_an_alias_form_gets_none() -> None:
    assert candidates(b"class A { void f() { java.util.List<String> x; } }\n", "java") == []
    assert candidates(b"def f(x: list[int]) -> None:\n    pass\n", "python") == []


def _names_generic(text: bytes, spelled: bytes) -> bool:
    """The bug's stand-in: a compiler that fails checking the type `spelled`, wherever it
    is written, in a program that parses."""
    tree = parser("rust").parse(text)
    items = tree.root_node.named_children
    return (
        not tree.root_node.has_error
        and all(item.type.endswith("_item") for item in items)  # what rustc takes at top level
        and any(
            node.type == "generic_type" and node.text == spelled for node in nodes("rust", text)
        )
    )


PROGRAM = b"""struct R<const N: usize, U = u8>(U);

fn report(limit: usize) -> usize {
    let total = limit * 2;
    total + size_of::<R<1024>>()
}
"""


def test_the_schedule_leaves_the_alias_where_the_function_stood() -> None:
    def bug(text: bytes) -> bool:
        return _names_generic(text, b"R<1024>") and b"struct R<const N: usize" in text

    reduced = reduce_text(PROGRAM, "rust", bug)
    assert b"type T = R<1024>;" in reduced.text
    assert b"fn" not in reduced.text
    without = reduce_text(PROGRAM, "rust", bug, skipped_passes=("aliases",))
    assert b"fn" in without.text
    assert len(reduced.text) < len(without.text)


def test_inside_ppr_the_alias_keeps_each_program_its_own_version_of_the_type() -> None:
    """The seed compiles naming `R<1024, u16>`, the variant fails naming `R<1024>`: the
    alias written over the seed's function is carried to the variant's around its
    version of the type."""
    rust = grammars.load("rust")
    assert rust is not None
    seed = PROGRAM.replace(b"R<1024>", b"R<1024, u16>")

    def run_test(text: bytes) -> Outcome:
        if b"struct R<const N: usize" in text and _names_generic(text, b"R<1024>"):
            return Outcome(Verdict.BAD, 1, 0.0, "exit 1")
        if b"struct R<const N: usize" in text and _names_generic(text, b"R<1024, u16>"):
            return Outcome(Verdict.GOOD, 0, 0.0)
        return Outcome(Verdict.SKIP, 125, 0.0)

    engine = Engine(run_test, lambda outcome: outcome.verdict is Verdict.BAD, jobs=1)
    try:
        current = bisect_pair(seed, PROGRAM, rust, engine)
        reduce_pair(current)
    finally:
        engine.close()
    seed_text, variant_text = current.state.seed_text(), current.state.variant_text()
    assert b"type T = R<1024, u16>;" in seed_text, seed_text
    assert b"type T = R<1024>;" in variant_text, variant_text
    assert b"fn" not in seed_text + variant_text
    assert current.state.diff_tokens() == 2
