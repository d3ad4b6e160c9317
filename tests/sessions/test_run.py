"""A pair's originals calibrated side by side, with real test processes and a real cache;
work made aside while they run (the grammar's loading among it)."""

from __future__ import annotations

import os
import time
from dataclasses import replace
from pathlib import Path

import pygit2
import pytest
from support import isolate, quiet_cache

from gitreduce.api import reduce_pair
from gitreduce.core.errors import MisclassifiedOriginal, UserError
from gitreduce.core.outcome import Verdict
from gitreduce.git.store import ResultRequest
from gitreduce.lang import grammars
from gitreduce.oracle.executor import TestRunner
from gitreduce.oracle.runner import Oracle, OracleClosed, started_tests
from gitreduce.oracle.spec import TestSpec
from gitreduce.sessions import run as run_module
from gitreduce.sessions.run import Hold, Original, calibrate_originals, made_aside
from gitreduce.sessions.single import SingleSettings, reduce_file

SEED, VARIANT = b"int seed;\n", b"int variant;\n"


def logging_test(tmp_path: Path, seconds: float, seed_exit: int = 0, variant_exit: int = 1) -> str:
    """A test that logs each run's start and end, by original, and takes `seconds`."""
    log = tmp_path / "runs.log"
    test = tmp_path / "test.sh"
    test.write_text(
        "#!/bin/sh\n"
        f'grep -q seed "$1" && side=seed code={seed_exit} || side=variant code={variant_exit}\n'
        f'echo "start $side $(date +%s.%N)" >> {log}\n'
        f"sleep {seconds}\n"
        f'echo "end $side $(date +%s.%N)" >> {log}\n'
        'exit "$code"\n'
    )
    test.chmod(0o755)
    return f"{test} {{}}"


def intervals(tmp_path: Path) -> dict[str, list[tuple[float, float]]]:
    """Each original's runs as (start, end), in the order they started."""
    starts: dict[str, list[float]] = {"seed": [], "variant": []}
    ends: dict[str, list[float]] = {"seed": [], "variant": []}
    for line in (tmp_path / "runs.log").read_text().splitlines():
        event, side, moment = line.split()
        (starts if event == "start" else ends)[side].append(float(moment))
    return {side: list(zip(starts[side], sorted(ends[side]), strict=True)) for side in starts}


def most_at_once(runs: dict[str, list[tuple[float, float]]]) -> int:
    events = sorted(
        (moment, step)
        for spans in runs.values()
        for start, end in spans
        for moment, step in ((start, 1), (end, -1))
    )
    running = most = 0
    for _, step in events:
        running += step
        most = max(most, running)
    return most


def originals() -> tuple[Original, Original]:
    return (
        Original(SEED, Verdict.GOOD, "the original seed", "seed"),
        Original(VARIANT, Verdict.BAD, "the original variant", "variant"),
    )


@pytest.fixture
def cache(tmp_path: Path):
    repo = pygit2.init_repository(str(tmp_path / "store"), bare=True)
    cache = quiet_cache(repo)
    yield cache
    cache.close()


def test_two_jobs_run_the_seeds_tests_beside_the_variants(tmp_path, cache):
    """Five runs each, sharing two slots: a seed's run goes beside a variant's where one
    original after the other left each one's fifth run alone."""
    command = logging_test(tmp_path, 0.2)
    spec = TestSpec(command, "v.c")
    calibrated, outcome = calibrate_originals(spec, cache, *originals(), jobs=2, echo=None)
    runs = intervals(tmp_path)
    assert [len(runs["seed"]), len(runs["variant"])] == [5, 5]
    assert most_at_once(runs) == 2
    assert any(
        seed_start < variant_end and variant_start < seed_end
        for seed_start, seed_end in runs["seed"]
        for variant_start, variant_end in runs["variant"]
    )
    assert outcome.verdict is Verdict.BAD and outcome.exit_code == 1  # the variant's
    assert calibrated.timeout is not None and calibrated.timeout >= 2.0


def test_one_job_runs_the_seed_first_one_run_at_a_time(tmp_path, cache):
    calibrate_originals(
        TestSpec(logging_test(tmp_path, 0.05), "v.c"), cache, *originals(), jobs=1, echo=None
    )
    runs = intervals(tmp_path)
    assert most_at_once(runs) == 1
    assert runs["seed"][-1][1] <= runs["variant"][0][0]


@pytest.mark.parametrize("jobs", [1, 2])
def test_the_seeds_error_comes_first(tmp_path, cache, jobs):
    """Both originals misclassified: the seed's error, at any number of jobs; the variant's
    only when the seed is right."""
    both_wrong = TestSpec(logging_test(tmp_path, 0.0, seed_exit=1, variant_exit=0), "v.c")
    with pytest.raises(UserError, match=r"^seed: the original input is not good"):
        calibrate_originals(both_wrong, cache, *originals(), jobs=jobs, echo=None)
    os.remove(tmp_path / "runs.log")
    variant_wrong = TestSpec(logging_test(tmp_path, 0.0, seed_exit=0, variant_exit=0), "v.c")
    with pytest.raises(UserError, match=r"^variant: the original input is not bad"):
        calibrate_originals(variant_wrong, cache, *originals(), jobs=jobs, echo=None)


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_seed_that_fails_beside_a_variant_that_passes_is_called_swapped(tmp_path, cache, jobs):
    swapped = TestSpec(logging_test(tmp_path, 0.0, seed_exit=1, variant_exit=0), "v.c")
    with pytest.raises(MisclassifiedOriginal) as refused:
        calibrate_originals(swapped, cache, *originals(), jobs=jobs, echo=None)
    assert str(refused.value).startswith("seed: the original input is not good")
    assert "the two look swapped" in str(refused.value)
    assert len(intervals(tmp_path)["variant"]) >= 1  # at one job too: run to tell


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_c_reduce_scripts_swapped_pair_is_called_swapped_too(tmp_path, cache, jobs):
    """Under --interesting a passing seed is merely uninteresting (any exit but 0): the
    variant that gets that verdict, beside a seed that is interesting, is the seed."""
    interesting_seed = logging_test(tmp_path, 0.0, seed_exit=0, variant_exit=1)
    spec = TestSpec(interesting_seed, "v.c", polarity="interesting")
    uninteresting = Original(SEED, Verdict.SKIP, "the original seed", "seed")
    with pytest.raises(MisclassifiedOriginal) as refused:
        calibrate_originals(spec, cache, uninteresting, originals()[1], jobs=jobs, echo=None)
    assert str(refused.value).startswith(
        "seed: the original input is not uninteresting under the test (exit 0)"
    )
    assert "the two look swapped" in str(refused.value)


@pytest.mark.parametrize(("seed_exit", "variant_exit"), [(1, 1), (125, 0), (1, 125)])
@pytest.mark.parametrize("jobs", [1, 2])
def test_only_a_failing_seed_and_a_passing_variant_are_called_swapped(
    tmp_path, cache, jobs, seed_exit, variant_exit
):
    spec = TestSpec(logging_test(tmp_path, 0.0, seed_exit, variant_exit), "v.c")
    with pytest.raises(
        MisclassifiedOriginal, match=r"^seed: the original input is not good"
    ) as refused:
        calibrate_originals(spec, cache, *originals(), jobs=jobs, echo=None)
    assert "swapped" not in str(refused.value)


def test_work_made_aside_waits_for_the_first_test_process_to_start(monkeypatch) -> None:
    """The parses made aside hold the interpreter while they run: they start once a test
    process is under way (a real one here), not while the calibration sets up."""
    monkeypatch.setattr(run_module, "HOLD_SECONDS", 30.0)  # only the test or a release ends it
    started: list[int] = []
    hold = Hold()
    made = made_aside(lambda: started.append(started_tests()) or "parsed", hold)
    time.sleep(0.05)
    assert not made.done()  # no test yet: the work waits
    with Oracle(TestSpec("exit 1", "variant.c", timeout=10), jobs=1) as oracle:
        before = started_tests()
        oracle.run(b"int variant;\n")
    assert made.result(timeout=10) == "parsed"  # not released: the test let it go
    assert started[0] >= before + 1


def test_work_made_aside_starts_when_asked_for_if_no_test_runs(monkeypatch) -> None:
    """A calibration answered from the cache starts no test: asking for the result lets
    the work go at once."""
    monkeypatch.setattr(run_module, "HOLD_SECONDS", 30.0)
    hold = Hold()
    made = made_aside(lambda: "parsed", hold)
    time.sleep(0.05)
    assert not made.done()
    hold.release()
    assert made.result(timeout=10) == "parsed"


# -- the grammar, loaded while the originals' tests run --------------------------------

PROGRAM = b"int kept;\nint bug = 1;\nint other;\n"
GREP_BUG = "grep -q 'bug' {}"


def loads_counted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many test processes had started each time a grammar was loaded."""
    seen: list[int] = []
    load = grammars.load

    def counted(name: str) -> grammars.Grammar | None:
        seen.append(started_tests())
        return load(name)

    monkeypatch.setattr(grammars, "load", counted)
    return seen


def test_a_files_grammar_is_loaded_once_its_originals_test_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Importing a grammar's wheel is 2-3 ms, before the first test the whole of it time
    outside the tests; made aside, it waits for the calibration's first test process."""
    isolate(tmp_path, monkeypatch)
    monkeypatch.setattr(run_module, "HOLD_SECONDS", 30.0)  # only a test lets it go
    seen = loads_counted(monkeypatch)
    program = tmp_path / "bug.c"
    program.write_bytes(PROGRAM)
    before = started_tests()
    summary = reduce_file(
        SingleSettings(program, GREP_BUG, polarity="interesting", jobs=2),
        result=ResultRequest(),
    )
    assert summary.language == "c" and summary.tokens_after < summary.tokens_before
    assert seen and seen[0] > before


def test_a_pairs_grammar_is_loaded_once_its_originals_tests_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    isolate(tmp_path, monkeypatch)
    monkeypatch.setattr(run_module, "HOLD_SECONDS", 30.0)
    seen = loads_counted(monkeypatch)
    seed, variant = tmp_path / "seed.c", tmp_path / "bug.c"
    seed.write_bytes(PROGRAM.replace(b"bug", b"fine"))
    variant.write_bytes(PROGRAM)
    before = started_tests()
    summary = reduce_pair(seed, variant, GREP_BUG, interesting=True, jobs=2)
    assert summary.language == "c" and summary.diff_after >= 1
    assert seen and seen[0] > before


def test_a_language_asked_for_is_checked_before_any_test_and_loaded_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    isolate(tmp_path, monkeypatch)
    program = tmp_path / "bug.c"
    program.write_bytes(PROGRAM)
    before = started_tests()
    unknown = SingleSettings(program, GREP_BUG, polarity="interesting", language="cobol-85")
    with pytest.raises(UserError, match=r"unknown language 'cobol-85'; known: .*\bc\b"):
        reduce_file(unknown)
    assert started_tests() == before  # refused before the calibration ran anything
    monkeypatch.setattr(grammars, "load", lambda name: None)  # known, but no wheel here
    with pytest.raises(UserError, match="the C grammar cannot be loaded here"):
        reduce_file(replace(unknown, language="C"))
    guessed = reduce_file(replace(unknown, language=None), result=ResultRequest())
    assert guessed.language is None
    assert guessed.warnings[0].startswith("no grammar for bug.c; reducing by lines and tokens")


# -- the reduction's runner, made while the originals' tests run ------------------------


def runners_counted(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, TestRunner]]:
    """The reduction runners `calibrated_run` opens, with how many test processes had
    started when each was."""
    made: list[tuple[int, TestRunner]] = []
    opening = run_module.open_runner

    def counted(spec: TestSpec, jobs: int) -> TestRunner:
        started = started_tests()
        runner = opening(spec, jobs)
        made.append((started, runner))
        return runner

    monkeypatch.setattr(run_module, "open_runner", counted)
    return made


def test_the_reductions_runners_are_made_while_tests_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reduction's runner while the original's test calibrates, the re-verification's
    while the reduction's first tests run: their scratch directories were 1-2 ms each with
    no test running."""
    isolate(tmp_path, monkeypatch)
    monkeypatch.setattr(run_module, "HOLD_SECONDS", 30.0)
    made = runners_counted(monkeypatch)
    program = tmp_path / "bug.c"
    program.write_bytes(PROGRAM)
    before = started_tests()
    slow_original = "grep -q other {} && sleep 0.3; " + GREP_BUG  # five runs, two at a time
    summary = reduce_file(
        SingleSettings(program, slow_original, polarity="interesting", jobs=2),
        result=ResultRequest(),
    )
    assert summary.tokens_after < summary.tokens_before and summary.verified
    [(reduction, runner), (verification, alone)] = made
    assert before < reduction <= before + 2  # beside the calibration's first two runs
    assert verification > before + 5  # after its five, beside the reduction's first
    for each in (runner, alone):
        with pytest.raises(OracleClosed):
            each.run(PROGRAM)  # closed with the run


def test_a_runner_made_before_calibration_takes_the_timeout_it_chose(tmp_path: Path) -> None:
    given = TestSpec("sleep 5", "v.c")
    made = Oracle(given, jobs=1)
    runner = run_module._calibrated_runner(made, given, replace(given, timeout=0.5), 1)
    with runner:
        assert runner is made
        began = time.monotonic()
        assert runner.run(b"int v;\n").verdict is Verdict.TIMEOUT
        assert time.monotonic() - began < 4.0
    other = Oracle(given, jobs=1)
    changed = replace(given, command="sleep 5 {}", timeout=0.5)  # the file as its argument
    with run_module._calibrated_runner(other, given, changed, 1) as runner:
        assert runner is not other and runner.timeout == 0.5
        with pytest.raises(OracleClosed):
            other.run(b"int v;\n")


def test_a_failed_calibration_closes_the_runner_made_beside_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    isolate(tmp_path, monkeypatch)
    made = runners_counted(monkeypatch)
    program = tmp_path / "bug.c"
    program.write_bytes(PROGRAM)
    with pytest.raises(UserError, match="the original input is not interesting"):
        reduce_file(SingleSettings(program, "grep -q absent {}", polarity="interesting"))
    assert len(made) == 1  # no re-verification's
    with pytest.raises(OracleClosed):
        made[0][1].run(PROGRAM)
