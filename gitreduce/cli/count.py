"""`git reduce count FILE [FILE]`: a program's size, or a pair's, in the tokens reports use.

Job: the subcommand's arguments and its one line on stdout; the counting is
`api.count_tokens` / `api.diff_tokens`. The command is registered on `git
reduce`'s one application (see `cli.app`). The output is the benchmarks'
reference counter's (`benchmarks/tools/tokens.py`): `N` for one file, `SEED
VARIANT DIFF` for two, so scripts written for one take the other.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from gitreduce import api
from gitreduce.cli.terminal import Terminal
from gitreduce.core.errors import UserError

HELP = (
    "Count a program's tokens as every size git reduce reports is counted: the non-empty, "
    "non-comment leaves of its tree-sitter parse tree (words and punctuation marks for a "
    "language no grammar parses). With two files, a seed and a variant, print the seed's "
    "tokens, the variant's, and their difference: the tokens inserted plus deleted by a "
    "minimal token diff (the difference a pair's summary reports).\n\n"
    "Exit codes: 0 done, 2 bad input (one line)."
)


def count_command(
    files: Annotated[
        list[Path],
        typer.Argument(metavar="FILE [FILE]", help="A program, or a seed and its variant."),
    ],
    language: Annotated[
        str | None,
        typer.Option(metavar="LANG", help="Grammar to parse with (default: from the extension)."),
    ] = None,
) -> None:
    try:
        if len(files) == 1:
            line = str(api.count_tokens(files[0], language))
        elif len(files) == 2:
            seed, variant = files
            sizes = (
                api.count_tokens(seed, language),
                api.count_tokens(variant, language),
                api.diff_tokens(seed, variant, language),
            )
            line = " ".join(str(size) for size in sizes)
        else:
            raise UserError("give one FILE, or a SEED and a VARIANT")
    except UserError as error:
        Terminal(stderr=True, soft_wrap=True).print(
            f"[red]error:[/] {escape(str(error))}", highlight=False
        )
        raise typer.Exit(error.exit_code) from None
    sys.stdout.write(line + "\n")
