"""Single-program reduction: the pass schedule, run to a fixpoint.

Tree sweeps (Perses-style) until they stop paying, then a token-level ddmin
that catches what no grammar rule offers (a stray keyword, a qualifier, an
operator), then the tree again if tokens went. Files without a grammar get
lines, then tokens. A final tidy normalises white space when the test agrees.
"""

from __future__ import annotations

import os
import re

from gitreduce.core.current import Current, Unit, delete_units
from gitreduce.lang.syntax import plain_tokens
from gitreduce.passes.names import delete_names
from gitreduce.passes.parameters import delete_parameters
from gitreduce.passes.results import delete_results
from gitreduce.passes.tree import Catalog, TreeReducer
from gitreduce.passes.windows import delete_brackets, delete_windows

_TRAILING_SPACE = re.compile(rb"[ \t]+$", re.MULTILINE)
_BLANK_RUNS = re.compile(rb"\n{3,}")
_FINAL_BLANK_LINES = re.compile(rb"\n\n+\Z")


def token_units(current: Current) -> list[Unit]:
    """Every token of the current text as a unit (grammar tokens when parsed, else words)."""
    if current.parsed is not None:
        spans = zip(current.parsed.token_starts, current.parsed.token_ends, strict=True)
    else:
        spans = iter(plain_tokens(current.text))
    return [Unit(start, end) for start, end in spans]


def line_units(text: bytes) -> list[Unit]:
    units, start = [], 0
    for line in text.splitlines(keepends=True):
        if line.strip():
            units.append(Unit(start, start + len(line)))
        start += len(line)
    return units


def tidy(text: bytes) -> bytes:
    """Trailing blanks, runs of blank lines and blank lines at either end removed, and
    the indentation every line shares (what is left of a hoisted body); the
    indentation of lines relative to each other (and so Python) untouched."""
    squeezed = _BLANK_RUNS.sub(b"\n\n", _TRAILING_SPACE.sub(b"", text)).lstrip(b"\n")
    return _dedent(_FINAL_BLANK_LINES.sub(b"\n", squeezed))


def _dedent(text: bytes) -> bytes:
    lines = text.split(b"\n")
    margins = [line[: len(line) - len(line.lstrip(b" \t"))] for line in lines if line.strip()]
    if not margins:
        return text
    shared = os.path.commonprefix(margins)  # noqa: RUF071 -- a prefix of characters is meant
    if not shared:
        return text
    return b"\n".join(line[len(shared) :] if line.strip() else line for line in lines)


def sweep(current: Current, original: Catalog) -> bool:
    """One tree sweep, with stock phrases from the original and the current text.

    The original's phrases (a `0`, an `int`) are often gone from the current
    text by the time a node that could take them comes up.
    """
    assert current.parsed is not None
    return TreeReducer(current, original.extended(current.parsed)).sweep()


def reduce_program(current: Current) -> None:
    """Shrink `current` in place until no pass finds anything; interruptible at any point."""
    engine = current.engine
    original = None
    if current.parsed is not None and current.syntax is not None:
        original = Catalog(current.syntax.grammar)
        original.learn(current.parsed)
    while True:
        before = len(current.text)
        if original is not None:
            engine.pass_name = "tree"
            while sweep(current, original):
                pass
            engine.pass_name = "names"
            delete_names(current)
            engine.pass_name = "parameters"
            delete_parameters(current)
            engine.pass_name = "results"
            delete_results(current)
            engine.pass_name = "brackets"
            delete_brackets(current)
        else:
            engine.pass_name = "lines"
            delete_units(current, line_units(current.text))
        engine.pass_name = "tokens"
        delete_units(current, token_units(current))
        if current.parsed is not None:
            engine.pass_name = "windows"
            delete_windows(current)
        if len(current.text) >= before:
            break
    engine.pass_name = "tidy"
    current.try_rewrite(tidy)
