"""Starting the test without a shell, when the shell would only split its command into words.

Job: `direct_argv(command, environment)`: the words of a test command and the program
they start, when `/bin/sh -c COMMAND` would do nothing but split it into words
and start that program; else None, and the command goes to the shell as it is.

Why: the shell is one more program started per test, which the test does not
need when its command is `./test.sh {}` or `python3 check.py {}`. Measured on
this project's two-core benchmark machine, `/bin/sh -c '/bin/true x'` took 2.0
ms of wall time and 1.8 ms of CPU per run where `/bin/true x` took 1.2 and 1.0
(dash forks for the command rather than replacing itself): a few percent of a
30-ms compiler test, in every one of thousands of runs, and at two jobs on two
cores that CPU is the tests'.

When, conservatively (anything else keeps the shell):
- Every character the shell would treat specially is quoted: no expansion
  (`$`, backquote, `~`, globs), no operator, redirection, comment, brace or
  line continuation, and no `=` in the first word (an assignment). Quotes
  and backslashes are taken out by the shell's rules.
- The first word is not a reserved word or one of dash's builtins: a builtin
  acts inside the shell (`cd`, `exec`), and `echo` differs from /bin/echo.
- It names, by an absolute path or through absolute directories of $PATH
  (the directory a relative one means is the test's, not ours), an
  executable file that the kernel starts by itself: an ELF binary or a
  script with `#!`. The shell runs a script without `#!` itself, after the
  kernel refuses it.
What the test then sees is what the shell would have given it: the same
words (argv[0] as written), directory, process group and environment, with
PWD the directory it runs in, as the shell exports it (the runner sets it).
How a test killed by a signal is reported is the shell's too: the runner turns
the signal into 128 + its number (`shell_status`). Not copied: what some shells
do to variables a user rarely exports (dash resets IFS, OPTIND and PPID and
drops names that are not identifiers, such as bash's exported functions); a
test started directly inherits those as they are.
"""

import os
from collections.abc import Mapping

# Outside quotes, each of these makes the shell do more than split words.
_SHELL_SYNTAX = frozenset("|&;<>()$`*?[]{}~#!\n\r")
# Reserved words and dash's builtins (dash(1)): never looked up on $PATH by the shell.
_RESERVED = "! { } [[ ]] case do done elif else esac fi for function if in then until while"
_BUILTINS = (
    ". : [ alias bg break cd chdir command continue echo eval exec exit export false fc fg "
    "getopts hash jobs kill local printf pwd read readonly return set shift test times trap "
    "true type ulimit umask unalias unset wait"
)
_NOT_PROGRAMS = frozenset(_RESERVED.split() + _BUILTINS.split())
_STARTABLE = (b"#!", b"\x7fELF")


def direct_argv(command: str, environment: Mapping[str, str]) -> tuple[str, tuple[str, ...]] | None:
    """The program to start and its words, if running `command` needs no shell (see the
    module's docstring); None if it does or it cannot tell."""
    words = _words(command)
    if not words or words[0] in _NOT_PROGRAMS or "=" in words[0]:  # NAME=value: assignment
        return None
    program = _program(words[0], environment.get("PATH", os.defpath))
    if program is None or not _startable(program):
        return None
    return program, tuple(words)


def shell_status(returncode: int) -> int:
    """The exit status `sh -c` reports for a program that ended with `returncode`: 128 plus
    the signal's number when a signal ended it (Python's negative code)."""
    return 128 - returncode if returncode < 0 else returncode


def _words(command: str) -> list[str] | None:
    """The words the shell splits `command` into, if that is all it would do to it."""
    words: list[str] = []
    word: list[str] = []
    in_word = False  # a word has begun (it may be empty: '')
    quote = ""
    index = 0
    while index < len(command):
        char = command[index]
        index += 1
        if quote == "'":
            if char == "'":
                quote = ""
            else:
                word.append(char)
        elif quote == '"':
            if char == '"':
                quote = ""
            elif char in "$`":
                return None
            elif char == "\\":
                if index == len(command) or command[index] == "\n":
                    return None
                if command[index] in '"\\':  # else the backslash stays, as in sh
                    char = command[index]
                    index += 1
                word.append(char)
            else:
                word.append(char)
        elif char in " \t":
            if in_word:
                words.append("".join(word))
                word, in_word = [], False
        elif char in _SHELL_SYNTAX:
            return None
        else:
            in_word = True
            if char in "'\"":
                quote = char
            elif char == "\\":
                if index == len(command) or command[index] == "\n":
                    return None
                word.append(command[index])
                index += 1
            else:
                word.append(char)
    if quote:
        return None  # the shell would refuse it: let it say so
    if in_word:
        words.append("".join(word))
    return words


def _program(name: str, search_path: str) -> str | None:
    """The file the shell would start for the command word `name`, when that does not
    depend on the directory the test runs in."""
    if "/" in name:
        return name if os.path.isabs(name) and _executable(name) else None
    for directory in search_path.split(":"):
        if not os.path.isabs(directory):
            return None  # "" or "." or "bin": the test's directory, searched at its run
        candidate = os.path.join(directory, name)
        if _executable(candidate):
            return candidate
    return None


def _executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def _startable(path: str) -> bool:
    try:
        with open(path, "rb") as program:
            return program.read(4).startswith(_STARTABLE)
    except OSError:
        return False
