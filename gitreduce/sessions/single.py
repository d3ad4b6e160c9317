"""Single-file mode: `git reduce FILE` reduces one program under the test.

Job: read the file, run the single-program pass schedule on it inside the
shared run scaffold (see `run.calibrated_run`), write the result when asked
(or outside any repository), record it as a commit, and return the `Summary`
the reporters render. Callable from Python as well as from the CLI.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from gitreduce.core.current import Current
from gitreduce.core.errors import UserError
from gitreduce.core.outcome import Outcome, Verdict
from gitreduce.core.stats import Stats
from gitreduce.git.store import ResultRequest, Store, calibrate_cached, message, record
from gitreduce.git.verdicts import GitVerdictCache
from gitreduce.lang.grammars import Grammar
from gitreduce.lang.syntax import Syntax
from gitreduce.oracle.spec import TestSpec
from gitreduce.passes.schedule import reduce_program
from gitreduce.sessions.interrupts import deferring
from gitreduce.sessions.run import (
    Echo,
    Hold,
    calibrated_run,
    default_output,
    load_grammar,
    made_aside,
    named_language,
    prepared,
    read_input,
    refuse_overwriting,
    run_figures,
    waiting_notice,
)
from gitreduce.sessions.verify import backed_off, settle


@dataclass(frozen=True)
class SingleSettings:
    """What `git reduce FILE` was asked to do."""

    path: Path
    test: str
    polarity: Literal["bisect", "interesting"] = "bisect"
    jobs: int = field(default_factory=lambda: os.cpu_count() or 1)
    timeout: float | None = None
    language: str | None = None
    signature: str | None = None
    any_failure: bool = False
    output: Path | None = None
    skip_passes: tuple[str, ...] = ()  # pass names or labels switched off (see `run_pass`)
    repeat: int = 1  # runs per candidate, judged by their majority


@dataclass
class Summary:
    """The figures a reporter prints and `--json` emits."""

    input: str
    output: str | None
    language: str | None
    tokens_before: int
    tokens_after: int
    bytes_before: int
    bytes_after: int
    stats: Stats
    wall_seconds: float
    interrupted: bool = False
    verified: bool = False  # the result stood its re-verification alone (see sessions/verify.py)
    warnings: list[str] = field(default_factory=list)
    test: str = ""  # the command as it ran (see `calibrated_run`)
    signature: str | None = None  # how the original fails (None: not calibrated)
    branch: str | None = None
    commits: list[str] = field(default_factory=list)
    result: bytes = b""  # the reduced text, for reports

    def as_dict(self) -> dict[str, object]:
        return {
            "input": self.input,
            "output": self.output,
            "language": self.language,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "bytes_before": self.bytes_before,
            "bytes_after": self.bytes_after,
            **run_figures(self),
        }


Progress = Callable[[Current], None]


@deferring
def reduce_file(
    settings: SingleSettings,
    progress: Progress | None = None,
    result: ResultRequest | None = None,
    echo: Echo | None = None,
) -> Summary:
    """Reduce one file under the test; the result is written even when interrupted
    (the original itself, if the interrupt came before the test was calibrated).

    `echo` hears what the run waits for when the test on the original is slow.
    """
    started = time.monotonic()
    original = read_input(settings.path)
    store = Store.near(settings.path)
    # Inside a repository the result is a branch; a file is written only when asked
    # for, so the user's working tree stays untouched.
    output = settings.output or (None if store.users else default_output(settings.path))
    if output is not None and not output.parent.is_dir():
        raise UserError(f"cannot write {output}: {output.parent} is not a directory")
    if output is not None and output.is_dir():
        raise UserError(f"--output {output} is a directory; give the file to write")
    if output is not None:
        refuse_overwriting([output], [settings.path])
    language = named_language(settings.path, settings.language)
    warnings: list[str] = []
    # the grammar loaded, the original's parse and catalog (50 ms on 23,000 C tokens) while
    # its test calibrates
    hold = Hold()
    loading = made_aside(lambda: _loaded(settings, language, original), hold)
    spec = TestSpec(
        command=settings.test,
        relative_path=settings.path.name,
        polarity=settings.polarity,
        timeout=settings.timeout,
        signature_regex=settings.signature,
        any_failure=settings.any_failure,
        repeat=settings.repeat,
    )
    accepted = [original]  # every text taken as the best, to walk back along

    def on_change(current: Current) -> None:
        accepted.append(current.text)
        if progress is not None:
            progress(current)

    def calibrate(spec: TestSpec, cache: GitVerdictCache) -> tuple[TestSpec, Outcome]:
        with waiting_notice(echo, "the original", spec):
            return calibrate_cached(spec, original, Verdict.BAD, settings.jobs, cache)

    with calibrated_run(
        store, spec, warnings, settings.jobs, calibrate, settings.skip_passes
    ) as run:
        hold.release()
        grammar, warning, syntax = loading.result()
        if warning:
            warnings.insert(0, warning)
        if syntax is not None and syntax.baseline_errors:
            warnings.insert(  # where it stood before the calibration's own
                1 if warning else 0,
                f"{settings.path.name} has {syntax.baseline_errors} syntax error(s) under the "
                f"{syntax.grammar.name} grammar; candidates may not add more",
            )
        current = Current(original, run.engine, syntax, on_change)
        before_tokens = current.tokens
        if progress is not None:
            progress(current)
        reduce_program(current)
        settled = settle(run, accepted, lambda text: [(text, run.is_interesting, "it")])
        if settled.back:
            current = Current(settled.result, run.engine, syntax)
            warnings.append(backed_off(settled, f"{current.tokens} tokens"))
    if current.tokens == 0 and before_tokens > 0 and not run.interrupted:
        warnings.append(empty_result(run.spec))
    settings = replace(settings, test=run.spec.command)
    if output is not None:
        output.write_bytes(current.text)
    repo_path = store.repo_path(settings.path)
    branch, commits = record(
        store,
        result or ResultRequest(),
        hint=settings.path.stem,
        path=repo_path,
        versions=[
            (
                message(
                    f"git reduce: reduced {repo_path}",
                    path=repo_path,
                    test=settings.test,
                    sources=[],
                    before=original,
                    after=current.text,
                    tokens=(before_tokens, current.tokens),
                ),
                current.text,
            )
        ],
        warnings=warnings,
    )
    return Summary(
        input=str(settings.path),
        output=str(output) if output is not None else None,
        language=grammar.name if grammar else None,
        tokens_before=before_tokens,
        tokens_after=current.tokens,
        bytes_before=len(original),
        bytes_after=len(current.text),
        stats=run.engine.stats,
        wall_seconds=time.monotonic() - started,
        interrupted=run.interrupted,
        verified=run.verified,
        signature=run.reference.signature if run.reference is not None else None,
        warnings=warnings,
        test=settings.test,
        branch=branch,
        commits=commits,
        result=current.text,
    )


def _loaded(
    settings: SingleSettings, language: str | None, original: bytes
) -> tuple[Grammar | None, str, Syntax | None]:
    """The grammar `named_language` found, its warning, and the syntax check of `original`
    made (`prepared`)."""
    grammar, warning = load_grammar(settings.path, language, settings.language is not None)
    return grammar, warning, prepared(grammar, original) if grammar is not None else None


def empty_result(spec: TestSpec) -> str:
    """What an empty result most often means: a test that fails without looking at the
    candidate (a usage error's exit 1 counts as bad under `git bisect run`'s rules)."""
    reads = (
        f"it runs as `{spec.command}`, without the candidate's path: "
        if spec.with_file_argument() is not None
        else ""
    )
    return (
        "the result is empty: the test says an empty file fails the same way as the "
        f"original. If that is not the bug, the test may not read the candidate ({reads}"
        "put `{}` where the path goes, or read $GITREDUCE_FILE)"
    )
