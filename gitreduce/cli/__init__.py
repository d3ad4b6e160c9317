"""The command line: `git reduce` and its subcommands, and what the terminal and HTML show.

Job: parse options, call a session (or the public API), render its summary,
map errors to exit codes. Thin: no reduction logic lives here.
May import: every layer.
"""

from __future__ import annotations

import signal

from gitreduce.sessions.interrupts import SIGNALS, deferred

EXIT_INTERRUPTED = 130


def main() -> None:
    """Entry point: the command line (see `gitreduce.cli.app.main`), with interrupts deferred.

    A Ctrl-C or SIGTERM at any moment, even while the program is still loading
    (a good part of a second, some of it inside option parsing), is a request
    that the session acts on (see `gitreduce.sessions.interrupts`): the
    reduction stops and the best result so far is written, the original if
    there is nothing better yet. Raised as KeyboardInterrupt in the middle of
    an import or a lock, it would end in a traceback or an internal error.
    """
    # What the signals do once the command has run: nothing. The process only has to
    # exit then, and a default SIGTERM would kill it with another exit code, a
    # KeyboardInterrupt print a traceback from the middle of its shutdown.
    for signum in SIGNALS:
        signal.signal(signum, signal.SIG_IGN)
    with deferred():
        from gitreduce.cli.app import main as run

        run()


__all__ = ["main"]
