"""The manual, `git-reduce.1`, and the README's reference section, both written from the
command line's own help (`usage.pages`), so that they say what `-h` and `--help` say.

The build writes the man page and the bash completion into the wheel's data
(`setup.py`); the README's section is checked against `markdown()` by the tests.
Run as `python -m gitreduce.cli.manual man|markdown|bash|zsh [-o FILE]`;
`python -m gitreduce.cli.manual markdown --readme README.md` rewrites the section.
"""

from __future__ import annotations

import argparse
import re
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from typer.core import TyperGroup

from gitreduce.cli.defaults import CONFIG_KEYS
from gitreduce.cli.usage import EXIT_CODES, USAGE_HELP, Option, Page, pages

SEE_ALSO = "git-bisect(1), git-notes(1), git-config(1)"
README_START = "<!-- reference: written by `python -m gitreduce.cli.manual markdown` -->"
README_END = "<!-- end of reference -->"


def _package_version() -> str:
    try:
        return version("gitreduce")
    except PackageNotFoundError:  # run from a source tree, as the build does
        from gitreduce import __version__

        return __version__


def _roff(text: str) -> str:
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\\&" + text if text.startswith((".", "'")) else text


def _roff_option(option: Option) -> str:
    bold = ", ".join(f"\\fB{_roff(name)}\\fR" for name in option.names)
    return bold + (f" \\fI{_roff(option.metavar)}\\fR" if option.metavar else "")


def _roff_command(page: Page, options_heading: str) -> list[str]:
    """`page`'s synopsis, description and options (under `options_heading`)."""
    lines = [".nf"]
    lines += [_roff_synopsis(page, synopsis) for synopsis in page.synopsis]
    lines += [".fi"]
    for paragraph in page.description:
        lines += [".PP", _roff(paragraph)]
    lines += [options_heading]
    for option in page.options:
        lines += [".TP", _roff_option(option), _roff(option.help)]
    return [*lines, ".TP", "\\fB\\-h\\fR", _roff(USAGE_HELP)]


def _roff_synopsis(page: Page, synopsis: str) -> str:
    return f"\\fB{_roff(page.name)}\\fR {_roff(synopsis)}".rstrip()


def man(root: TyperGroup) -> str:
    """`git-reduce.1`: NAME, SYNOPSIS, DESCRIPTION, OPTIONS, each COMMAND, CONFIGURATION, EXIT
    STATUS."""
    tree = pages(root)
    top = tree[0]
    lines = [
        f'.TH GIT\\-REDUCE 1 "" "gitreduce {_package_version()}" "Git Manual"',
        ".SH NAME",
        f"git\\-reduce \\- {_roff(top.summary)}",
        ".SH SYNOPSIS",
        ".nf",
    ]
    for page in tree:
        if page.commands and page is not top:
            continue  # a group: its subcommands' lines say it
        lines += [_roff_synopsis(page, synopsis) for synopsis in page.synopsis]
    lines += [".fi", ".SH DESCRIPTION"]
    body = _roff_command(top, ".SH OPTIONS")
    lines += body[body.index(".fi") + 1 :]
    lines += [".SH COMMANDS"]
    for page in tree[1:]:
        lines += [f".SS {_roff(page.name)}", *_roff_command(page, ".PP\nOptions:")]
        if page.commands:
            lines += [".PP", "Commands: " + _roff(", ".join(name for name, _ in page.commands))]
    lines += [
        ".SH CONFIGURATION",
        _roff(
            "Option defaults from git config, read as git reads its own: the repository's "
            "config, then the user's and the system's; the command line wins. A value that "
            "cannot work is refused with an error naming the key (exit status 2)."
        ),
    ]
    for key, meaning in CONFIG_KEYS:
        lines += [".TP", f"\\fB{_roff(key)}\\fR", _roff(meaning)]
    lines += [".SH EXIT STATUS"]
    for code, meaning in EXIT_CODES:
        lines += [".TP", f"\\fB{code}\\fR", _roff(meaning)]
    lines += [".SH SEE ALSO", _roff(SEE_ALSO), ""]
    return "\n".join(lines)


def _markdown_text(text: str) -> str:
    """`text` with `<`/`>` outside code spans kept from being read as HTML."""
    parts = re.split(r"(`[^`]*`)", text)
    return "".join(
        part if part.startswith("`") else part.replace("<", "&lt;").replace(">", "&gt;")
        for part in parts
    )


def markdown(root: TyperGroup) -> str:
    """The README's reference section: each command's usage, description and options, then the
    configuration keys and the exit codes."""
    lines = []
    for page in pages(root):
        lines += [f"### `{page.name}`", "", "```"]
        lines += [f"{page.name} {synopsis}".rstrip() for synopsis in page.synopsis]
        lines += ["```", ""]
        for paragraph in page.description or [page.summary]:
            lines += [_markdown_text(paragraph), ""]
        for option in page.options:
            lines.append(f"- `{option.spelled()}`: {_markdown_text(option.help)}")
        lines.append(f"- `-h`: {USAGE_HELP}")
        for name, summary in page.commands:
            lines.append(f"- `{name}`: {_markdown_text(summary)}")
        lines.append("")
    lines += [
        "### Configuration",
        "",
        "Option defaults from git config, read as git reads its own: the repository's "
        "config, then the user's and the system's; the command line wins. A value that "
        "cannot work is refused with an error naming the key (exit status 2).",
        "",
    ]
    lines += [f"- `{key}`: {_markdown_text(meaning)}" for key, meaning in CONFIG_KEYS]
    lines += ["", "### Exit status", ""]
    lines += [f"- `{code}`: {_markdown_text(meaning)}" for code, meaning in EXIT_CODES]
    return "\n".join(lines) + "\n"


def readme_section(readme: str) -> str:
    """The generated part of a README's text (between its markers)."""
    start = readme.index(README_START) + len(README_START)
    return readme[start : readme.index(README_END)].strip("\n") + "\n"


def with_reference(readme: str, reference: str) -> str:
    """`readme` with `reference` between its markers."""
    start = readme.index(README_START) + len(README_START)
    return f"{readme[:start]}\n\n{reference}\n{readme[readme.index(README_END) :]}"


def main(argv: list[str] | None = None) -> None:
    from typer.main import get_command

    from gitreduce.cli.app import app
    from gitreduce.cli.completion import bash_script, zsh_script

    writers = {"man": man, "markdown": markdown, "bash": bash_script, "zsh": zsh_script}
    parser = argparse.ArgumentParser(prog="python -m gitreduce.cli.manual")
    parser.add_argument("what", choices=sorted(writers))
    parser.add_argument("-o", "--output", type=Path, help="write here instead of stdout")
    parser.add_argument(
        "--readme", type=Path, help="with markdown: replace this README's reference section"
    )
    arguments = parser.parse_args(argv)
    root = get_command(app)
    assert isinstance(root, TyperGroup)
    text = writers[arguments.what](root)
    if arguments.readme is not None:
        arguments.readme.write_text(with_reference(arguments.readme.read_text(), text))
        return
    if arguments.output is None:
        sys.stdout.write(text)
        return
    arguments.output.parent.mkdir(parents=True, exist_ok=True)
    arguments.output.write_text(text)


if __name__ == "__main__":
    main()
