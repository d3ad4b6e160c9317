"""`git reduce hooks install|uninstall`: the command-line front of `gitreduce.git.hooks`.

Job: the `hooks` sub-application of `git reduce` (see `cli.app`): run the
install or uninstall in the current repository, and report what was done, or
one `error:` line, on stderr.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from gitreduce.cli.terminal import Terminal
from gitreduce.core.errors import UserError
from gitreduce.git.hooks import install, uninstall

app = typer.Typer(
    add_completion=False,
    pretty_exceptions_enable=False,
    no_args_is_help=True,
    help=(
        "Git hooks for fuzzer triage. post-commit: a commit whose message has a "
        "'Reduce-Test: NAME' trailer is reduced against its parent in the background (the "
        "files it changes, plus those 'Reduce-Path: PATH' trailers add; several files as "
        "a pair of file sets), with the test your own config defines for NAME "
        "(git config gitreduce.test.NAME.command 'CMD'; a commit message never supplies a "
        "command), and the minimal failure-inducing change is attached to it as a note: "
        "git log --notes=reduce. Commits are queued and one `git reduce triage --queue` "
        "reduces them, gitreduce.triage.workers at a time (default 1)."
        "\n\nExit codes: 0 done, 2 error (one line), 129 usage."
    ),
)


def _report(lines: list[str]) -> None:
    console = Terminal(stderr=True, soft_wrap=True)
    for line in lines:
        console.print(line, highlight=False, markup=False)


def _fail(error: UserError) -> typer.Exit:
    Terminal(stderr=True, soft_wrap=True).print(
        f"[red]error:[/] {escape(str(error))}", highlight=False
    )
    return typer.Exit(error.exit_code)


@app.command("install", help="Install the hooks into the current repository.")
def install_command(
    force: Annotated[
        bool,
        typer.Option("--force", help="Replace a hook git reduce did not write (kept as a backup)."),
    ] = False,
) -> None:
    try:
        _report(install(Path.cwd(), force=force))
    except UserError as error:
        raise _fail(error) from None


@app.command("uninstall", help="Remove the hooks from the current repository.")
def uninstall_command() -> None:
    try:
        _report(uninstall(Path.cwd()))
    except UserError as error:
        raise _fail(error) from None
