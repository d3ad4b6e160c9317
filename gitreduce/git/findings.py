"""Findings: the commits of a repository that a fuzzer (or a person) marked for reduction.

A finding is a commit whose message ends with a `Reduce-Test: NAME` trailer;
its parent holds the passing seed and the commit the failing variant of the
files it changes (added, modified or deleted, in git's order), plus those its
`Reduce-Path:` trailers name: each trailer holds one path (its whole value,
spaces included), and the trailer is repeated for more (a header the commit
leaves alone but the test needs). One path is reduced as one file (`git reduce C^..C -- PATH`),
several as a pair of file sets (`git reduce C^..C -- P1 P2 ...`). Paths are
data like the rest of the message: each must be a plain relative path to a
regular file (not a symbolic link, not a submodule) at the commit or its
parent, or the finding says why it cannot run. The trust rule is
the post-commit hook's (see `hooks.POST_COMMIT`): a commit message is data
from whoever wrote it, so the trailer only *names* a test, and what runs is
`git config gitreduce.test.NAME.command` from the user's own configuration. A
name that is not a plain word or not defined here runs nothing; the finding
is reported with the reason. A `--test CMD` given on the command line serves
the commits in the range that carry no trailer.

Nothing here runs a test or writes to the repository.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

import pygit2
from pygit2.enums import DeltaStatus, FileMode, SortMode

from gitreduce.core import fileset
from gitreduce.core.errors import UserError
from gitreduce.git.config import branch_prefix
from gitreduce.git.revisions import parse_range, resolve_commit

TEST_TRAILER = "reduce-test"
PATH_TRAILER = "reduce-path"
# The name goes into a config key and a note: only a plain word is a name.
TEST_NAME = re.compile(r"[A-Za-z0-9._-]+")
_PATH_LINE = re.compile(r"^\s*reduce-path\s*:(.*)$", re.IGNORECASE)
_LOOSE_TEST_LINE = re.compile(r"^\s*reduce-test\s*:", re.IGNORECASE | re.MULTILINE)


@dataclass(frozen=True)
class Finding:
    """One commit to reduce against its parent, or the reason it cannot be.

    `command` is what runs (from the user's config, or `--test`); `problem`
    is set instead when nothing may run, and says why in one line.
    """

    commit: str
    paths: tuple[str, ...]
    test_name: str | None
    command: str | None
    problem: str | None = None

    @property
    def short(self) -> str:
        return self.commit[:7]

    @property
    def path(self) -> str | None:
        """The file of a one-file finding (None when it has several, or none)."""
        return self.paths[0] if len(self.paths) == 1 else None

    def branch(self, prefix: str) -> str:
        """The result branch under `prefix` (`gitreduce.branchPrefix`), as the hook names it."""
        return f"{prefix}{self.short}"


def configured_test(repo: pygit2.Repository, name: str) -> str | None:
    """`gitreduce.test.NAME.command` from the user's configuration (local, global, system)."""
    try:
        value = repo.config[f"gitreduce.test.{name}.command"]
    except (KeyError, ValueError, pygit2.GitError):
        return None
    return value if isinstance(value, str) and value.strip() else None


def commits_in(repo: pygit2.Repository, revisions: str | None, everything: bool) -> list[str]:
    """The commits of RANGE (`A..B`, or one revision and all it reaches; default HEAD), or
    with `everything` of every branch and tag except gitreduce's own result branches;
    oldest first."""
    walker = repo.walk(None, SortMode.TOPOLOGICAL | SortMode.REVERSE)
    if everything:
        if revisions is not None:
            raise UserError("give a revision range or --all, not both")
        tips = _all_tips(repo)
        if not tips:
            raise UserError("the repository has no commits")
        for tip in tips:
            walker.push(tip)
    elif revisions is not None and ".." in revisions:
        good, bad = parse_range(revisions)
        walker.push(resolve_commit(repo, bad).id)
        walker.hide(resolve_commit(repo, good).id)
    else:
        if revisions is None and repo.head_is_unborn:
            raise UserError("the repository has no commits")
        walker.push(resolve_commit(repo, revisions or "HEAD").id)
    return [str(commit.id) for commit in walker]


def _all_tips(repo: pygit2.Repository) -> list[pygit2.Oid]:
    tips: dict[pygit2.Oid, None] = {}
    prefix = branch_prefix(repo)
    for name in repo.references:
        if not name.startswith(("refs/heads/", "refs/tags/")):
            continue  # refs/reduce (the cache), refs/notes, remotes: not the user's history
        if name.startswith("refs/heads/" + prefix):
            continue  # results of earlier reductions
        try:
            commit = repo.references[name].peel(pygit2.Commit)
        except (ValueError, pygit2.GitError, pygit2.InvalidSpecError):
            continue
        tips[commit.id] = None
    return list(tips)


def find_findings(
    repo: pygit2.Repository, commits: Iterable[str], fallback_command: str | None = None
) -> list[Finding]:
    """The findings among `commits`, in their order.

    A commit without a `Reduce-Test` trailer is a finding only when
    `fallback_command` is given, and only if it has one parent and changes
    one file or has a `Reduce-Path:` trailer: a range handed to `--test` holds
    the seeds' own commits too (adding several files at once), which are not
    findings. A commit with the trailer is always
    reported, with the reason when it cannot be reduced.
    """
    findings = []
    for sha in commits:
        finding = examine(repo, sha, fallback_command)
        if finding is not None:
            findings.append(finding)
    return findings


def examine(
    repo: pygit2.Repository, sha: str, fallback_command: str | None = None
) -> Finding | None:
    """`sha` as a finding, or None when it is not one."""
    commit = repo.get(sha)
    if not isinstance(commit, pygit2.Commit):
        return None
    trailers = _trailers(commit)
    named = TEST_TRAILER in trailers
    if not named:
        if fallback_command is None:
            if _LOOSE_TEST_LINE.search(commit.message):
                return Finding(
                    sha,
                    (),
                    None,
                    None,
                    "its Reduce-Test: line is not a trailer: trailers are the last paragraph, "
                    "together",
                )
            return None
        if len(commit.parents) != 1:
            return None
        named_paths = _named_paths(commit, trailers)
        changed = _changed_files(repo, commit)
        if not named_paths and len(changed) != 1:
            return None  # a seed's own commit, a merge of files: not a mutation to reduce
        paths = _paths_to_reduce(changed, named_paths)
        problem = _paths_problem(commit, paths) if len(paths) > 1 else None
        return Finding(sha, paths, None, fallback_command, problem)
    name = trailers[TEST_TRAILER]
    if not TEST_NAME.fullmatch(name):
        shown = printable(name)
        return Finding(
            sha, (), None, None, f"'{shown}' is not a test name (letters, digits, '.', '_', '-')"
        )
    command = configured_test(repo, name)
    if command is None:
        return Finding(
            sha,
            (),
            name,
            None,
            f"test '{name}' is not defined here (git config gitreduce.test.{name}.command ...)",
        )
    if len(commit.parents) != 1:
        why = "it has no parent to be the passing seed" if not commit.parents else "it is a merge"
        return Finding(sha, (), name, command, why)
    paths = _paths_to_reduce(_changed_files(repo, commit), _named_paths(commit, trailers))
    if not paths:
        return Finding(
            sha, (), name, command, "it changes no file; name them in 'Reduce-Path: PATH' trailers"
        )
    return Finding(sha, paths, name, command, _paths_problem(commit, paths))


def _trailers(commit: pygit2.Commit) -> dict[str, str]:
    """The message's trailers as git reads them, keys lower-cased, the last value winning."""
    try:
        found = commit.message_trailers
    except (ValueError, pygit2.GitError):
        return {}
    return {key.lower(): value.strip() for key, value in found.items()}


def _changed_files(repo: pygit2.Repository, commit: pygit2.Commit) -> list[str]:
    diff = repo.diff(commit.parents[0], commit)
    return [
        delta.old_file.path if delta.status == DeltaStatus.DELETED else delta.new_file.path
        for delta in diff.deltas
    ]


def _named_paths(commit: pygit2.Commit, trailers: dict[str, str]) -> list[str]:
    """The paths of every `Reduce-Path:` trailer, in order: each value is one path.

    libgit2 keeps the last value of a repeated key only, so the values are read
    from the message's last paragraph, where git finds its trailers.
    """
    if PATH_TRAILER not in trailers:
        return []
    block = commit.message.rstrip().rsplit("\n\n", 1)[-1]
    paths: list[str] = []
    for line in block.splitlines():
        match = _PATH_LINE.match(line)
        if match is not None and match.group(1).strip():
            paths.append(match.group(1).strip())
    return paths


def _paths_to_reduce(changed: list[str], named: list[str]) -> tuple[str, ...]:
    """The changed files, then the named ones not among them, each once."""
    return tuple(dict.fromkeys([*changed, *named]))


def _paths_problem(commit: pygit2.Commit, paths: tuple[str, ...]) -> str | None:
    """Why `paths` cannot be the finding's files, or None.

    One path is reduced as one file, so it must be a file at both commits and
    differ. Several are a pair of sets: each must be a file at the commit or its
    parent (added and deleted files are part of the change), and the commit
    must hold at least one of them.
    """
    if len(paths) == 1:
        return _path_problem(commit, paths[0])
    versions = (("its parent", commit.parents[0]), ("the commit", commit))
    for path in paths:
        problem = _path_syntax(path)
        if problem is not None:
            return problem
        found = [(where, version.tree[path]) for where, version in versions if path in version.tree]
        if not found:
            return f"{printable(path)} does not exist in the commit or its parent"
        for where, entry in found:
            problem = _entry_problem(path, entry, where)
            if problem is not None:
                return problem
    if not any(path in commit.tree for path in paths):
        return f"none of its {len(paths)} files is in the commit"
    if all(_same(commit, path) for path in paths):
        return f"its {len(paths)} files are the same in the commit and its parent"
    return None


def _same(commit: pygit2.Commit, path: str) -> bool:
    parent = commit.parents[0]
    if path not in parent.tree or path not in commit.tree:
        return False
    return parent.tree[path].id == commit.tree[path].id


def printable(text: str) -> str:
    """`text` from a commit as a message may show it: control characters (a terminal's
    escape sequences) as `?`."""
    return "".join(char if char.isprintable() else "?" for char in text)


def _path_syntax(path: str) -> str | None:
    """Why `path` is not a plain path inside the repository, or None."""
    parts = path.split("/")
    shown = printable(path)
    if not path or path.startswith("/") or ".." in parts or "." in parts or "" in parts:
        return f"'{shown}' is not a path inside the repository"
    problem = fileset.check_path(path)
    if problem is not None:
        return f"'{shown}' cannot be reduced: {problem}"
    return None


def _entry_problem(path: str, entry: pygit2.Object, where: str) -> str | None:
    if entry.type_str != "blob":
        return f"{printable(path)} is not a file in {where}"
    if entry.filemode == FileMode.LINK:
        return f"{printable(path)} is a symbolic link in {where}"
    return None


def _path_problem(commit: pygit2.Commit, path: str) -> str | None:
    """Why `path` cannot be the finding's file, or None: it must be a file at both commits."""
    problem = _path_syntax(path)
    if problem is not None:
        return problem
    for where, version in (("its parent", commit.parents[0]), ("the commit", commit)):
        try:
            entry = version.tree[path]
        except KeyError:
            return f"{printable(path)} does not exist in {where}"
        problem = _entry_problem(path, entry, where)
        if problem is not None:
            return problem
    if commit.parents[0].tree[path].id == commit.tree[path].id:
        return f"{printable(path)} is the same in the commit and its parent"
    return None
