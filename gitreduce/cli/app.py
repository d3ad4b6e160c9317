"""`git reduce`: one command-line application, its subcommands, and the exit codes.

`git reduce ARGS` reduces (FILE, GOOD..BAD -- PATH, or --seed/--variant) unless
its first word names a subcommand (`generate`, `count`, `triage`, `hooks`); a file of that name in
the current directory is still the one to reduce.

Exit codes: 0 done; 1 internal error; 2 bad input or an unusable test (one-line
message); 129 usage (`-h`, or no arguments: see `cli.usage`); 130 interrupted (the
best result so far is still written).
"""

from __future__ import annotations

import gc
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.markup import escape
from typer.core import TyperGroup
from typer.exceptions import TyperException

from gitreduce.cli import hooks
from gitreduce.cli.completion import HELP as COMPLETION_HELP
from gitreduce.cli.completion import completion_command
from gitreduce.cli.count import HELP as COUNT_HELP
from gitreduce.cli.count import count_command
from gitreduce.cli.defaults import default_map
from gitreduce.cli.generate import HELP as GENERATE_HELP
from gitreduce.cli.generate import generate_command
from gitreduce.cli.options import (
    EXIT_INTERRUPTED,
)
from gitreduce.cli.reduce import HELP as REDUCE_HELP
from gitreduce.cli.reduce import SHORT_HELP as REDUCE_SHORT_HELP
from gitreduce.cli.reduce import reduce_command
from gitreduce.cli.terminal import Terminal
from gitreduce.cli.triage import HELP as TRIAGE_HELP
from gitreduce.cli.triage import triage_command
from gitreduce.cli.usage import EXIT_USAGE, describe, resolve, short_usage, wants_usage
from gitreduce.core.errors import UserError

if TYPE_CHECKING:  # type hints only: typer's own copy of click
    from typer import _click

REDUCE = "reduce"  # the default command: what `git reduce` runs without a subcommand


class ReduceByDefault(TyperGroup):
    """A group whose arguments go to the `reduce` command unless the first names a subcommand.

    `git reduce --help` shows the reduce command's help with the subcommands under it;
    `-h` and the manual describe it by `default_command` and `synopsis` (see `cli.usage`).
    """

    default_command = REDUCE
    synopsis = (
        "FILE --test CMD [<options>]",
        "FILE FILE... | DIR --test CMD [--keep PATH] [<options>]",
        "--seed FILE --variant FILE --test CMD [<options>]",
        "--seed DIR --variant DIR --test CMD [--keep PATH] [<options>]",
        "GOOD..BAD -- PATH [PATH...] --test CMD [<options>]",
        "<command> [<args>]",
    )

    def parse_args(self, ctx: _click.Context, args: list[str]) -> list[str]:
        if not self._names_subcommand(ctx, args):
            args = [REDUCE, *paths_last(args)]
        return super().parse_args(ctx, args)

    def _names_subcommand(self, ctx: _click.Context, args: list[str]) -> bool:
        if not args:
            return False
        first = args[0]
        if first in ctx.help_option_names:
            return True
        return first != REDUCE and first in self.commands and not Path(first).is_file()

    def format_help(self, ctx: _click.Context, formatter: _click.HelpFormatter) -> None:
        default = self.commands[REDUCE]
        view = TyperGroup(
            name=self.name,
            commands={name: command for name, command in self.commands.items() if name != REDUCE},
            params=default.params,
            help=default.help,
            rich_markup_mode=self.rich_markup_mode,
            subcommand_metavar="| COMMAND [ARGS]...",
        )
        view.format_help(ctx, formatter)


app = typer.Typer(add_completion=False, pretty_exceptions_enable=False, cls=ReduceByDefault)
app.command(
    "generate",
    help=GENERATE_HELP,
    short_help="Reduce a generated input by reducing the generator's execution (GReduce).",
)(generate_command)
app.command(
    "count",
    help=COUNT_HELP,
    short_help="Count a file's tokens, or a seed's, a variant's and their difference's.",
)(count_command)
app.command(
    "triage",
    help=TRIAGE_HELP,
    short_help="Reduce many findings (commits with a Reduce-Test trailer) and bucket them.",
)(triage_command)
app.add_typer(
    hooks.app,
    name="hooks",
    short_help="Install or remove the git hooks that reduce commits with a Reduce-Test trailer.",
)
app.command(
    "completion",
    help=COMPLETION_HELP,
    short_help="Print the bash or zsh completion for git reduce.",
)(completion_command)
app.command(REDUCE, hidden=True, short_help=REDUCE_SHORT_HELP, help=REDUCE_HELP)(reduce_command)


def paths_last(argv: list[str]) -> list[str]:
    """`GOOD..BAD -- PATH --test CMD` as the usage line writes it: options may follow the paths.

    Everything after `--` is positional to click, so the paths (the word right
    after `--`, whatever it looks like, as in `git log -- -dash.c`, and the
    words after it that are not options) move to the end, behind their `--`.
    """
    if "--" not in argv:
        return argv
    at = argv.index("--")
    end = min(at + 2, len(argv))
    while end < len(argv) and not argv[end].startswith("-"):
        end += 1
    return argv[:at] + argv[end:] + argv[at:end]


def run(argv: list[str]) -> int:
    """`git reduce ARGV` to its exit code; click's usage errors become one `error:` line too.

    `-h`, or a command without the arguments it needs, prints the short usage on
    stdout and exits 129, as git does; option defaults come from git config
    (`cli.defaults`), read only for a real run.
    """
    root = typer.main.get_command(app)
    assert isinstance(root, ReduceByDefault)
    names, command, rest = resolve(root, argv)
    if wants_usage(command, rest):
        sys.stdout.write(short_usage(describe(command, names)))
        return EXIT_USAGE
    try:
        code = root.main(
            args=argv,
            prog_name="git reduce",
            standalone_mode=False,
            default_map=default_map(Path.cwd()),
        )
    except UserError as error:  # a git config value that cannot work
        Terminal(stderr=True, soft_wrap=True).print(
            f"[red]error:[/] {escape(str(error))}", highlight=False
        )
        return error.exit_code
    except TyperException as error:  # usage errors: unknown option, bad value, no such command
        Terminal(stderr=True, soft_wrap=True).print(
            f"[red]error:[/] {escape(error.format_message())}", highlight=False
        )
        return 2
    except typer.Abort:
        return EXIT_INTERRUPTED
    return code if isinstance(code, int) else 0


def main() -> None:
    """The `git-reduce` entry point.

    Before exiting, every object the command left is frozen out of the
    garbage collector's reach: the interpreter's last collections at exit
    would otherwise walk all of them (the modules, the run's memo and trees),
    130-160 ms after the work is done, measured on the sequence-point
    fixture, whose reduction takes 2.4 s (with the freeze: 10-30 ms). Exit
    handlers and the flushing of files still run; only cycles that outlive
    the command are left to the operating system, which reclaims the memory.
    """
    code = run(sys.argv[1:])
    gc.freeze()
    sys.exit(code)
