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
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypedDict

import typer
from rich.markup import escape
from typer.core import TyperGroup
from typer.exceptions import TyperException

from gitreduce import api
from gitreduce.cli import hooks
from gitreduce.cli.completion import HELP as COMPLETION_HELP
from gitreduce.cli.completion import completion_command
from gitreduce.cli.count import HELP as COUNT_HELP
from gitreduce.cli.count import count_command
from gitreduce.cli.defaults import default_map
from gitreduce.cli.generate import HELP as GENERATE_HELP
from gitreduce.cli.generate import generate_command
from gitreduce.cli.history import History, chain
from gitreduce.cli.html import write_html
from gitreduce.cli.options import (
    DEFAULT_JOBS,
    EXIT_INTERRUPTED,
    AnyFailure,
    AsJson,
    Branch,
    Debug,
    ExecutorName,
    Force,
    InterestingCommand,
    Jobs,
    PatchFile,
    Quiet,
    Repeat,
    ShowStats,
    Signature,
    TestCommand,
    TestTimeout,
    reported_errors,
    resolve_test,
)
from gitreduce.cli.progress import (
    PairProgressPrinter,
    ProgressFile,
    ProgressPrinter,
    pair_outputs,
    print_pair_summary,
    print_pass_profile,
    print_set_pair_summary,
    print_summary,
    write_pair,
)
from gitreduce.cli.terminal import Terminal
from gitreduce.cli.triage import HELP as TRIAGE_HELP
from gitreduce.cli.triage import triage_command
from gitreduce.cli.usage import EXIT_USAGE, describe, resolve, short_usage, wants_usage
from gitreduce.cli.version import print_versions
from gitreduce.core.errors import UserError
from gitreduce.git.store import Store
from gitreduce.pair import PAIR_ALGORITHMS
from gitreduce.sessions.run import refuse_overwriting

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


def _list_passes(value: bool) -> None:
    """`--list-passes`: the schedules, each pass's name and summary in running order."""
    if not value:
        return
    for title, passes in api.pass_schedules():
        width = max(len(name) for name, _ in passes)
        sys.stdout.write(f"{title}:\n")
        for name, summary in passes:
            sys.stdout.write(f"  {name:<{width}}  {summary}\n")
    sys.stdout.write(
        f"{api.NESTING_PASS} runs the single-program passes on the seed; "
        f"--skip-pass {api.NESTING_PASS}/NAME switches one off there only.\n"
    )
    raise typer.Exit()


class _FileSetOptions(TypedDict):
    """The options a set of files and a pair of sets (from directories or revisions) take
    alike from the command line; each call adds its own progress callback."""

    keep: list[Path]
    interesting: bool
    jobs: int
    timeout: float | None
    signature: str | None
    any_failure: bool
    repeat: int
    output: Path | None
    branch: str | None
    force: bool
    patch: Path | None
    skip_passes: list[str]
    rename: bool
    executor: str
    echo: Callable[[str], None]


@app.command(
    REDUCE,
    hidden=True,
    short_help="Bisect and reduce a failing program, and its difference to a passing one, to "
    "the failure-inducing change.",
    help=(
        "Reduce FILE to a smaller file that still fails the test the same way, or "
        "(--seed S --variant V, or GOOD..BAD -- PATH) reduce a passing seed and a failing "
        "variant together until the few tokens that differ are the failure-inducing change.\n\n"
        "The test follows `git bisect run`: exit 0 = good, 125 = cannot be tested, "
        "other 1-127 = bad (the bug), >=128 = the test broke. With --interesting, exit 0 "
        "means 'still shows the bug' (C-Reduce/C-Vise scripts). The candidate is "
        "`{}` in the command and $GITREDUCE_FILE, and sits under its own name in the "
        "test's working directory; $TMPDIR is the job's own too, emptied before each run. "
        "Several FILEs or a DIR are reduced as one set: the test "
        "runs in a directory holding the candidate set at its relative paths, and `{}` "
        "names that directory. --seed DIR --variant DIR, or GOOD..BAD -- PATH PATH... "
        "(or -- DIR/), reduce a passing and a failing set together (PPR over file sets).\n\n"
        "Exit codes: 0 done, 2 bad input or unusable test, 129 usage (-h, or no arguments), "
        "130 interrupted (best result so far written), 1 internal error."
    ),
)
def reduce(
    targets: Annotated[
        list[str] | None,
        typer.Argument(
            help="FILE to reduce (several FILEs or a DIR: the whole set), or GOOD..BAD "
            "then -- PATH.",
            show_default=False,
        ),
    ] = None,
    seed: Annotated[
        Path | None,
        typer.Option(
            "--seed",
            metavar="FILE|DIR",
            help="The passing program (pairwise mode); a DIR for a pair of file sets.",
        ),
    ] = None,
    variant: Annotated[
        Path | None,
        typer.Option(
            "--variant",
            metavar="FILE|DIR",
            help="The failing program derived from the seed; a DIR when --seed is one.",
        ),
    ] = None,
    algorithm: Annotated[
        str,
        typer.Option(
            metavar="ppr|dd|dd-empty",
            help="Pairwise algorithm: ppr (default); dd (Zeller's dd over the diff's hunks); "
            "dd-empty (the PPR paper's baseline: dd over the variant's tokens from an empty "
            "program, the seed ignored).",
        ),
    ] = "ppr",
    no_bisect: Annotated[
        bool, typer.Option("--no-bisect", help="Take GOOD and BAD as they are; do not bisect.")
    ] = False,
    branch: Branch = None,
    force: Force = False,
    patch: PatchFile = None,
    test: TestCommand = None,
    interesting: InterestingCommand = None,
    jobs: Jobs = DEFAULT_JOBS,
    timeout: TestTimeout = None,
    language: Annotated[
        str | None,
        typer.Option(metavar="LANG", help="Grammar to parse with (default: from the extension)."),
    ] = None,
    signature: Signature = None,
    any_failure: AnyFailure = False,
    repeat: Repeat = 1,
    executor: ExecutorName = "local",
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            metavar="PATH",
            help="Where to write the result (default: NAME.reduced.EXT); for a pair or a "
            "file set, a directory (created if need be); a pair of sets goes to its seed/ "
            "and variant/.",
        ),
    ] = None,
    html: Annotated[
        Path | None,
        typer.Option("--html", metavar="FILE", help="Also write a self-contained HTML report."),
    ] = None,
    keep: Annotated[
        list[Path] | None,
        typer.Option(
            "--keep",
            metavar="PATH",
            help="A file of the set (of either set of a pair) that must stay (a build script "
            "the test runs); repeatable.",
            show_default=False,
        ),
    ] = None,
    skip_pass: Annotated[
        list[str] | None,
        typer.Option(
            "--skip-pass",
            metavar="NAME",
            help="Switch a pass off, by name (windows) or label (min-commonality/tree); "
            "repeatable. See --list-passes.",
            show_default=False,
        ),
    ] = None,
    rename: Annotated[
        bool,
        typer.Option(
            "--rename/--no-rename",
            help="Shorten the result's names and empty its string literals at the end "
            "(the rename pass, on by default; --no-rename keeps the original's names).",
        ),
    ] = True,
    _list: Annotated[
        bool,
        typer.Option(
            "--list-passes",
            is_eager=True,
            expose_value=False,
            callback=_list_passes,
            help="Print the passes of every schedule, in the order they run, and exit.",
        ),
    ] = False,
    stats: ShowStats = False,
    as_json: AsJson = False,
    quiet: Quiet = False,
    debug: Debug = False,
    _version: Annotated[
        bool,
        typer.Option(
            "--version",
            is_eager=True,
            expose_value=False,
            callback=print_versions,
            help="Print the version of git reduce, of its grammars and of pygit2, and exit.",
        ),
    ] = False,
    progress_file: Annotated[
        Path | None,
        typer.Option(
            "--progress-file",
            hidden=True,
            help="Keep the test count in this file, and take a new --jobs from FILE.jobs "
            "(for git reduce triage).",
        ),
    ] = None,
) -> None:
    console = Terminal(stderr=True, quiet=quiet, soft_wrap=True)
    counted = [ProgressFile(progress_file)] if progress_file is not None else []
    skip_passes = skip_pass or []

    def echo(line: str) -> None:
        console.print(line, highlight=False, markup=False)

    with reported_errors(console, debug):
        command, polarity = resolve_test(test, interesting, signature, any_failure)
        if html is not None and (html.is_dir() or not html.parent.is_dir()):
            raise UserError(f"--html {html}: not a file in an existing directory")
        if algorithm not in PAIR_ALGORITHMS:
            raise UserError(f"unknown --algorithm {algorithm!r}; use ppr, dd or dd-empty")
        if (seed is None) != (variant is None):
            raise UserError("pairwise mode needs both --seed FILE and --variant FILE")
        revisions = _revisions(targets or [])
        set_range = None  # GOOD..BAD over several paths or a directory: a pair of sets
        if revisions is not None and (
            len(revisions[1]) > 1 or revisions[1][0].endswith("/") or Path(revisions[1][0]).is_dir()
        ):
            set_range, targets, revisions = revisions[0], revisions[1], None
        pairwise = seed is not None or revisions is not None or set_range is not None
        if not pairwise and algorithm != "ppr":
            raise UserError("--algorithm is for a pair: --seed FILE --variant FILE, or GOOD..BAD")
        if no_bisect and revisions is None and set_range is None:
            raise UserError("--no-bisect is for GOOD..BAD: there is nothing to bisect")
        directories = [path for path in (seed, variant) if path is not None and path.is_dir()]
        file_set_options = _FileSetOptions(
            keep=keep or [],
            interesting=polarity == "interesting",
            jobs=jobs,
            timeout=timeout,
            signature=signature,
            any_failure=any_failure,
            repeat=repeat,
            output=output,
            branch=branch,
            force=force,
            patch=patch,
            skip_passes=skip_passes,
            rename=rename,
            executor=executor,
            echo=echo,
        )
        if set_range is not None or directories:
            if targets and set_range is None:
                raise UserError("give either FILE or --seed/--variant, not both")
            if directories and len(directories) < 2:
                raise UserError(
                    f"{directories[0]} is a directory: give both --seed and --variant as "
                    "directories to reduce a pair of file sets"
                )
            if html is not None:
                raise UserError("--html is for one file or a pair of files, not file sets")
            if language is not None:
                raise UserError("--language is for one file; a set's files go by their names")
            if algorithm != "ppr":
                raise UserError("a pair of file sets is reduced with --algorithm ppr only")
            set_pair_progress = PairProgressPrinter(console)
            set_pair_observe = chain(set_pair_progress, *counted)
            try:
                if set_range is not None:
                    set_pair = api.reduce_set_revisions(
                        set_range,
                        targets or [],
                        command,
                        bisect=not no_bisect,
                        progress=set_pair_observe,
                        **file_set_options,
                    )
                else:
                    assert seed is not None and variant is not None
                    set_pair = api.reduce_set_pair(
                        seed, variant, command, progress=set_pair_observe, **file_set_options
                    )
            finally:
                set_pair_progress.stop()
            print_set_pair_summary(console, set_pair, patch)
            if stats and not as_json:
                print_pass_profile(set_pair.stats)
            if as_json:
                set_pair_record = set_pair.as_dict() | {
                    "patch": str(patch) if patch is not None else None
                }
                sys.stdout.write(json.dumps(set_pair_record, indent=2) + "\n")
            if set_pair.interrupted:
                raise typer.Exit(EXIT_INTERRUPTED)
            return
        if (seed is not None and variant is not None) or revisions is not None:
            if targets and revisions is None:
                raise UserError("give either FILE or --seed/--variant, not both")
            if output is not None:
                _require_directory_possible(output)
            if revisions is None:
                assert seed is not None and variant is not None
                # Files only when asked for, or for plain files outside any repository:
                # otherwise the result branch is the result and the work tree stays untouched.
                if output is None:
                    output = None if Store.near(variant).users else variant.resolve().parent
                if output is not None:
                    refuse_overwriting(pair_outputs(variant.name, output), [seed, variant])
            pair_progress = PairProgressPrinter(console)
            history = History()
            observe = chain(pair_progress, history, *counted)
            options = dict(  # what both pair modes take alike
                interesting=polarity == "interesting",
                algorithm=PAIR_ALGORITHMS[algorithm],
                jobs=jobs,
                timeout=timeout,
                language=language,
                signature=signature,
                any_failure=any_failure,
                repeat=repeat,
                branch=branch,
                force=force,
                patch=patch,
                skip_passes=skip_passes,
                rename=rename,
                executor=executor,
                progress=observe,
                echo=echo,
            )
            try:
                if revisions is not None:
                    pair_summary = api.reduce_revisions(
                        revisions[0], revisions[1][0], command, bisect=not no_bisect, **options
                    )
                else:
                    assert seed is not None and variant is not None
                    pair_summary = api.reduce_pair(seed, variant, command, **options)
            finally:
                pair_progress.stop()
            written = write_pair(pair_summary, output) if output is not None else None
            print_pair_summary(console, pair_summary, written, patch)
            record = pair_summary.as_dict() | {
                "seed_output": str(written[0]) if written else None,
                "variant_output": str(written[1]) if written else None,
                "patch": str(patch) if patch is not None else None,
                "html": str(html) if html is not None else None,
            }
            if html is not None:
                write_html(html, record, pair_summary.seed, pair_summary.variant, history)
            if stats and not as_json:
                print_pass_profile(pair_summary.stats)
            if as_json:
                sys.stdout.write(json.dumps(record, indent=2) + "\n")
            if pair_summary.interrupted:
                raise typer.Exit(EXIT_INTERRUPTED)
            return
        if not targets:
            raise UserError(
                "give a FILE (or several, or a DIR) to reduce, --seed FILE --variant FILE, "
                "or GOOD..BAD -- PATH"
            )
        if len(targets) > 1 or Path(targets[0]).is_dir():
            if html is not None:
                raise UserError("--html is for one file or a pair, not a file set")
            if language is not None:
                raise UserError("--language is for one file; a set's files go by their names")
            set_progress = ProgressPrinter(console)
            try:
                set_summary = api.reduce_files(
                    targets, command, progress=chain(set_progress, *counted), **file_set_options
                )
            finally:
                set_progress.stop()
            print_summary(console, set_summary, patch)
            kept = ", ".join(sorted(set_summary.files)) or "none"
            console.print(
                f"files: {set_summary.files_before} → {set_summary.files_after}: {kept}",
                highlight=False,
                markup=False,
            )
            if stats and not as_json:
                print_pass_profile(set_summary.stats)
            if as_json:
                set_record = set_summary.as_dict() | {
                    "patch": str(patch) if patch is not None else None
                }
                sys.stdout.write(json.dumps(set_record, indent=2) + "\n")
            if set_summary.interrupted:
                raise typer.Exit(EXIT_INTERRUPTED)
            return
        if keep:
            raise UserError("--keep is for a file set: give a DIR or several files")
        progress = ProgressPrinter(console)
        history = History()
        try:
            summary = api.reduce_file(
                targets[0],
                command,
                interesting=polarity == "interesting",
                jobs=jobs,
                timeout=timeout,
                language=language,
                signature=signature,
                any_failure=any_failure,
                repeat=repeat,
                output=output,
                branch=branch,
                force=force,
                patch=patch,
                skip_passes=skip_passes,
                rename=rename,
                executor=executor,
                progress=chain(progress, history, *counted),
                echo=echo,
            )
        finally:
            progress.stop()
        print_summary(console, summary, patch)
        record = summary.as_dict() | {
            "patch": str(patch) if patch is not None else None,
            "html": str(html) if html is not None else None,
        }
        if html is not None:
            write_html(html, record, None, summary.result, history)
    if stats and not as_json:
        print_pass_profile(summary.stats)
    if as_json:
        sys.stdout.write(json.dumps(record, indent=2) + "\n")
    if summary.interrupted:
        raise typer.Exit(EXIT_INTERRUPTED)


def _require_directory_possible(directory: Path) -> None:
    """`--output DIR` for a pair: an existing directory, or one `write_pair` can create
    (with its parents), checked before the reduction rather than after it."""
    existing = directory
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise UserError(f"--output {directory}: {existing} exists and is not a directory")


def _revisions(targets: list[str]) -> tuple[str, list[str]] | None:
    """`GOOD..BAD PATH...` (the paths after `--`), or None when the targets name plain files."""
    if not targets or ".." not in targets[0] or Path(targets[0]).exists():
        return None
    if len(targets) < 2:
        raise UserError("give a path after the revision range: git reduce GOOD..BAD -- PATH")
    return targets[0], targets[1:]


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
