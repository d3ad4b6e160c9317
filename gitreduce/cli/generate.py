"""`git reduce generate`: reduce a generated input by reducing the generator's execution.

Job: the subcommand's options, the session call and its terminal report; the
command is registered on `git reduce`'s one application (see `cli.app`).

Exit codes as for `git reduce`: 0 done; 1 internal error; 2 bad input, an
unusable test or a generator that fails (one-line message); 130 interrupted
(the best result so far is still written).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from gitreduce.cli.options import (
    DEFAULT_JOBS,
    EXIT_INTERRUPTED,
    AnyFailure,
    AsJson,
    Branch,
    Debug,
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
    positive_seconds,
    reported_errors,
    resolve_test,
)
from gitreduce.cli.progress import (
    print_pass_profile,
    print_provenance,
    print_warnings,
    verified_note,
)
from gitreduce.cli.terminal import Terminal
from gitreduce.core.current import Current
from gitreduce.core.errors import UserError
from gitreduce.generator import DEFAULT_GENERATOR_TIMEOUT
from gitreduce.git.store import ResultRequest

# The generator's machinery loads when the command runs, not with every `git reduce`.
if TYPE_CHECKING:
    from gitreduce.sessions.generate import GenerateSummary, TraceSearcher

HELP = (
    "Reduce the input a random generator makes at --seed by reducing the generator's "
    "execution (GReduce): its random decisions are recorded, loops whose trip count is a "
    "decision lose iterations and branches guarded by a decision are turned off, and the "
    "generator is re-run with the decisions that are left, so every candidate is an input the "
    "generator itself could make.\n\n"
    "GEN is a Python file (FILE.py, FILE.py:FUNCTION) or MODULE:FUNCTION. The entry function "
    "(default: generate, main or gen) returns the input as str or bytes or prints it, and draws "
    "from the `random` module or from the random.Random it is given as first parameter; a "
    "parameter named `seed` receives the seed.\n\n"
    "The test is as for `git reduce FILE`: exit 0 = good, 125 = cannot be tested, 1-127 = bad "
    "(with --interesting, exit 0 = still shows the bug); the candidate is `{}` and "
    "$GITREDUCE_FILE, named NAME (--name, default: the --output file's name)."
)


def generate_command(
    gen: Annotated[
        str, typer.Argument(metavar="GEN", help="FILE.py[:FUNCTION] or MODULE:FUNCTION.")
    ],
    seed: Annotated[int, typer.Option("--seed", help="The seed that made the failing input.")],
    entry: Annotated[
        str | None, typer.Option("--entry", help="Entry function (default: generate/main/gen).")
    ] = None,
    test: TestCommand = None,
    interesting: InterestingCommand = None,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Where to write the result (default: NAME.reduced)."),
    ] = None,
    name: Annotated[
        str | None,
        typer.Option("--name", help="File name the input is tested under (default: --output's)."),
    ] = None,
    strategy: Annotated[
        str, typer.Option(help="Trace reduction: tree (HDD over the nesting) or sequence (ddmin).")
    ] = "tree",
    alignment: Annotated[
        str,
        typer.Option(help="When a reduced trace cannot be followed: halt, bypass or realign."),
    ] = "realign",
    polish: Annotated[
        bool,
        typer.Option(
            help="After the trace, reduce the input syntax-guided as `git reduce FILE` does, so "
            "what the generator always writes can go too (--no-polish: keep an input the "
            "generator itself writes; the branch holds both)."
        ),
    ] = True,
    jobs: Jobs = DEFAULT_JOBS,
    timeout: TestTimeout = None,
    generator_timeout: Annotated[
        float,
        typer.Option(
            help="Seconds the generator may take for the original run.",
            callback=positive_seconds,
        ),
    ] = DEFAULT_GENERATOR_TIMEOUT,
    signature: Signature = None,
    any_failure: AnyFailure = False,
    repeat: Repeat = 1,
    branch: Branch = None,
    force: Force = False,
    patch: PatchFile = None,
    stats: ShowStats = False,
    as_json: AsJson = False,
    quiet: Quiet = False,
    debug: Debug = False,
) -> None:
    from gitreduce.generator.replay import Alignment
    from gitreduce.sessions.generate import GenerateSettings, generate

    console = Terminal(stderr=True, quiet=quiet, soft_wrap=True)
    with reported_errors(console, debug):
        command, polarity = resolve_test(test, interesting, signature, any_failure)
        if strategy not in ("tree", "sequence"):
            raise UserError(f"unknown --strategy {strategy!r}; use tree or sequence")
        try:
            chosen = Alignment(alignment)
        except ValueError:
            raise UserError(
                f"unknown --alignment {alignment!r}; use halt, bypass or realign"
            ) from None
        settings = GenerateSettings(
            generator=gen,
            seed=seed,
            test=command,
            entry=entry,
            polarity=polarity,
            name=name,
            output=output,
            strategy="tree" if strategy == "tree" else "sequence",
            alignment=chosen,
            jobs=jobs,
            timeout=timeout,
            generator_timeout=generator_timeout,
            signature=signature,
            any_failure=any_failure,
            repeat=repeat,
            polish=polish,
        )
        request = ResultRequest(branch=branch, force=force, patch=patch)
        summary = generate(
            settings,
            _progress(console),
            request,
            lambda line: console.print(line, highlight=False, markup=False),
        )
    print_summary(console, summary)
    if stats and not as_json:
        print_pass_profile(summary.stats)
    if as_json:
        sys.stdout.write(json.dumps(summary.as_dict(), indent=2) + "\n")
    if summary.interrupted:
        raise typer.Exit(EXIT_INTERRUPTED)


def _progress(console: Console) -> Callable[[TraceSearcher | Current], None]:
    """A line per improvement, at most every few seconds when not on a terminal (CI logs)."""
    interval = 0.0 if console.is_terminal else 2.0
    last = [0.0]

    def show(state: TraceSearcher | Current) -> None:
        now = time.monotonic()
        if now - last[0] < interval:
            return
        last[0] = now
        stats = state.engine.stats
        if isinstance(state, Current):
            console.print(
                f"{len(state.text)} bytes  {state.tokens} tokens  polishing "
                f"({state.label})  tests {stats.tests_run}  {stats.elapsed:.0f}s",
                highlight=False,
            )
            return
        current = state.current
        console.print(
            f"{len(current.output)} bytes  {len(current.decisions)} decisions  "
            f"tests {stats.tests_run}  generator runs {state.runs + 1}  {stats.elapsed:.0f}s",
            highlight=False,
        )

    return show


def print_summary(console: Console, summary: GenerateSummary) -> None:
    print_warnings(console, summary.warnings)
    state = "interrupted; best so far" if summary.interrupted else "reduced"
    share = 100.0 * summary.bytes_after / max(1, summary.bytes_before)
    console.print(
        f"{state}: {summary.bytes_before} → {summary.bytes_after} bytes ({share:.1f}%), "
        f"{summary.tokens_before} → {summary.tokens_after} tokens; "
        f"{summary.stats.tests_run} tests, {summary.stats.cache_hits} cached, "
        f"{summary.generator_runs} generator runs, {summary.wall_seconds:.1f}s"
        f"{verified_note(summary.verified)}",
        highlight=False,
    )
    print_provenance(console, summary.stats)
    failed = sum(summary.generator_failures.values())
    console.print(
        f"trace ({summary.strategy}, {summary.alignment}): {summary.decisions_before} → "
        f"{summary.decisions_after} decisions, {summary.parts_before} → {summary.parts_after} "
        f"reducible parts; {failed} re-executions yielded nothing, "
        f"{summary.misaligned} misaligned decisions; the generator wrote "
        f"{summary.tokens_generated} tokens",
        highlight=False,
    )
    if summary.branch is not None and summary.commits:
        console.print(
            f"recorded as branch {summary.branch} ({summary.commits[-1][:12]}): "
            f"git show {summary.branch}",
            highlight=False,
        )
    if summary.output is not None:
        console.print(f"written to {summary.output}", highlight=False)
