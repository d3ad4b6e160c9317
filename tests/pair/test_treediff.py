"""Δ_T: GumTree matching of seed and variant trees, and the subtree-level edit script."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gitreduce.lang import grammars
from gitreduce.lang.syntax import count_errors, leaves
from gitreduce.pair.treediff import (
    Deletion,
    FlatTree,
    Insertion,
    Move,
    Replacement,
    TreeDiff,
    Update,
    diff_trees,
)

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "cases"


def parse(language: str, text: bytes):
    grammar = grammars.load(language)
    assert grammar is not None
    return grammar.parser().parse(text)


def diff(language: str, seed: bytes, variant: bytes) -> TreeDiff:
    result = diff_trees(parse(language, seed), seed, parse(language, variant), variant)
    check_consistent(result)
    return result


def tokens(language: str, text: bytes) -> list[bytes]:
    return [text[leaf.start_byte : leaf.end_byte] for leaf in leaves(parse(language, text))]


def text_of(text: bytes, span: tuple[int, int]) -> bytes:
    return text[span[0] : span[1]]


def check_consistent(result: TreeDiff) -> None:
    """Mapping is one-to-one between same kinds; every unmatched node is covered by an op."""
    seed, variant = result.seed, result.variant
    seen: set[int] = set()
    for a, b in result.mapping.items():
        assert b not in seen
        seen.add(b)
        assert seed.kind(a) == variant.kind(b)
    seed_spans = [
        op.seed_span for op in result.operations if isinstance(op, Deletion | Replacement)
    ]
    variant_spans = [
        op.variant_span for op in result.operations if isinstance(op, Insertion | Replacement)
    ]
    for tree, spans, partners in (
        (seed, seed_spans, set(result.mapping)),
        (variant, variant_spans, seen),
    ):
        for node in range(len(tree)):
            if node in partners or tree.starts[node] == tree.ends[node]:
                continue
            assert any(
                start <= tree.starts[node] and tree.ends[node] <= end for start, end in spans
            ), (
                tree.kind(node),
                tree.source(node),
            )


# -- the flat representation ---------------------------------------------------


def test_flat_tree_numbers_nodes_in_preorder_with_contiguous_subtrees():
    text = b"int f(int a) { return a + 1; }\nint g(void) { return 2; }\n"
    tree = parse("c", text)
    flat = FlatTree(tree, text)
    nodes = []
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        nodes.append(node)
        stack.extend(reversed(node.children))
    assert len(flat) == len(nodes)
    for index, node in enumerate(nodes):
        assert flat.kind(index) == node.type
        assert flat.span(index) == (node.start_byte, node.end_byte)
        assert flat.sizes[index] == node.descendant_count
        for child in flat.children[index]:
            assert index < child < index + flat.sizes[index]
            assert flat.parents[child] == index
    returns = [i for i in range(len(flat)) if flat.kind(i) == "return_statement"]
    assert flat.hashes[returns[0]] != flat.hashes[returns[1]]
    again = FlatTree(parse("c", b"int h(void) {  return 2;}"), b"int h(void) {  return 2;}")
    other = next(i for i in range(len(again)) if again.kind(i) == "return_statement")
    assert again.hashes[other] == flat.hashes[returns[1]]  # whitespace is not structure


# -- small edits ---------------------------------------------------------------

IDENTICAL = {
    "c": b"int g(int x) { return x * 2; }\nint main(void) { int a = g(3); if (a) a++; }\n",
    "rust": b"fn g(x: i32) -> i32 { x * 2 }\nfn main() { let mut a = g(3); if a > 0 { a += 1; } }",
}


@pytest.mark.parametrize("language", IDENTICAL)
def test_identical_programs_have_an_empty_script(language):
    program = IDENTICAL[language]
    result = diff(language, program, program)
    assert result.operations == []
    assert len(result.mapping) == len(result.seed)


def test_layout_changes_are_not_differences():
    seed = b"int main(void) { int a = 1; return a; }\n"
    variant = b"int main(void)\n{\n    int a = 1;\n\n    return a;\n}\n"
    assert diff("c", seed, variant).operations == []


@pytest.mark.parametrize(
    ("language", "seed", "variant", "old", "new"),
    [
        (
            "c",
            b"int f(void) { int x = 3L; g(x); return 1; }",
            b"int f(void) { int x = 0x9cL; g(x); return 1; }",
            b"3L",
            b"0x9cL",
        ),
        (
            "rust",
            b"fn main() { let x = 1; foo(x); }",
            b"fn main() { let x = 42; foo(x); }",
            b"1",
            b"42",
        ),
    ],
)
def test_a_changed_constant_is_one_update(language, seed, variant, old, new):
    result = diff(language, seed, variant)
    assert len(result.operations) == 1
    (update,) = result.updates
    assert text_of(seed, update.seed_span) == old
    assert text_of(variant, update.variant_span) == new
    assert result.undo([update]) == seed
    assert result.apply([update]) == variant


@pytest.mark.parametrize(
    ("language", "seed", "variant", "inserted"),
    [
        ("c", b"int f(void) { a(); b(); }", b"int f(void) { a(); c(1); b(); }", b"c(1);"),
        (
            "rust",
            b"fn main() {\n    a();\n    b();\n}\n",
            b"fn main() {\n    a();\n    b();\n    c(1);\n}\n",
            b"c(1);",
        ),
    ],
)
def test_an_inserted_statement_is_one_insertion(language, seed, variant, inserted):
    result = diff(language, seed, variant)
    assert len(result.operations) == 1
    (insertion,) = result.insertions
    assert insertion.kind == "expression_statement"
    assert text_of(variant, insertion.variant_span) == inserted
    assert insertion.kept == ()
    assert tokens(language, result.apply([insertion])) == tokens(language, variant)
    assert tokens(language, result.undo([insertion])) == tokens(language, seed)


@pytest.mark.parametrize(
    ("language", "removed", "rest"),
    [
        ("c", b"static int g(int y) { return y + 7; }", b"int main(void) { return 0; }"),
        ("rust", b"fn g(y: i32) -> i32 { y + 7 }", b"fn main() { let z = 0; }"),
    ],
)
def test_a_deleted_function_is_one_deletion(language, removed, rest):
    seed = removed + b"\n" + rest + b"\n"
    variant = rest + b"\n"
    result = diff(language, seed, variant)
    assert len(result.operations) == 1
    (deletion,) = result.deletions
    assert text_of(seed, deletion.seed_span) == removed
    assert deletion.kind in ("function_definition", "function_item")
    assert tokens(language, result.apply([deletion])) == tokens(language, variant)
    assert tokens(language, result.undo([deletion])) == tokens(language, seed)


def test_an_if_wrapping_existing_statements_is_an_insertion_and_moves():
    seed = b"int f(int x) {\n  a();\n  b();\n  c();\n  d();\n}\n"
    variant = b"int f(int x) {\n  a();\n  if (x) {\n    b();\n    c();\n    d();\n  }\n}\n"
    result = diff("c", seed, variant)
    assert not result.deletions
    (insertion,) = result.insertions
    assert insertion.kind == "if_statement"
    assert [text_of(variant, span) for span in insertion.kept] == [b"b();", b"c();", b"d();"]
    moved = sorted(text_of(seed, move.seed_span) for move in result.moves)
    assert moved == [b"b();", b"c();", b"d();"]
    assert len(result.operations) == 4
    # undoing the wrapper keeps the wrapped statements: back to the seed's tokens
    assert tokens("c", result.undo([insertion])) == tokens("c", seed)


def test_wrapping_most_of_a_block_keeps_the_block_matched_to_the_outer_one():
    # dice alone prefers the inner block (it holds 9 of the 10 statements)
    body = [f"  s{i}();\n".encode() for i in range(10)]
    seed = b"void f(int x) {\n" + b"".join(body) + b"}\n"
    variant = b"void f(int x) {\n" + body[0] + b"  if (x) {\n" + b"".join(body[1:]) + b"  }\n}\n"
    result = diff("c", seed, variant)
    seed_body = next(
        i for i in range(len(result.seed)) if result.seed.kind(i) == "compound_statement"
    )
    outer = next(
        i for i in range(len(result.variant)) if result.variant.kind(i) == "compound_statement"
    )
    assert result.mapping[seed_body] == outer
    assert [op.kind for op in result.insertions] == ["if_statement"]
    assert not result.deletions


def test_a_deleted_loop_body_replaced_by_the_next_loop_is_a_deletion_and_a_move():
    # benchmark pattern: `for (i...) x;` followed by `for (j...) {...}` became a nest
    seed = (
        b"void f(void) {\n  for (i = 0; i < 8; i++)\n    l_137[i] = 5;\n"
        b"  for (l_139 = 15; (l_139 > 1); --l_139) {\n    g(l_139);\n    h(1);\n  }\n}\n"
    )
    variant = (
        b"void f(void) {\n  for (i = 0; i < 8; i++)\n"
        b"  for (l_139 = 15; (l_139 > 1); --l_139) {\n    g(l_139);\n    h(1);\n  }\n}\n"
    )
    result = diff("c", seed, variant)
    assert [text_of(seed, op.seed_span) for op in result.deletions] == [b"l_137[i] = 5;"]
    assert [op.kind for op in result.moves] == ["for_statement"]
    assert not result.insertions


def test_an_operator_change_is_a_replacement_that_can_be_undone():
    seed = b"int f(int a, int b) { return a + b; }"
    variant = b"int f(int a, int b) { return a - b; }"
    result = diff("c", seed, variant)
    (replacement,) = result.operations
    assert isinstance(replacement, Replacement)
    assert (replacement.seed_kind, replacement.variant_kind) == ("+", "-")
    assert result.undo([replacement]) == seed


def test_replacements_are_undone_one_at_a_time_or_together():
    seed = b"int f(int a, int b) {\n  int x = a + b;\n  int y = a * b;\n  return x < y;\n}\n"
    variant = b"int f(int a, int b) {\n  int x = a - b;\n  int y = a / b;\n  return x > y;\n}\n"
    result = diff("c", seed, variant)
    replacements = result.replacements
    assert len(replacements) == 3 and len(result.operations) == 3
    first = result.undo([replacements[0]])
    assert b"a + b" in first and b"a / b" in first and b"x > y" in first
    assert result.undo(replacements) == seed


def test_a_statement_moved_to_another_function_is_a_move():
    f_body = b"  a(1);\n  a(2);\n  a(3);\n"
    g_body = b"  b(1);\n  b(2);\n  b(3);\n"
    moved = b"  moved(1, 2);\n"
    seed = b"void f(void) {\n" + f_body + moved + b"}\nvoid g(void) {\n" + g_body + b"}\n"
    variant = b"void f(void) {\n" + f_body + b"}\nvoid g(void) {\n" + g_body + moved + b"}\n"
    result = diff("c", seed, variant)
    (move,) = result.operations
    assert isinstance(move, Move)
    assert text_of(seed, move.seed_span) == text_of(variant, move.variant_span) == b"moved(1, 2);"
    with pytest.raises(ValueError):
        result.apply([move])
    with pytest.raises(ValueError):
        result.undo([move])


def test_the_seed_subtree_of_an_update_inside_a_changed_statement_is_found():
    # several same-kind statements in one gap: the edited one pairs with itself
    seed = b"fn f() {\n    let hash = h();\n    let mut cur = Slot { key, distance: 0 };\n}\n"
    variant = (
        b"fn f() {\n    let hash = h();\n    let mut pos = ideal(hash);\n"
        b"    let mut cur = Slot { key, distance: 42 };\n}\n"
    )
    result = diff("rust", seed, variant)
    assert [text_of(variant, op.variant_span) for op in result.insertions] == [
        b"let mut pos = ideal(hash);"
    ]
    assert [
        (text_of(seed, u.seed_span), text_of(variant, u.variant_span)) for u in result.updates
    ] == [(b"0", b"42")]
    assert len(result.operations) == 2


def test_duplicated_statement_is_one_insertion():
    seed = b"void f(void) {\n  a();\n  b(1);\n  c();\n}\n"
    variant = b"void f(void) {\n  a();\n  b(1);\n  b(1);\n  c();\n}\n"
    result = diff("c", seed, variant)
    (insertion,) = result.operations
    assert isinstance(insertion, Insertion)
    assert text_of(variant, insertion.variant_span) == b"b(1);"


def test_undo_joins_neighbours_without_gluing_tokens():
    seed = b"int f(void) { return x; }"
    variant = b"int f(void) { return-x; }"
    result = diff("c", seed, variant)
    undone = result.undo(result.operations)
    assert tokens("c", undone) == tokens("c", seed)


# -- properties --------------------------------------------------------------------

C_FORMS = [
    "v{0} = {1};",
    "v{0} += {1};",
    "f(v{0}, {1});",
    "if (v{0}) v{0} = {1};",
    "{{ v{0} = {1}; }}",
]
RUST_FORMS = [
    "v{0} = {1};",
    "v{0} += {1};",
    "f(v{0}, {1});",
    "if v{0} > 0 {{ v{0} = {1}; }}",
    "let v{0} = {1};",
]
PROGRAM = {
    "c": (b"void g(void) {\n", b"}\n"),
    "rust": (b"fn g() {\n", b"}\n"),
}


@st.composite
def statement_lists(draw, language: str):
    """A seed statement list and a variant made by deleting some and inserting fresh ones.

    Every statement names its own variable, so no two are isomorphic and the
    true script is known to be insertions and deletions only.
    """
    forms = C_FORMS if language == "c" else RUST_FORMS
    counter = iter(range(1000))

    def statement() -> bytes:
        form = draw(st.sampled_from(forms))
        return form.format(next(counter), draw(st.integers(0, 99))).encode()

    seed = [statement() for _ in range(draw(st.integers(0, 12)))]
    variant = []
    for line in seed:
        variant.extend(statement() for _ in range(draw(st.integers(0, 2)) - 1))
        if draw(st.booleans()):
            variant.append(line)
    variant.extend(statement() for _ in range(draw(st.integers(0, 2))))
    head, tail = PROGRAM[language]

    def render(lines: list[bytes]) -> bytes:
        return head + b"".join(b"    " + line + b"\n" for line in lines) + tail

    return render(seed), render(variant)


@pytest.mark.parametrize("language", ["c", "rust"])
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_applying_the_whole_script_yields_the_variant(language, data):
    seed, variant = data.draw(statement_lists(language))
    result = diff(language, seed, variant)
    assert not result.moves, result.operations
    assert tokens(language, result.apply(result.operations)) == tokens(language, variant)
    assert tokens(language, result.undo(result.operations)) == tokens(language, seed)
    if seed == variant:
        assert result.operations == []


@pytest.mark.parametrize("language", ["c", "rust"])
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_operations_are_independent_edits_of_the_originals(language, data):
    """Any subset can be applied: each op only touches its own spans of the original text."""
    seed, variant = data.draw(statement_lists(language))
    result = diff(language, seed, variant)
    if not result.operations:
        return
    chosen = data.draw(st.lists(st.sampled_from(result.operations), unique=True, min_size=1))
    rest = [op for op in result.operations if op not in chosen]
    # applying the chosen ops then the rest gives the same tokens as applying all
    assert tokens(language, result.apply([*chosen, *rest])) == tokens(language, variant)
    for op in chosen:
        alone = result.apply([op])
        if isinstance(op, Insertion):
            assert len(alone) >= len(seed)
        else:
            start, end = op.seed_span
            assert alone[:start] == seed[:start]
            assert alone[len(alone) - (len(seed) - end) :] == seed[end:]


# -- the benchmark pairs ---------------------------------------------------------------

CASES = [
    ("gcc12-pr109392", "seed.c", "variant.c", "c"),
    ("gxx12-pr109804", "seed.cpp", "variant.cpp", "cpp"),
    ("rustc195-105238", "seed.rs", "variant.rs", "rust"),
]


@pytest.mark.parametrize(("case", "seed_name", "variant_name", "language"), CASES)
def test_benchmark_pairs_diff_consistently(case, seed_name, variant_name, language):
    directory = BENCH / case
    seed = (directory / seed_name).read_bytes()
    variant = (directory / variant_name).read_bytes()
    result = diff(language, seed, variant)
    assert 0.9 * len(result.seed) < len(result.mapping)  # mostly the same program
    # undoing every update and replacement moves the variant towards the seed
    baseline = count_errors(parse(language, variant).root_node)
    undone = result.undo([*result.updates, *result.replacements])
    assert count_errors(parse(language, undone).root_node) <= baseline
    for op in result.replacements:
        candidate = result.undo([op])
        assert candidate != variant
        assert count_errors(parse(language, candidate).root_node) <= baseline


def test_the_critical_change_of_the_gcc_case_is_one_insertion():
    directory = BENCH / "gcc12-pr109392"
    seed = (directory / "seed.c").read_bytes()
    variant = (directory / "variant.c").read_bytes()
    result = diff("c", seed, variant)
    attributes = [op for op in result.insertions if op.kind == "attribute_specifier"]
    assert [text_of(variant, op.variant_span) for op in attributes] == [
        b"__attribute__((returns_twice))"
    ]
    # and undoing it alone removes exactly those tokens
    assert len(tokens("c", result.undo(attributes))) == len(tokens("c", variant)) - 6


def test_updates_report_both_texts():
    result = diff("c", b"int x = 1;", b"int x = 2;")
    (update,) = result.operations
    assert isinstance(update, Update)
    assert update.kind == "number_literal"
