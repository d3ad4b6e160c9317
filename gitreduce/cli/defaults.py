"""Option defaults from git config: which keys, which options they stand for, and the
`default_map` that hands them to click, so that an option given on the command line wins.

The keys are read where git would read them (`git.config.GitConfig.at` the
current directory) and checked before anything runs: a value that cannot work
is one `error:` line naming the key (exit 2), as for a bad option.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gitreduce.core.errors import UserError
from gitreduce.git.config import (
    BRANCH_PREFIX,
    EXECUTOR,
    JOBS,
    TIMEOUT,
    TRIAGE_WORKERS,
    GitConfig,
)
from gitreduce.oracle.executor import parse_executor

# (key, what it sets): the CONFIGURATION of `git reduce -h` and the manual
CONFIG_KEYS = (
    (JOBS, "--jobs of git reduce, generate and triage (default: the number of CPUs)"),
    (TIMEOUT, "--timeout of git reduce, generate and triage, in seconds"),
    (
        BRANCH_PREFIX,
        "what result branches are named under (default reduce/); --branch NAME names one outright",
    ),
    (EXECUTOR, "--executor of git reduce triage (default local)"),
    (TRIAGE_WORKERS, "--workers of git reduce triage (default 1)"),
)

# the commands each option default applies to, by click parameter name
_TESTING = ("reduce", "generate", "triage")


def default_map(where: Path) -> dict[str, dict[str, Any]]:
    """click's `default_map` for `git reduce` run in `where`, from its git config."""
    config = GitConfig.at(where)
    shared: dict[str, Any] = {}
    jobs = config.count(JOBS)
    if jobs is not None:
        shared["jobs"] = jobs
    timeout = config.seconds(TIMEOUT)
    if timeout is not None:
        shared["timeout"] = timeout
    config.branch_prefix()  # refused now rather than when the result is recorded
    triage = dict(shared)
    workers = config.count(TRIAGE_WORKERS)
    if workers is not None:
        triage["workers"] = workers
    executor = config.text(EXECUTOR)
    if executor:
        try:
            parse_executor(executor)
        except UserError as error:
            raise UserError(f"git config {EXECUTOR}: {error}") from None
        triage["executor"] = executor
    return {name: dict(shared) for name in _TESTING} | {"triage": triage}
