"""`git reduce FILE|GOOD..BAD|--seed --variant`: the default command's options and its dispatch
to the mode they name (a file, a set of files, a pair, a pair of sets, a revision range).

Job: check that the options agree with each other and with the mode, call the API,
print the summary and write `--json`, `--html`, the pair's files. Registered on the one
application in `cli.app`, as the subcommands are.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypedDict

import typer

from gitreduce import api
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
from gitreduce.cli.version import print_versions
from gitreduce.core.errors import UserError
from gitreduce.git.store import Store
from gitreduce.pair import PAIR_ALGORITHMS
from gitreduce.sessions.run import refuse_overwriting

if TYPE_CHECKING:  # type hints only: typer's own copy of click
    pass


SHORT_HELP = (
    "Bisect and reduce a failing program, and its difference to a passing one, to "
    "the failure-inducing change."
)
HELP = (
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
)


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


class _RunOptions(TypedDict):
    """The options every mode takes alike from the command line; each call adds its own
    (a progress callback; a file's language, a set's kept files, an output, a pair's
    algorithm)."""

    interesting: bool
    jobs: int
    timeout: float | None
    signature: str | None
    any_failure: bool
    repeat: int
    branch: str | None
    force: bool
    patch: Path | None
    skip_passes: list[str]
    rename: bool
    executor: str
    echo: Callable[[str], None]


def reduce_command(
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
        options = _RunOptions(
            interesting=polarity == "interesting",
            jobs=jobs,
            timeout=timeout,
            signature=signature,
            any_failure=any_failure,
            repeat=repeat,
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
                        keep=keep or [],
                        output=output,
                        progress=set_pair_observe,
                        **options,
                    )
                else:
                    assert seed is not None and variant is not None
                    set_pair = api.reduce_set_pair(
                        seed,
                        variant,
                        command,
                        keep=keep or [],
                        output=output,
                        progress=set_pair_observe,
                        **options,
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
            chosen = PAIR_ALGORITHMS[algorithm]
            try:
                if revisions is not None:
                    pair_summary = api.reduce_revisions(
                        revisions[0],
                        revisions[1][0],
                        command,
                        bisect=not no_bisect,
                        algorithm=chosen,
                        language=language,
                        progress=observe,
                        **options,
                    )
                else:
                    assert seed is not None and variant is not None
                    pair_summary = api.reduce_pair(
                        seed,
                        variant,
                        command,
                        algorithm=chosen,
                        language=language,
                        progress=observe,
                        **options,
                    )
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
                    targets,
                    command,
                    keep=keep or [],
                    output=output,
                    progress=chain(set_progress, *counted),
                    **options,
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
                language=language,
                output=output,
                progress=chain(progress, history, *counted),
                **options,
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
