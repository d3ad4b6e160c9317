"""One program's tokens: byte spans that own their leading trivia, and how kept ones are joined.

Tokens keep the bytes that precede them (white space and comments, "trivia"),
so a pair state with everything kept renders the original files byte for byte
and candidates stay readable and diffable. With a grammar, tokens are the
tree-sitter leaves without comments (what the benchmarks count); without one,
plain words.

When deletions bring two kept tokens together, `join` puts a space between
them where their bytes would lex as one token; the byte classes decide where.
"""

from __future__ import annotations

import re
import threading
from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Iterable

import tree_sitter

from gitreduce.lang.grammars import Grammar
from gitreduce.lang.syntax import Parsed, leaf_spans, plain_tokens

# A line break and the white space after it, up to what starts the line
_LINE_BREAK = re.compile(rb"\n([ \t\f\v\r]*)")


class TokenList:
    """One program's tokens as byte spans; token i owns text[leads[i]:ends[i]] (its trivia first).

    Owning the preceding trivia (rather than the following) means a run of
    consecutive tokens is one slice of the original text, and deleting a token
    takes its indentation and comments with it.
    """

    __slots__ = ("_texts", "ends", "leads", "starts", "tail", "text")

    def __init__(self, text: bytes, starts: list[int], ends: list[int]) -> None:
        if len(starts) != len(ends):
            raise ValueError("token starts and ends differ in length")
        self.text = text
        self.starts = starts
        self.ends = ends
        self.leads = [0, *ends[:-1]] if ends else []
        # the trivia after the last token is kept whatever is deleted (a final newline)
        self.tail = ends[-1] if ends else 0
        self._texts: list[bytes] | None = None

    def __len__(self) -> int:
        return len(self.starts)

    def token(self, index: int) -> bytes:
        return self.text[self.starts[index] : self.ends[index]]

    def indentation(self, index: int) -> bytes | None:
        """The white space token `index` starts its line after; None where it does not
        start a line (or a comment comes first on it)."""
        trivia = self.text[self.leads[index] : self.starts[index]]
        line = trivia.rfind(b"\n")
        if line < 0 and self.leads[index] > 0:
            return None
        white = trivia[line + 1 :]
        return None if white.strip() else white

    def indentations(self) -> dict[int, bytes]:
        """`indentation` of every token that starts a line, found by a search for line
        breaks rather than token by token (a program has far fewer lines than tokens)."""
        text, starts, ends = self.text, self.starts, self.ends
        found: dict[int, bytes] = {}
        if starts and b"\n" not in text[: starts[0]] and not text[: starts[0]].strip():
            found[0] = text[: starts[0]]
        for line in _LINE_BREAK.finditer(text):
            index = bisect_left(starts, line.end())
            starts_here = index < len(starts) and starts[index] == line.end()
            # the break in the token's trivia, not inside the token before (a string's)
            if starts_here and (index == 0 or ends[index - 1] <= line.start()):
                found[index] = line.group(1)
        return found

    def texts(self) -> list[bytes]:
        """Each token's bytes: read once per list (a lift asks for its reduced variant's
        three times, 1 ms each on 8,600 tokens), and shared, so not to be changed."""
        if self._texts is None:
            text = self.text
            self._texts = [
                text[start:end] for start, end in zip(self.starts, self.ends, strict=True)
            ]
        return self._texts

    def of_text(self, text: bytes) -> TokenList:
        """These tokens over `text`, an object equal to this list's text: the spans shared,
        the caller's own object kept (a rendered candidate keeps its base)."""
        if text is self.text:
            return self
        tokens = TokenList.__new__(TokenList)
        tokens.text, tokens.starts, tokens.ends = text, self.starts, self.ends
        tokens.leads, tokens.tail, tokens._texts = self.leads, self.tail, self._texts
        return tokens

    @classmethod
    def from_spans(cls, text: bytes, spans: Iterable[tuple[int, int]]) -> TokenList:
        starts: list[int] = []
        ends: list[int] = []
        previous = 0
        for start, end in spans:
            if start < previous or end <= start or end > len(text):
                raise ValueError(f"token spans must be ordered, disjoint and non-empty: {start}")
            starts.append(start)
            ends.append(end)
            previous = end
        return cls(text, starts, ends)


class _Recent:
    """Texts tokenized lately, with their tokens, by grammar and content.

    A pair's texts are tokenized where a candidate is made and again where its
    difference is measured, and a program one pass leaves alone comes back with
    every candidate of the other: rustc195-105238's pair tokenized 480 texts in
    1,571 calls, each a full parse. Tokens are their text's alone (under one
    grammar), so an equal text may take them. Kept: at most `TEXTS` texts and
    `TOKENS` tokens in all (about 80 bytes a token: three lists and the offsets'
    int objects, so some 20 MB; ten texts of csmith-23k's size). Thread-safe: the
    main thread and a pair's aligning thread tokenize.
    """

    TEXTS = 32
    TOKENS = 250_000

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._known: OrderedDict[tuple[str, bytes], TokenList] = OrderedDict()
        self._tokens = 0

    def get(self, grammar: str, text: bytes) -> TokenList | None:
        with self._lock:
            known = self._known.get((grammar, text))
            if known is not None:
                self._known.move_to_end((grammar, text))
        return None if known is None else known.of_text(text)

    def put(self, grammar: str, text: bytes, tokens: TokenList) -> None:
        plain = text if type(text) is bytes else bytes(text)  # kept without a rendered base
        with self._lock:
            earlier = self._known.pop((grammar, plain), None)  # another thread's, meanwhile
            if earlier is not None:
                self._tokens -= len(earlier)
            self._known[grammar, plain] = tokens.of_text(plain)
            self._tokens += len(tokens)
            while len(self._known) > self.TEXTS or (
                self._tokens > self.TOKENS and len(self._known) > 1
            ):
                self._tokens -= len(self._known.popitem(last=False)[1])


_recent = _Recent()


def tokenize(
    text: bytes,
    grammar: Grammar | None = None,
    tree: tree_sitter.Tree | None = None,
    *,
    parsed: Parsed | None = None,
) -> TokenList:
    """Tokens as the benchmarks count them (tree-sitter leaves, comments left out), or plain words.

    The grammar's leaves are used directly rather than through `Syntax`, which
    would parse the text a second time to count its baseline errors. `tree`, a
    full parse of `text` with the grammar (one the syntax check kept), spares
    the parse; `parsed`, a full parse with its tokens read (`Syntax.reparsed`),
    the walk of the tree too. Texts tokenized lately are not tokenized again
    (`_Recent`).
    """
    name = "" if grammar is None else grammar.name
    known = _recent.get(name, text)
    if known is not None:
        return known
    if grammar is None:
        tokens = TokenList.from_spans(text, plain_tokens(text))
    elif parsed is not None:
        tokens = TokenList(text, parsed.token_starts, parsed.token_ends)
    else:
        tokens = TokenList(text, *leaf_spans(tree or grammar.parser().parse(text)))
    _recent.put(name, text, tokens)
    return tokens


# --- joining kept tokens -----------------------------------------------------------------------

_WORD, _OPERATOR, _QUOTE = 1, 2, 3


def _byte_classes() -> bytes:
    classes = bytearray(256)
    for byte in range(256):
        char = chr(byte)
        if byte >= 0x80 or char.isalnum() or char in "_$":
            classes[byte] = _WORD
        elif char in "!#%&*+-./:<=>?@\\^|~":
            classes[byte] = _OPERATOR
        elif char in "'\"`":
            classes[byte] = _QUOTE
    return bytes(classes)


_CLASSES = _byte_classes()
_GLUING = {
    (_WORD, _WORD),  # `int` `x` -> `intx`
    (_WORD, _QUOTE),  # `L` `"s"` -> a prefixed literal
    (_QUOTE, _WORD),  # `"s"` `x` -> a C++ literal suffix
    (_QUOTE, _QUOTE),
    (_OPERATOR, _OPERATOR),  # `+` `+` -> `++`, `/` `/` -> a comment
}
# Indexed [left << 8 | right]: whether two bytes meeting at a deletion would lex as one token.
# Built from one row per class of the left byte (the class table translated) rather than pair by
# pair: every run imports this module, and 65,536 set lookups took 10 ms of its start.
_ROW_OF_CLASS = [
    _CLASSES.translate(bytes((left, right) in _GLUING for right in range(256))) for left in range(4)
]
_GLUES = b"".join(_ROW_OF_CLASS[left] for left in _CLASSES)


def join(chunks: list[bytes], gaps: list[bool] | None = None) -> bytes:
    """Concatenate rendered runs, with one space where a deletion made two tokens merge.

    Deleting tokens can bring bytes together that never touched (`a+b` minus `+`
    reads `ab`); the tokens of a candidate must stay the kept tokens, or token
    counts, diff sizes and the syntax check would all describe another program.
    Only joints where something was deleted (`gaps[i]` for chunk i; all joints
    when `gaps` is None) are checked: elsewhere the two tokens stood side by
    side in one of the originals, and a space there could change a string.
    """
    if len(chunks) < 2:
        return b"".join(chunks)
    out = [chunks[0]]
    last = chunks[0][-1] if chunks[0] else -1
    for index in range(1, len(chunks)):
        chunk = chunks[index]
        if not chunk:
            continue
        if last >= 0 and (gaps is None or gaps[index]) and _GLUES[last << 8 | chunk[0]]:
            out.append(b" ")
        out.append(chunk)
        last = chunk[-1]
    return b"".join(out)
