"""Result branches and patches: how a reduction's answer is written into a repository.

Job: the `reduce/<name>` branch holding the reduced program (or the reduced
seed, then the reduced variant), its commit messages, and the
`git format-patch`-style file of its last commit. Writes objects and that one
branch only; never the user's working tree, index, HEAD or the branch HEAD
is on.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta, timezone
from email.header import Header
from email.utils import format_datetime, formataddr
from pathlib import Path

import pygit2
from pygit2.enums import FileMode

from gitreduce.core.errors import UserError

RESULT_BRANCH_PREFIX = "reduce/"


def result_branch_name(hint: str, prefix: str = RESULT_BRANCH_PREFIX) -> str:
    """`reduce/<hint>` made into a valid branch name (`hint`: the input's file name, a commit;
    `prefix`: `gitreduce.branchPrefix`, see `git.config.branch_prefix`)."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", hint).strip("-.") or "result"
    name = re.sub(r"\.\.+", ".", name)
    if name.endswith(".lock"):
        name = name[: -len(".lock")] + "-lock"
    return prefix + name


def user_signature(repo: pygit2.Repository) -> pygit2.Signature:
    """The user's identity for result commits, or a stand-in when none is configured."""
    try:
        return repo.default_signature
    except (KeyError, ValueError, pygit2.GitError):
        return pygit2.Signature("git reduce", "gitreduce@localhost")


def result_message(
    subject: str,
    *,
    path: str,
    test: str,
    sources: Sequence[str] = (),
    bytes_before: int | None = None,
    bytes_after: int | None = None,
    tokens_before: int | None = None,
    tokens_after: int | None = None,
    extra: Sequence[str] = (),
) -> str:
    """A result commit message: subject, what was reduced and how, and sizes before -> after.

    Trailers are `Reduced-*` (not `Reduce-Test`), so a hook that reduces
    commits carrying `Reduce-Test:` never fires on its own results.
    """
    body = [f"Reduced {path}" + (f" from {', '.join(sources)}" if sources else "")]
    if bytes_before is not None and bytes_after is not None:
        body.append(f"Bytes: {bytes_before} -> {bytes_after}")
    if tokens_before is not None and tokens_after is not None:
        body.append(f"Tokens: {tokens_before} -> {tokens_after}")
    body.extend(extra)
    trailers = [f"Reduced-From: {source}" for source in sources]
    trailers.append(f"Reduced-With: {test}")
    return f"{subject}\n\n" + "\n".join(body) + "\n\n" + "\n".join(trailers) + "\n"


def record_result(
    repo: pygit2.Repository,
    *,
    branch: str,
    path: str,
    versions: Sequence[tuple[str, bytes | Mapping[str, bytes]]],
    force: bool = False,
    author: pygit2.Signature | None = None,
) -> list[pygit2.Oid]:
    """Create branch `branch` with one commit per `(message, content)` in `versions`.

    Single-file mode passes one version (the reduced file); pairwise passes
    two (reduced seed, then reduced variant), so `git show <branch>` is the
    minimal failure-inducing change. Each commit's tree holds only `path`;
    for a file set (content a mapping of relative paths to bytes), `path` is
    the set's directory (empty or "." for the repository's top) and the tree
    holds the set's files below it.

    The history is an orphan: the first commit has no parent. With the GOOD
    commit as parent, the first commit would show as deleting every other
    file of the project; orphaned, `git show` of each commit is exactly the
    reduced program or the reduced change, and the source commits are named
    in the messages instead. Refuses an existing branch unless `force`, and
    never moves the branch HEAD is on. Returns the commit ids, oldest first.
    """
    if not versions:
        raise ValueError("record_result needs at least one version")
    ref_name = "refs/heads/" + branch
    if not pygit2.reference_is_valid_name(ref_name):
        raise UserError(f"{branch!r} is not a valid branch name")
    parts = [part for part in path.split("/") if part not in ("", ".")]
    sets = any(not isinstance(content, bytes) for _, content in versions)
    if (not parts and not sets) or ".." in parts:
        raise UserError(f"{path!r} is not a path inside the repository")
    head = repo.references.get("HEAD")
    symbolic = head is not None and head.type == pygit2.enums.ReferenceType.SYMBOLIC
    # unborn too: creating it would commit for the user
    if symbolic and head is not None and head.target == ref_name:
        raise UserError(f"branch {branch} is checked out; will not write to it")
    existing = repo.references.get(ref_name)
    if existing is not None and not force:
        raise UserError(f"branch {branch} already exists; use --force to replace it")
    signature = author or user_signature(repo)
    commits: list[pygit2.Oid] = []
    for message, content in versions:
        if isinstance(content, bytes):
            tree_id = _single_file_tree(repo, parts, content)
        else:
            tree_id = _file_set_tree(repo, parts, content)
        commits.append(
            repo.create_commit(None, signature, signature, message, tree_id, commits[-1:])
        )
    try:
        if existing is None:
            repo.references.create(ref_name, commits[-1])
        else:
            existing.set_target(commits[-1], "git reduce: result")
    except (pygit2.AlreadyExistsError, pygit2.GitError, OSError) as error:
        raise UserError(f"cannot write branch {branch}: {error}") from error
    return commits


def _single_file_tree(repo: pygit2.Repository, parts: list[str], content: bytes) -> pygit2.Oid:
    entry = repo.create_blob(content)
    mode = FileMode.BLOB
    for name in reversed(parts):
        builder = repo.TreeBuilder()
        builder.insert(name, entry, mode)
        entry, mode = builder.write(), FileMode.TREE
    return entry


def _file_set_tree(
    repo: pygit2.Repository, parts: list[str], files: Mapping[str, bytes]
) -> pygit2.Oid:
    """The tree holding every file of `files` at `parts`/its relative path."""
    index = pygit2.Index()
    for relative, content in sorted(files.items()):
        where = "/".join([*parts, relative])
        index.add(pygit2.IndexEntry(where, repo.create_blob(content), FileMode.BLOB))
    return index.write_tree(repo)


def format_patch(repo: pygit2.Repository, commit: pygit2.Commit | pygit2.Oid | str) -> bytes:
    """`git format-patch -1` of `commit` as bytes: applies with `git am` onto its parent.

    A root commit becomes a patch that creates its files. Note that `git am`
    drops carriage returns unless given `--keep-cr`, as for any mailed patch.
    """
    if not isinstance(commit, pygit2.Commit):
        try:
            found = repo.revparse_single(commit) if isinstance(commit, str) else repo[commit]
            commit = found.peel(pygit2.Commit)
        except (KeyError, ValueError, pygit2.GitError):
            raise UserError(f"{commit} is not a commit") from None
    if commit.parents:
        diff = repo.diff(commit.parents[0], commit)
    else:
        diff = commit.tree.diff_to_tree(swap=True)
    author = commit.author
    zone = timezone(timedelta(minutes=author.offset))
    date = format_datetime(datetime.fromtimestamp(author.time, zone))
    subject, _, body = commit.message.partition("\n")
    body = body.strip("\n")
    head = [
        f"From {commit.id} Mon Sep 17 00:00:00 2001",
        f"From: {formataddr((author.name, author.email), charset='utf-8')}",
        f"Date: {date}",
        f"Subject: {_header(f'[PATCH] {subject.strip()}')}",
        "MIME-Version: 1.0",
        "Content-Type: text/plain; charset=UTF-8",
        "Content-Transfer-Encoding: 8bit",
        "",
    ]
    if body:
        head += [body, ""]
    stats = diff.stats.format(
        pygit2.enums.DiffStatsFormat.FULL | pygit2.enums.DiffStatsFormat.INCLUDE_SUMMARY, 72
    )
    text = "\n".join(head).encode() + b"---\n" + stats.encode() + b"\n"
    text += b"".join(patch.data for patch in diff if patch is not None)
    text += b"-- \ngit reduce\n\n"
    return text


def _header(value: str) -> str:
    """A mail header value, RFC 2047-encoded when not ASCII (as `git format-patch` does)."""
    if value.isascii():
        return value
    return Header(value, "utf-8").encode(maxlinelen=76)


def write_patch(
    repo: pygit2.Repository, commit: pygit2.Commit | pygit2.Oid | str, path_out: Path
) -> Path:
    """Write `format_patch(repo, commit)` to `path_out` (the `--patch FILE` output)."""
    try:
        path_out.write_bytes(format_patch(repo, commit))
    except OSError as error:
        raise UserError(f"cannot write {path_out}: {error.strerror}") from error
    return path_out
