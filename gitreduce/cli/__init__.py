"""The command line: `git reduce` and its subcommands, and what the terminal and HTML show.

Job: parse options, call a session (or the public API), render its summary,
map errors to exit codes. Thin: no reduction logic lives here.
May import: every layer.
"""

from gitreduce.cli.app import main

__all__ = ["main"]
