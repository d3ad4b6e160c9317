"""gitreduce: bisect and reduce failing programs, caching every verdict in git.

From Python: `reduce_file`, `reduce_files`, `reduce_pair`,
`reduce_revisions`, `reduce_set_pair` and `reduce_set_revisions` (see
`gitreduce.api`) return the `Summary`, `FileSetSummary`, `PairSummary` or
`SetPairSummary` the command line reports, and raise
`UserError` for input the caller can fix; `count_tokens` and `diff_tokens`
measure sizes as those summaries do.

The exports load on first use: every import of a submodule runs this file,
and generator worker processes import `gitreduce.generator.*` without wanting
git, the sessions or the grammars.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gitreduce.api import (
        count_tokens,
        diff_tokens,
        reduce_file,
        reduce_files,
        reduce_pair,
        reduce_revisions,
        reduce_set_pair,
        reduce_set_revisions,
    )
    from gitreduce.core.errors import UserError
    from gitreduce.sessions.fileset import FileSetSummary
    from gitreduce.sessions.pair import PairSummary
    from gitreduce.sessions.setpair import SetPairSummary
    from gitreduce.sessions.single import Summary

__version__ = "0.1.0"

__all__ = [
    "FileSetSummary",
    "PairSummary",
    "SetPairSummary",
    "Summary",
    "UserError",
    "count_tokens",
    "diff_tokens",
    "reduce_file",
    "reduce_files",
    "reduce_pair",
    "reduce_revisions",
    "reduce_set_pair",
    "reduce_set_revisions",
]

_HOMES = {
    "FileSetSummary": "gitreduce.sessions.fileset",
    "PairSummary": "gitreduce.sessions.pair",
    "SetPairSummary": "gitreduce.sessions.setpair",
    "Summary": "gitreduce.sessions.single",
    "UserError": "gitreduce.core.errors",
    "count_tokens": "gitreduce.api",
    "diff_tokens": "gitreduce.api",
    "reduce_file": "gitreduce.api",
    "reduce_files": "gitreduce.api",
    "reduce_pair": "gitreduce.api",
    "reduce_revisions": "gitreduce.api",
    "reduce_set_pair": "gitreduce.api",
    "reduce_set_revisions": "gitreduce.api",
}


def __getattr__(name: str) -> object:
    """An export, imported from its home module the first time it is asked for."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
