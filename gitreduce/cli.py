"""`git reduce`: parse the command line, run the session, map errors to exit codes.

Exit codes: 0 done; 1 internal error; 2 bad input or an unusable test (one-line
message); 130 interrupted (the best result so far is still written).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from typer.exceptions import TyperException

from gitreduce.errors import UserError
from gitreduce.report import ProgressPrinter, print_summary
from gitreduce.session import SingleSettings, reduce_file

EXIT_INTERRUPTED = 130

app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)


@app.command(
    help=(
        "Reduce FILE to a smaller file that still fails the test the same way.\n\n"
        "The test follows `git bisect run`: exit 0 = good, 125 = cannot be tested, "
        "1-127 = bad (the bug), >=128 = the test broke. With --interesting, exit 0 "
        "means 'still shows the bug' (C-Reduce/C-Vise scripts). The candidate is "
        "`{}` in the command and $GITREDUCE_FILE, and sits under its own name in the "
        "test's working directory.\n\n"
        "Exit codes: 0 done, 2 bad input or unusable test, 130 interrupted "
        "(best result so far written), 1 internal error."
    )
)
def reduce(
    file: Annotated[Path, typer.Argument(help="The failing file to reduce.")],
    test: Annotated[
        str | None, typer.Option("--test", help="Test command, git-bisect-run convention.")
    ] = None,
    interesting: Annotated[
        str | None,
        typer.Option("--interesting", help="Test command, C-Reduce convention (0 = bug)."),
    ] = None,
    jobs: Annotated[
        int, typer.Option("--jobs", "-j", min=1, help="Tests run in parallel.")
    ] = os.cpu_count() or 1,
    timeout: Annotated[
        float | None,
        typer.Option(help="Seconds per test (default: 10x the original's run, >= 1s)."),
    ] = None,
    language: Annotated[
        str | None, typer.Option(help="Grammar to parse with (default: from the extension).")
    ] = None,
    signature: Annotated[
        str | None, typer.Option(help="Regex the failure's output must match (default: auto).")
    ] = None,
    any_failure: Annotated[
        bool, typer.Option("--any-failure", help="Accept any bad exit, not just the same bug.")
    ] = False,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output", "-o", help="Where to write the result (default: NAME.reduced.EXT)."
        ),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print a machine-readable summary on stdout.")
    ] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress output.")] = False,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks.")] = False,
) -> None:
    console = Console(stderr=True, quiet=quiet, soft_wrap=True)
    errors = Console(stderr=True, soft_wrap=True)
    try:
        if (test is None) == (interesting is None):
            raise UserError("give exactly one of --test CMD or --interesting CMD")
        if signature is not None and any_failure:
            raise UserError("--signature and --any-failure exclude each other")
        settings = SingleSettings(
            path=file,
            test=test if test is not None else str(interesting),
            polarity="bisect" if test is not None else "interesting",
            jobs=jobs,
            timeout=timeout,
            language=language,
            signature=signature,
            any_failure=any_failure,
            output=output,
        )
        progress = ProgressPrinter(console)
        try:
            summary = reduce_file(settings, progress)
        finally:
            progress.stop()
    except UserError as error:
        errors.print(f"[red]error:[/] {error}", highlight=False)
        raise typer.Exit(error.exit_code) from None
    except KeyboardInterrupt:
        console.print("interrupted", highlight=False)
        raise typer.Exit(EXIT_INTERRUPTED) from None
    except Exception as error:
        if debug:
            raise
        errors.print(f"[red]internal error:[/] {error!r} (rerun with --debug)", highlight=False)
        raise typer.Exit(1) from None
    print_summary(console, summary)
    if as_json:
        sys.stdout.write(json.dumps(summary.as_dict(), indent=2) + "\n")
    if summary.interrupted:
        raise typer.Exit(EXIT_INTERRUPTED)


def main() -> None:
    """Entry point; click's usage errors become one `error:` line too."""
    try:
        code = app(standalone_mode=False)
    except TyperException as error:  # usage errors: unknown option, bad value
        Console(stderr=True, soft_wrap=True).print(
            f"[red]error:[/] {error.format_message()}", highlight=False
        )
        code = 2
    except typer.Abort:
        code = EXIT_INTERRUPTED
    sys.exit(code if isinstance(code, int) else 0)
