"""A test's output as the oracle keeps it, against real processes writing a lot of it."""

import os
from pathlib import Path

from gitreduce.core.outcome import Verdict
from gitreduce.oracle import output
from gitreduce.oracle.runner import Oracle
from gitreduce.oracle.spec import TestSpec

CHUNK_MB = 32
CHUNKS = 8


def test_a_test_writing_without_end_leaves_its_head_and_tail_but_not_its_bulk_on_disk(
    tmp_path: Path,
) -> None:
    """A candidate's program that prints flat out until the test ends (here 256 MB in
    slices, slower than the oracle looks). Before: every byte of it stayed on disk for
    the run, at a gigabyte a second or more per job. Now the middle is given back while
    the test runs; the head and the tail read as before."""
    command = (
        "echo 'first line of the output'; "
        f"for i in $(seq {CHUNKS}); do head -c {CHUNK_MB}M /dev/zero; "
        f"sleep {2 * output.TRIM_SECONDS}; done; "
        "echo; echo 'error: the last line'; exit 1"
    )
    spec = TestSpec(command, "candidate.txt", timeout=60)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    with Oracle(spec, jobs=1, scratch_root=scratch) as oracle:
        outcome, shown = oracle.run_with_output(b"anything\n")
        [written] = list(scratch.rglob("*.out"))
        status = os.stat(written)
    assert outcome.verdict is Verdict.BAD
    assert shown.startswith("first line of the output\n")
    assert shown.endswith("error: the last line\n")
    assert " bytes omitted ...]" in shown
    total = CHUNKS * CHUNK_MB * 1024 * 1024
    assert status.st_size > total
    # what is left on disk: the spill allowed, the slice written since the last look
    assert status.st_blocks * 512 <= output.SPILL_BYTES + 2 * CHUNK_MB * 1024 * 1024
