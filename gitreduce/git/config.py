"""`gitreduce.*` settings from git config, read the way git reads its own.

Inside a repository: its own config, then the user's (global, XDG) and the
system's, the first that sets a key wins; outside one, the user's and the
system's only. The command line wins over all of them, which is the caller's
business: these are defaults. A value that is set but unusable is a
`UserError` naming the key, as git refuses a bad value of its own keys.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pygit2

from gitreduce.core.errors import UserError
from gitreduce.git.results import RESULT_BRANCH_PREFIX

JOBS = "gitreduce.jobs"
TIMEOUT = "gitreduce.timeout"
BRANCH_PREFIX = "gitreduce.branchPrefix"
EXECUTOR = "gitreduce.executor"
TRIAGE_WORKERS = "gitreduce.triage.workers"

T = TypeVar("T")


class GitConfig:
    """The config files that apply in one place, most specific first."""

    def __init__(self, layers: list[pygit2.Config]) -> None:
        self._layers = layers

    @classmethod
    def at(cls, where: Path) -> GitConfig:
        """The configuration git itself would use in `where`."""
        try:
            found = pygit2.discover_repository(str(where))
            if found:
                return cls([pygit2.Repository(found).config])
        except (OSError, pygit2.GitError):
            pass
        layers = []
        for level in (
            pygit2.Config.get_global_config,
            pygit2.Config.get_xdg_config,
            pygit2.Config.get_system_config,
        ):
            try:
                layers.append(level())
            except (OSError, pygit2.GitError):
                continue  # that file does not exist
        return cls(layers)

    @classmethod
    def of(cls, repo: pygit2.Repository) -> GitConfig:
        return cls([repo.config])

    def text(self, key: str) -> str | None:
        """The raw value of `key`, or None when no file sets it."""
        for layer in self._layers:
            try:
                if key in layer:
                    value = layer[key]
                    return value if isinstance(value, str) else None
            except (KeyError, ValueError, pygit2.GitError):
                continue
        return None

    def count(self, key: str) -> int | None:
        """A whole number of at least 1 (git's k/m/g suffixes accepted), or None when unset."""
        return self._parsed(key, _count, "a whole number of at least 1")

    def seconds(self, key: str) -> float | None:
        """A positive, finite number of seconds, or None when unset."""
        return self._parsed(key, _seconds, "a positive number of seconds")

    def branch_prefix(self) -> str:
        """`gitreduce.branchPrefix` (default `reduce/`): what result branches are named under."""
        prefix = self.text(BRANCH_PREFIX)
        if prefix is None:
            return RESULT_BRANCH_PREFIX
        if not prefix or not pygit2.reference_is_valid_name(f"refs/heads/{prefix}x"):
            raise UserError(f"git config {BRANCH_PREFIX}: {prefix!r} cannot start a branch name")
        return prefix

    def _parsed(self, key: str, parse: Callable[[str], T | None], wanted: str) -> T | None:
        value = self.text(key)
        if value is None:
            return None
        parsed = parse(value.strip())
        if parsed is None:
            raise UserError(f"git config {key}: {value!r} is not {wanted}")
        return parsed


def _count(text: str) -> int | None:
    try:
        value = pygit2.Config.parse_int(text)
    except (ValueError, pygit2.GitError):
        return None
    return value if value >= 1 else None


def _seconds(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) and value > 0 else None


def branch_prefix(repo: pygit2.Repository) -> str:
    """`gitreduce.branchPrefix` in `repo` (default `reduce/`)."""
    return GitConfig.of(repo).branch_prefix()
