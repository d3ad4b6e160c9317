"""What `git reduce -h` prints, and the description the manual and the README's reference
are written from: one reading of the command tree, so the three cannot disagree.

As with git's own commands, `-h` (anywhere before `--`) prints the short
usage of the command it follows on stdout and exits 129, the code git gives a
usage request or a usage error; so does a command run without the arguments
it needs (`git reduce`, `git reduce generate`, `git reduce hooks`). A real run
given bad input still exits 2 with one `error:` line.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from typer.core import TyperArgument, TyperGroup, TyperOption

from gitreduce.cli.defaults import CONFIG_KEYS

if TYPE_CHECKING:  # type hints only: typer's own copy of click
    from typer import _click

EXIT_USAGE = 129
USAGE_OPTION = "-h"
USAGE_HELP = "Print the short usage and exit (status 129)."

EXIT_CODES = (
    (0, "done"),
    (1, "internal error (--debug shows the traceback)"),
    (2, "bad input, an unusable test or an unusable git config value (one error: line)"),
    (129, "usage: -h, or a command without the arguments it needs (the usage, on stdout)"),
    (130, "interrupted (the best result so far is kept)"),
)


class Option(NamedTuple):
    """One option as the usage lists it."""

    names: tuple[str, ...]  # `-j`, `--jobs`; a flag's `--no-` form too
    metavar: str  # "" for a flag
    help: str

    def spelled(self) -> str:
        """`-j, --jobs N`"""
        return ", ".join(self.names) + (f" {self.metavar}" if self.metavar else "")


@dataclass
class Page:
    """One command as its usage and manual describe it."""

    name: str  # `git reduce`, `git reduce generate`
    synopsis: list[str]  # the usage lines, without the command's name
    summary: str
    description: list[str]  # paragraphs
    options: list[Option]
    commands: list[tuple[str, str]] = field(default_factory=list)  # (name, summary)
    config: bool = False  # whether the git config keys apply


def describe(command: _click.Command, names: list[str]) -> Page:
    """`command` (reached by the words `names` after `git reduce`) as a Page.

    A group with a `default_command` (`git reduce` itself, see `cli.app`) is
    described by that command's options and help, and by its own `synopsis`.
    """
    default = getattr(command, "default_command", None)
    described = command
    commands = []
    if isinstance(command, TyperGroup):
        if default is not None:
            described = command.commands[default]
        commands = [
            (name, sub.get_short_help_str(limit=200))
            for name, sub in command.commands.items()
            if not sub.hidden and name != default
        ]
    visible = [param for param in described.params if not getattr(param, "hidden", False)]
    synopsis = list(getattr(command, "synopsis", ()))
    if not synopsis:
        words = ["[<options>]"] if any(isinstance(p, TyperOption) for p in visible) else []
        words += [_argument(param) for param in visible if isinstance(param, TyperArgument)]
        if commands:
            words.append("<command> [<args>]")
        synopsis = [" ".join(words)]
    return Page(
        name=" ".join(["git reduce", *names]),
        synopsis=synopsis,
        summary=described.get_short_help_str(limit=200),
        description=[
            _unwrap(part) for part in (described.help or "").split("\n\n") if part.strip()
        ],
        options=[_option(param) for param in visible if isinstance(param, TyperOption)],
        commands=commands,
        config=any(param.name in ("jobs", "timeout", "executor") for param in visible),
    )


def pages(root: TyperGroup) -> list[Page]:
    """Every command of the tree, `git reduce` first, each group before its subcommands."""
    found = []

    def visit(command: _click.Command, names: list[str]) -> None:
        found.append(describe(command, names))
        if isinstance(command, TyperGroup):
            default = getattr(command, "default_command", None)
            for name, sub in command.commands.items():
                if not sub.hidden and name != default:
                    visit(sub, [*names, name])

    visit(root, [])
    return found


def _unwrap(text: str) -> str:
    return " ".join(text.split())


def _argument(param: TyperArgument) -> str:
    word = param.metavar or (param.name or "").upper()
    if param.nargs == -1 and " " not in word and not word.endswith("..."):
        word += "..."
    if not param.required and not word.startswith("["):
        word = f"[{word}]"
    return word


def _option(param: TyperOption) -> Option:
    names = (*sorted(param.opts, key=len), *param.secondary_opts)
    flag = param.is_flag or param.count
    metavar = "" if flag else param.metavar or (param.name or "").upper()
    return Option(names, metavar, _unwrap(param.help or ""))


def resolve(root: TyperGroup, argv: list[str]) -> tuple[list[str], _click.Command, list[str]]:
    """The subcommand `argv` runs (the words naming it, the command, the rest of `argv`).

    `git reduce`'s own first word is a subcommand only if no file of that name
    is in the current directory (the default command reduces that file).
    """
    names: list[str] = []
    command: _click.Command = root
    rest = argv
    while isinstance(command, TyperGroup) and rest:
        sub = command.commands.get(rest[0])
        if sub is None or sub.hidden or (command is root and Path(rest[0]).is_file()):
            break
        names.append(rest[0])
        command, rest = sub, rest[1:]
    return names, command, rest


def wants_usage(command: _click.Command, rest: list[str]) -> bool:
    """Whether `-h` is among `rest`'s options, or arguments are needed and there are none
    (a group, `git reduce` itself among them, needs at least a subcommand or a file)."""
    options = rest[: rest.index("--")] if "--" in rest else rest
    if USAGE_OPTION in options:
        return True
    if rest:
        return False
    return isinstance(command, TyperGroup) or any(param.required for param in command.params)


def short_usage(page: Page, width: int = 80) -> str:
    """The page as `git CMD -h` prints it: usage lines, options, subcommands, config keys."""
    lines = []
    for number, synopsis in enumerate(page.synopsis):
        lines.append(f"{'usage' if number == 0 else '   or'}: {page.name} {synopsis}".rstrip())
    lines.append("")
    for option in page.options:
        lines.extend(_item(option.spelled(), option.help, width))
    lines.extend(_item(USAGE_OPTION, USAGE_HELP, width))
    if page.commands:
        lines += ["", "commands:"]
        for name, summary in page.commands:
            lines.extend(_item(name, summary, width))
    if page.config:
        lines += ["", "defaults from git config (the command line wins):"]
        for key, meaning in CONFIG_KEYS:
            lines.extend(_item(key, meaning, width))
    lines += ["", "See 'git help reduce' (man git-reduce) for the manual.", ""]
    return "\n".join(lines)


def _item(names: str, help_text: str, width: int) -> list[str]:
    """One option as git lists it: names in a column, help beside it or below."""
    indent = " " * 26
    head = f"    {names}"
    wrapped = textwrap.wrap(help_text, width - len(indent)) or [""]
    if len(head) + 2 <= len(indent):
        first = [f"{head:<26}{wrapped[0]}".rstrip()]
    else:
        first = [head, f"{indent}{wrapped[0]}".rstrip()]
    return first + [indent + line for line in wrapped[1:]]
