"""Tokens: spans that own their leading trivia, tokenising with or without a grammar, joining."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitreduce.core import edits
from gitreduce.lang import grammars
from gitreduce.pair.tokens import TokenList, _Recent, join, tokenize

CASES = Path(__file__).resolve().parents[2] / "benchmarks" / "cases"

# (seed tokens, variant tokens) of the public cases as the benchmarks' reference token counter
# reports them (`tokens.py SEED VARIANT`, run once with tree-sitter 0.26.1, tree-sitter-c 0.24.2,
# tree-sitter-cpp 0.23.4 and tree-sitter-rust 0.24.2): every size figure is counted that way
BENCHMARK_TOKENS = {
    "gcc12-pr109392": (5639, 5548),
    "gxx12-pr109804": (3933, 4025),
    "rustc195-105238": (2364, 2498),
    "toy-gcc-pattern": (1175, 1183),
}


def test_tokens_own_the_trivia_before_them_and_comments_are_trivia() -> None:
    grammar = grammars.load("c")
    assert grammar is not None
    text = b"int x; // c\n/* d */ y = 1;\n"
    tokens = tokenize(text, grammar)
    assert tokens.texts() == [b"int", b"x", b";", b"y", b"=", b"1", b";"]
    y = tokens.texts().index(b"y")
    assert text[tokens.leads[y] : tokens.ends[y]] == b" // c\n/* d */ y"
    assert text[tokens.tail :] == b"\n"
    # consecutive tokens are one slice of the text
    assert (
        b"".join(text[tokens.leads[i] : tokens.ends[i]] for i in range(len(tokens)))
        == (text[: tokens.tail])
    )


def test_without_a_grammar_tokens_are_plain_words_and_punctuation() -> None:
    tokens = tokenize(b"  a+b  c\n")
    assert tokens.texts() == [b"a", b"+", b"b", b"c"]
    assert tokens.leads[0] == 0 and tokens.tail == len(b"  a+b  c")


@pytest.mark.parametrize("spans", [[(0, 2), (1, 3)], [(1, 1)], [(2, 3), (0, 1)], [(0, 4)]])
def test_spans_must_be_ordered_disjoint_and_non_empty(spans: list[tuple[int, int]]) -> None:
    with pytest.raises(ValueError):
        TokenList.from_spans(b"abc", spans)


def test_a_text_tokenized_again_gets_its_tokens_over_its_own_object() -> None:
    """Tokens are remembered by content and grammar: an equal text gets the same spans,
    over the very object it passed (a rendered candidate keeps its base); another grammar,
    or none, tokenizes afresh."""
    grammar = grammars.load("c")
    assert grammar is not None
    base = b"int a = b >> 2;\n"
    first = tokenize(base, grammar)
    rendered = edits.apply(base, [edits.Edit(4, 5, b"c")])
    again = edits.apply(base, [edits.Edit(4, 5, b"c")])
    assert isinstance(rendered, edits.Rendered)
    tokens = tokenize(rendered, grammar)
    repeated = tokenize(again, grammar)
    assert tokens.text is rendered and repeated.text is again
    assert repeated.texts() == tokens.texts() == [b"int", b"c", b"=", b"b", b">>", b"2", b";"]
    assert tokenize(bytes(base), grammar).texts() == first.texts()
    assert tokenize(base).texts() == [b"int", b"a", b"=", b"b", b">", b">", b"2", b";"]


def test_texts_remembered_are_bounded_by_count_and_by_tokens() -> None:
    """The memory of tokenized texts keeps the newest ones within both bounds, and always
    the newest text, however large."""
    recent = _Recent()
    recent.TEXTS, recent.TOKENS = 3, 10
    texts = [b"a b c d", b"e f g h", b"i j", b"k l m n o p q r s t u v"]
    for text in texts:
        recent.put("", text, tokenize(text))
    assert recent.get("", texts[3]) is not None  # 12 tokens, over the bound alone
    assert [recent.get("", text) is not None for text in texts[:3]] == [False, False, False]
    for text in texts[:3]:
        recent.put("", text, tokenize(text))
    kept = [text for text in texts if recent.get("", text) is not None]
    assert kept == [b"a b c d", b"e f g h", b"i j"]  # 10 tokens: the 12-token text went
    recent.TOKENS = 100
    for text in (b"1", b"2", b"3", b"4"):
        recent.put("", text, tokenize(text))
    assert [recent.get("", text) is not None for text in (b"1", b"2", b"3", b"4")] == [
        False,
        True,
        True,
        True,
    ]


def test_join_spaces_only_bytes_that_would_lex_as_one_token() -> None:
    assert join([b"a", b"b"]) == b"a b"
    assert join([b"+", b"+"]) == b"+ +"
    assert join([b"L", b'"s"']) == b'L "s"'
    assert join([b"a", b"+b"]) == b"a+b"
    assert join([b"(", b"a"]) == b"(a"
    assert join([b"x ", b"y"]) == b"x y"
    # only joints where something was deleted are checked
    assert join([b"a", b"b"], [False, False]) == b"ab"
    assert join([b"a", b"b", b"c"], [False, False, True]) == b"ab c"


@pytest.mark.parametrize(("name", "counts"), BENCHMARK_TOKENS.items())
def test_tokens_of_the_benchmark_cases_are_the_benchmarks(
    name: str, counts: tuple[int, int]
) -> None:
    (seed_path,) = (CASES / name).glob("seed.*")
    (variant_path,) = (CASES / name).glob("variant.*")
    language = grammars.detect(seed_path.name)
    assert language is not None
    grammar = grammars.load(language)
    assert grammar is not None
    seed = tokenize(seed_path.read_bytes(), grammar)
    variant = tokenize(variant_path.read_bytes(), grammar)
    assert (len(seed), len(variant)) == counts


def test_the_lines_found_by_their_breaks_are_the_tokens_that_start_a_line() -> None:
    """`indentations` (a search for line breaks) and `indentation` (token by token) agree,
    on a Python program with a string over several lines, a comment first on a line, a
    first token after blank lines and a backslash continuation (a token of its own in
    Python's grammar, so what follows it does not start a line)."""
    python = grammars.load("python")
    text = (
        b"\n\n  \nx = 1\ndef f():\n    s = '''a\n    b'''\n    # note\n    return s \\\n"
        b"        + 'c'\n\tif x: pass\n"
    )
    tokens = tokenize(text, python)
    by_token = {i: tokens.indentation(i) for i in range(len(tokens))}
    assert tokens.indentations() == {i: white for i, white in by_token.items() if white is not None}
    assert [tokens.token(i) for i in tokens.indentations()] == [
        b"x",
        b"def",
        b"s",
        b"return",
        b"if",
    ]
