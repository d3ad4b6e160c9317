"""`git reduce completion bash|zsh`: shell completion, written from the command tree.

bash: git's completion script calls `_git_reduce` for `git reduce <TAB>` (and
loads it from a file named `git-reduce` in bash-completion's directories, the
wheel's `share/bash-completion/completions/` among them); the function offers
each command's options, the subcommands, and refs (`GOOD..BAD` too) through
git's own helpers (`__gitcomp`, `__git_complete_revlist`), files otherwise.
zsh: git's zsh completion calls `_git-reduce` the same way.

Both are printed from the same `usage.pages` as `-h` and the manual, so a new
option is completed as soon as it exists.
"""

from __future__ import annotations

from typing import Annotated

import typer
from typer.core import TyperGroup

from gitreduce.cli.usage import Page, pages

SHELLS = ("bash", "zsh")
# option values worth offering, by option name
_VALUES = {
    "--executor": "local dask-local dask://",
    "--algorithm": "ppr dd dd-empty",
    "--alignment": "realign bypass halt",
    "--strategy": "tree sequence",
}
_REF_VALUES = ("--branch",)


def _option_words(page: Page) -> str:
    words = [
        name + ("=" if option.metavar else "")
        for option in page.options
        for name in option.names
        if name.startswith("--")
    ]
    return " ".join([*words, "-h"])


def _subcommand_key(page: Page) -> str:
    return " ".join(page.name.split()[2:])


def _bash_arguments(page: Page, is_root: bool) -> str:
    """What a word that is not an option completes to, for `page`'s command."""
    if page.commands:
        words = "\\n".join(name for name, _ in page.commands)
        listing = f'\t\t__gitcomp_nl_append "$(printf "{words}")"\n'
        return ("\t\t__git_complete_revlist\n" if is_root else "") + listing
    arguments = " ".join(page.synopsis).split()
    choices = [word for word in arguments if "|" in word and not word.startswith("-")]
    if choices:
        return f'\t\t__gitcomp "{choices[0].replace("|", " ")}"\n'
    if "[RANGE]" in arguments:
        return "\t\t__git_complete_revlist\n"
    return ""  # files: git's completion falls back to them


def bash_script(root: TyperGroup) -> str:
    tree = pages(root)
    cases = "".join(
        f'\t"{_subcommand_key(page)}")\n'
        f'\t\tcase "$cur" in\n'
        f'\t\t-*) __gitcomp "{_option_words(page)}"; return ;;\n'
        f"\t\tesac\n"
        f"\t\t__git_has_doubledash && return\n"
        f"{_bash_arguments(page, page is tree[0])}"
        f"\t\t;;\n"
        for page in tree
    )
    values = "".join(
        f'\t{option}) __gitcomp "{words}"; return ;;\n' for option, words in _VALUES.items()
    )
    inline_values = "".join(
        f'\t{option}=*) __gitcomp "{words}" "" "${{cur#{option}=}}"; return ;;\n'
        for option, words in _VALUES.items()
    )
    ref_options = "|".join(_REF_VALUES)
    inline_refs = "".join(
        f'\t{option}=*) __git_complete_refs --cur="${{cur#{option}=}}"; return ;;\n'
        for option in _REF_VALUES
    )
    subcommands = "|".join(f'"{_subcommand_key(page)}"' for page in tree[1:])
    return (
        "# bash completion for git reduce; git's completion calls _git_reduce.\n"
        "# Load it after git's own: source <(git reduce completion bash)\n"
        "_git_reduce ()\n"
        "{\n"
        '\tcase "$prev" in\n'
        f"{values}"
        f"\t{ref_options}) __git_complete_refs; return ;;\n"
        "\tesac\n"
        '\tcase "$cur" in\n'
        f"{inline_values}{inline_refs}"
        "\tesac\n"
        '\tlocal i command=""\n'
        "\tfor (( i = __git_cmd_idx + 1; i < cword; i++ )); do\n"
        '\t\tcase "${command:+$command }${words[i]}" in\n'
        f'\t\t{subcommands}) command="${{command:+$command }}${{words[i]}}" ;;\n'
        "\t\t-*) ;;\n"
        "\t\t*) break ;;\n"
        "\t\tesac\n"
        "\tdone\n"
        '\tcase "$command" in\n' + cases + "\tesac\n"
        "}\n"
    )


def zsh_script(root: TyperGroup) -> str:
    tree = pages(root)
    keys = "|".join(f"'{_subcommand_key(page)}'" for page in tree[1:])
    cases = "".join(
        f"    '{_subcommand_key(page)}') options=({_option_words(page).replace('=', '')}); "
        f"subcommands=({' '.join(name for name, _ in page.commands)}) ;;\n"
        for page in tree
    )
    return (
        "#compdef git-reduce\n"
        "# zsh completion for git reduce; git's zsh completion calls _git-reduce.\n"
        "# Load it with: source <(git reduce completion zsh)\n"
        "_git-reduce () {\n"
        "  local -a options subcommands\n"
        '  local word key=""\n'
        "  for word in ${words[2,CURRENT-1]}; do\n"
        '    case "${key:+$key }$word" in\n'
        f'      {keys}) key="${{key:+$key }}$word" ;;\n'
        "    esac\n"
        "  done\n"
        '  case "$key" in\n' + cases + "  esac\n"
        "  if [[ $PREFIX == -* ]]; then\n"
        "    compadd -- $options\n"
        "  elif (( ${#subcommands} )) && [[ -n $key ]]; then\n"
        "    compadd -- $subcommands\n"
        "  else\n"
        "    compadd -- $subcommands\n"
        "    compadd -- ${(f)\"$(git for-each-ref --format='%(refname:short)' 2>/dev/null)\"}\n"
        "    _files\n"
        "  fi\n"
        "}\n"
        "(( $+functions[compdef] )) && compdef _git-reduce git-reduce\n"
    )


def completion_command(
    ctx: typer.Context,
    shell: Annotated[str, typer.Argument(metavar="bash|zsh", help="The shell.")],
) -> None:
    root = ctx.find_root().command
    assert isinstance(root, TyperGroup)
    if shell not in SHELLS:
        raise typer.BadParameter(f"{shell!r}: give bash or zsh")
    script = bash_script(root) if shell == "bash" else zsh_script(root)
    typer.echo(script, nl=False)


HELP = (
    "Print the shell completion for git reduce. bash: load it after git's own completion "
    "(source <(git reduce completion bash)), or install it as git-reduce in a "
    "bash-completion directory; the wheel ships it in share/bash-completion/completions. "
    "zsh: source <(git reduce completion zsh). `git reduce <TAB>` then completes options, "
    "subcommands and refs."
)
