"""Deletions the grammar rejects and the language may accept, tried once at the end.

tree-sitter grammars are stricter than some compilers: C's implicit `int`
(`f() {}`, a global `g;`), a `void` dropped from a signature, or a parameter
list emptied while calls still pass arguments all parse with errors, so the
syntax check drops them before any test runs, where C-Vise's passes try them
and gcc takes them. Once no gated pass finds anything, every single token's
deletion is tried here without the check: at most one test per token, each
success resuming where it was. A text taken with more errors than the
original becomes the measure for the passes after it (`Syntax.tolerate`).
Only for the grammars of `STRICTER_THAN_COMPILERS`: elsewhere a deletion the
grammar rejects is one the compiler rejects too, and a loose test (any
failure will do) would take it.
"""

from __future__ import annotations

import bisect

from gitreduce.core.current import Current, render_deletions
from gitreduce.lang.syntax import STRICTER_THAN_COMPILERS


def worthwhile(current: Current) -> bool:
    """Whether the grammar is known to be stricter than the language's compilers."""
    return current.syntax is not None and current.syntax.grammar.name in STRICTER_THAN_COMPILERS


def delete_tokens_ungated(current: Current) -> bool:
    """One sweep of single-token deletions past the syntax check; True if any was taken."""
    position = 0
    progress = False
    while current.parsed is not None:
        parsed = current.parsed
        text, starts, ends = parsed.text, parsed.token_starts, parsed.token_ends
        spans = list(zip(starts[position:], ends[position:], strict=True))
        found = current.try_ungated(render_deletions(text, [span]) for span in spans)
        if found is None:
            return progress
        progress = True
        assert current.parsed is not None
        position = bisect.bisect_left(current.parsed.token_starts, spans[found][0])
    return progress
