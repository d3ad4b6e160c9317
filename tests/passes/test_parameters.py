"""The parameter pass: parameter i goes with argument i at every call site.

Predicates check arity the way a compiler would (every call of `f` passes as
many arguments as `f` has parameters; for templates, as many type arguments as
type parameters), so the tree passes cannot remove a parameter or an argument
alone, and the parameter pass has to take both at once.
"""

from __future__ import annotations

import itertools
import re

import pytest
from support import (
    GATED_ONLY,
    LookaheadLog,
    Predicate,
    current_for,
    nodes,
    parses_cleanly,
    reduce_text,
)

from gitreduce.core.current import Current
from gitreduce.lang import grammars
from gitreduce.lang.syntax import Syntax
from gitreduce.passes.parameters import delete_parameters, parameter_candidates

_TOKEN = re.compile(rb"\w+|[^\w\s]")
CALLS = {"call_expression", "call"}


def tokens(text: bytes) -> list[bytes]:
    return _TOKEN.findall(text)


def candidates(text: bytes, language: str) -> list[list[bytes]]:
    """Every candidate of the pass, as token lists."""
    current = current_for(text, language)
    try:
        return [tokens(candidate) for candidate in parameter_candidates(current)]
    finally:
        current.engine.close()


def _count(node) -> int:
    return len([child for child in node.named_children if "comment" not in child.type])


def arities(language: str, text: bytes, name: bytes) -> tuple[set[int], set[int]]:
    """Parameter counts of the definitions of `name` and argument counts of its calls."""
    parameters, arguments = set(), set()
    for node in nodes(language, text):
        owner = node.child_by_field_name("parameters")
        if owner is not None:
            label = node.child_by_field_name("name") or node.child_by_field_name("declarator")
            if label is not None and label.text == name:
                parameters.add(_count(owner))
        if node.type in CALLS:
            function = node.child_by_field_name("function")
            if function is not None and function.text == name:
                arguments.add(_count(node.child_by_field_name("arguments")))
    return parameters, arguments


def compiles(language: str, name: bytes, *patterns: bytes) -> Predicate:
    """Parses, `name` is defined once and called with matching arity, and all `patterns` match."""

    def predicate(text: bytes) -> bool:
        if not parses_cleanly(language, text):
            return False
        parameters, arguments = arities(language, text, name)
        return (
            len(parameters) == 1
            and arguments == parameters
            and all(re.search(pattern, text) for pattern in patterns)
        )

    return predicate


CASES = {
    "c": (
        "c",
        b"int f(int a, int b) {\n    return b;\n}\n\nint main(void) {\n    return f(1, 2);\n}\n",
        compiles("c", b"f", rb"int f\([^)]*\bint b\b", rb"return b;"),
    ),
    "c-local": (
        "c",
        b"int f(int a) {\n    return a;\n}\n\nint main(void) {\n    return f(1234);\n}\n",
        compiles("c", b"f", rb"int f\(", rb"return a;", rb"int a\b"),
    ),
    "rust": (
        "rust",
        b"fn f(a: i32, b: i32) -> i32 {\n    b\n}\n\nfn main() {\n    f(1, 2);\n}\n",
        compiles("rust", b"f", rb"fn f\([^)]*\bb: i32", rb"\{\s*b\s*\}"),
    ),
    "python": (
        "python",
        b"def f(a, b):\n    return b\n\n\nf(1, 2)\n",
        compiles("python", b"f", rb"def f\([^)]*\bb\b", rb"return b"),
    ),
    "javascript": (
        "javascript",
        b"function f(a, b) {\n  return b;\n}\n\nf(1, 2);\n",
        compiles("javascript", b"f", rb"function f\([^)]*\bb\b", rb"return b;"),
    ),
}


@pytest.fixture(scope="module")
def reductions():
    cache = {}

    def get(name: str, jobs: int):
        if (name, jobs) not in cache:
            language, program, predicate = CASES[name]
            cache[name, jobs] = reduce_text(
                program, language, predicate, jobs=jobs, skipped_passes=GATED_ONLY
            )
        return cache[name, jobs]

    return get


def steps(program: bytes, result) -> list[tuple[str, bytes, bytes]]:
    return list(zip(result.passes, [program, *result.accepted], result.accepted, strict=False))


@pytest.mark.parametrize("name", ["c", "rust", "python", "javascript"])
def test_parameter_and_argument_go_together(reductions, name):
    language, program, predicate = CASES[name]
    result = reductions(name, 1)
    assert predicate(result.text)
    assert arities(language, result.text, b"f") == ({1}, {1})
    assert re.search(rb"\bf\(\s*2\s*\)", result.text), result.text
    assert not re.search(rb"\ba\b|\b1\b", result.text), result.text
    # one accepted step of the parameter pass took a parameter and `1` together
    assert any(
        pass_name == "parameters"
        and arities(language, before, b"f") == ({2}, {2})
        and arities(language, after, b"f") == ({1}, {1})
        and b"f(1, 2)" in before
        and re.search(rb"f\(\s*2\)", after)
        for pass_name, before, after in steps(program, result)
    ), steps(program, result)


def test_parameter_kept_as_a_local_when_the_body_needs_it(reductions):
    _, program, predicate = CASES["c-local"]
    result = reductions("c-local", 1)
    assert predicate(result.text)
    assert re.search(rb"int f\(\s*\)\s*\{\s*int a;\s*return a;\s*\}", result.text), result.text
    assert re.search(rb"\bf\(\s*\)\s*;", result.text.split(b"}", 1)[1]), result.text
    assert any(
        pass_name == "parameters" and b"f(1234)" in before and b"int a;" in after
        for pass_name, before, after in steps(program, result)
    )


@pytest.mark.parametrize("name", CASES)
def test_properties_interesting_never_larger_jobs_independent(reductions, name):
    language, program, predicate = CASES[name]
    one, two = reductions(name, 1), reductions(name, 2)
    assert predicate(one.text)
    sizes = [len(program)] + [len(text) for text in one.accepted]
    assert all(later < earlier for earlier, later in itertools.pairwise(sizes))
    assert all(predicate(text) for text in one.accepted)
    assert one.text == two.text
    assert all(parses_cleanly(language, text) for text in two.tested)


# --- the candidates themselves -------------------------------------------------------------


def test_c_candidates_deletion_then_local_per_position():
    program = b"int f(int a, int b) { return b; }\nint main() { return f(1, 2); }\n"
    assert candidates(program, "c") == [
        tokens(b"int f(int b) { return b; }\nint main() { return f(2); }\n"),
        tokens(b"int f(int b) { int a; return b; }\nint main() { return f(2); }\n"),
        tokens(b"int f(int a) { return b; }\nint main() { return f(1); }\n"),
        tokens(b"int f(int a) { int b; return b; }\nint main() { return f(1); }\n"),
    ]


def test_every_parameter_list_and_call_is_edited_at_once():
    program = (
        b"int f(int a, int b);\n"
        b"int f(int a, int b) { return b; }\n"
        b"int main(void) { f(1, 2); return f(3, 4); }\n"
    )
    assert candidates(program, "c")[0] == tokens(
        b"int f(int b);\nint f(int b) { return b; }\nint main(void) { f(2); return f(4); }\n"
    )


def test_calls_with_fewer_arguments_keep_them():
    program = b"def f(a, b=2):\n    return a\n\n\nf(1)\nf(3, 4)\n"
    found = candidates(program, "python")
    assert tokens(b"def f(a):\n    return a\n\n\nf(1)\nf(3)\n") in found
    # Python bodies have no `{`: no param-to-local variant
    assert len(found) == 2


@pytest.mark.parametrize(
    ("language", "program", "expected"),
    [
        (
            "rust",
            b"fn f(a: i32, b: i32) -> i32 { b }\nfn main() { f(1, 2); }\n",
            b"fn f(b: i32) -> i32 { b }\nfn main() { f(2); }\n",
        ),
        (
            "python",
            b"def f(a, b):\n    return b\nf(1, 2)\n",
            b"def f(b):\n    return b\nf(2)\n",
        ),
        (
            "javascript",
            b"function f(a, b) { return b; }\nf(1, 2);\n",
            b"function f(b) { return b; }\nf(2);\n",
        ),
    ],
)
def test_first_candidate_pairs_parameter_and_argument(language, program, expected):
    assert candidates(program, language)[0] == tokens(expected)


def test_pass_reports_no_progress():
    _, program, _ = CASES["c"]
    current = current_for(program, "c", lambda text: text == program)
    try:
        assert not delete_parameters(current)
    finally:
        current.engine.close()
    assert current.text == program


# --- type parameters -----------------------------------------------------------------------

TEMPLATE = (
    b"template <typename T, typename U> T g(U u) { return T(); }\n"
    b"int main() { g<int, char>('a'); }\n"
)


def test_template_candidates_pair_type_parameters_with_type_arguments():
    found = candidates(TEMPLATE, "cpp")
    drop_t = tokens(
        b"template <typename U> T g(U u) { return T(); }\nint main() { g<char>('a'); }\n"
    )
    inline_t = tokens(
        b"template <typename U> int g(U u) { return int(); }\nint main() { g<char>('a'); }\n"
    )
    inline_u = tokens(
        b"template <typename T> T g(int u) { return T(); }\nint main() { g<int>('a'); }\n"
    )
    drop_u_value = tokens(
        b"template <typename T, typename U> T g() { return T(); }\nint main() { g<int, char>(); }\n"
    )
    for candidate in (drop_t, inline_t, inline_u, drop_u_value):
        assert candidate in found
    assert found.index(drop_t) + 1 == found.index(inline_t)


def template_predicate(*patterns: bytes) -> Predicate:
    """Parses; `g`'s type parameters and type arguments agree in number; every type name
    used in the template is one of its parameters; all `patterns` match."""

    def predicate(text: bytes) -> bool:
        if not parses_cleanly("cpp", text):
            return False
        found = nodes("cpp", text)
        templates = [n for n in found if n.type == "template_declaration"]
        if len(templates) != 1:
            return False
        declared = {
            n.text
            for n in nodes("cpp", templates[0].child_by_field_name("parameters").text)
            if n.type == "type_identifier"
        }
        used = {n.text for n in nodes("cpp", templates[0].text) if n.type == "type_identifier"}
        counts = {
            _count(n.child_by_field_name("arguments"))
            for n in found
            if n.type == "template_function" and n.child_by_field_name("name").text == b"g"
        }
        defines_g = any(
            n.type == "function_declarator" and n.child_by_field_name("declarator").text == b"g"
            for n in nodes("cpp", templates[0].text)
        )
        calls_g = any(
            n.type == "call_expression"
            and n.child_by_field_name("function").type == "template_function"
            for n in found
        )
        return (
            defines_g
            and calls_g
            and used <= declared
            and counts == {len(declared)}
            and all(re.search(pattern, text) for pattern in patterns)
        )

    return predicate


@pytest.mark.parametrize(
    ("program", "stand_in"),
    [
        (TEMPLATE, b"int"),
        # the shortest built-in type of the whole file, not T's own argument
        (
            b"template <typename T, typename U> T g(U u) { return T(); }\n"
            b"double h() { g<double, char>('a'); return 0; }\n",
            b"char",
        ),
    ],
)
def test_type_parameter_removed_and_its_uses_inlined(program, stand_in):
    predicate = template_predicate(
        rb"typename U> \w+ g\(U u\) \{ return \w+\(\); \}", rb"\{ g<[^>]*>\('a'\);"
    )
    assert predicate(program)
    # `types` would later make U's `char` an `int` too: which argument went is the point here
    one = reduce_text(program, "cpp", predicate, jobs=1, skipped_passes=("types",))
    assert predicate(one.text)
    assert not re.search(rb"\bT\b", one.text), one.text
    assert re.search(rb"g<\s*char\s*>", one.text), one.text
    assert any(
        pass_name == "parameters"
        and b"typename T" in before
        and not re.search(rb"\bT\b", after)
        and re.search(rb"\b" + stand_in + rb"\s+g\(", after)
        and re.search(rb"return " + stand_in + rb"\(\)", after)
        for pass_name, before, after in steps(program, one)
    ), steps(program, one)
    sizes = [len(program)] + [len(text) for text in one.accepted]
    assert all(later < earlier for earlier, later in itertools.pairwise(sizes))
    two = reduce_text(program, "cpp", predicate, jobs=2, skipped_passes=("types",))
    assert two.text == one.text


def test_no_stand_in_without_a_primitive_type():
    program = b"template <typename T> T g(T t) { return t; }\nS main() { g<S>(s); }\n"
    found = candidates(program, "cpp")
    # the type parameter may only be dropped; nothing can stand in for `T`
    assert tokens(b"template <> T g(T t) { return t; }\nS main() { g<>(s); }\n") in found
    assert not any(b"int" in candidate for candidate in itertools.chain(*found))


# --- known bugs ----------------------------------------------------------------------------

NESTED_C = b"int f(int a, int b) { return b; }\nint main() { return f(f(1, 2), 3); }\n"


@pytest.mark.parametrize(
    ("language", "program", "expected"),
    [
        ("c", NESTED_C, b"int f(int b) { return b; }\nint main() { return f(3); }\n"),
        (
            "python",
            b"def f(a, b):\n    return b\nf(1, f(2, 3))\n",
            b"def f(a):\n    return b\nf(1)\n",
        ),
    ],
)
def test_nested_calls_of_the_same_function(language, program, expected):
    assert tokens(expected) in candidates(program, language)


def test_nested_calls_do_not_abort_the_reduction():
    predicate = compiles("c", b"f", rb"int f\(int", rb"f\(f\(1")
    result = reduce_text(NESTED_C, "c", predicate)
    assert predicate(result.text)


def test_recursive_template_call():
    program = b"template <typename T> T g(T t) { return g<T>(t); }\nint main() { g<int>(1); }\n"
    found = candidates(program, "cpp")
    assert tokens(b"template <> int g(int t) { return g<>(t); }\nint main() { g<>(1); }\n") in found


def test_rust_turbofish_call_loses_its_argument():
    program = b"fn g<T>(a: i32, b: i32) -> i32 { b }\nfn main() { g::<u8>(1, 2); }\n"
    assert tokens(b"fn g<T>(b: i32) -> i32 { b }\nfn main() { g::<u8>(2); }\n") in candidates(
        program, "rust"
    )


def test_rust_type_parameters_pair_with_type_arguments():
    program = b"fn g<T, U>(u: U) -> T { loop {} }\nfn main() { g::<i32, u8>(1); }\n"
    assert tokens(b"fn g<U>(u: U) -> T { loop {} }\nfn main() { g::<u8>(1); }\n") in candidates(
        program, "rust"
    )


def test_javascript_parameter_kept_as_a_declared_local():
    program = b"function f(a) { return a; }\nf(7);\n"
    found = candidates(program, "javascript")
    assert any(
        tokens(b"function f() { " + keyword + b" a; return a; }\nf();\n") in found
        for keyword in (b"let", b"var")
    ), found


@pytest.mark.parametrize(
    ("language", "program", "local"),
    [
        ("go", b"package m\n\nfunc f(a int) int { return a }\nfunc g() { f(1) }\n", b"var a int ;"),
        ("rust", b"fn f(a: i32) -> i32 { a }\nfn g() { f(1); }\n", b"let a : i32 ;"),
        ("typescript", b"function f(a: number) { var b = a; }\nf(7);\n", b"var a : number ;"),
        ("c", b"int f(int a) { return a; }\nint g(void) { return f(1); }\n", b"int a ;"),
    ],
)
def test_a_parameter_kept_as_a_local_is_declared_the_program_s_way(language, program, local):
    """The keyword the program declares with (TypeScript's `var` here), else one the
    grammar has (`let`, `var`); none where a parameter's text is a declaration (C)."""
    found = [b" ".join(candidate) for candidate in candidates(program, language)]
    assert any(local in candidate for candidate in found), found


def test_what_a_round_says_follows_its_winner_is_what_it_reads_next():
    """Each parameter taken, the pass derives its candidates anew from the text that won
    (`Current.try_until_none`): what it said, while that candidate ran, it would try
    after it is what it then reads, byte for byte, so a bet on a winner still running, at
    two jobs, tests what one job asks next. Before, it said nothing, and no job bet."""
    program = b"""int f(int a, int b, int c) { return a + b * c; }
int g(int x, int y) { return f(x, y, 1) + f(y, x, 2); }
int main(void) { int u = 1; int v = 2; return g(u, v) + f(1, 2, 3); }
"""
    engine = LookaheadLog(lambda text: parses_cleanly("c", text) and b"main" in text)
    current = Current(program, engine, Syntax(grammars.load("c"), program))
    current.label = "parameters"
    try:
        assert delete_parameters(current)
    finally:
        engine.close()
    assert b"int f(  )" in current.text
    assert engine.afters_compared().get("parameters", 0) >= 3
