"""Installing and uninstalling the post-commit hook that wires reduction into commits.

The post-commit hook (its text is `POST_COMMIT`; `hooks/post-commit` in the
source tree is the same file, for those who install hooks by hand) queues
every commit whose message carries a `Reduce-Test: NAME` trailer (see
`triage_records`) and starts one background `git reduce triage --queue`
unless one is draining the queue already; that drain reduces each commit
against its parent, `gitreduce.triage.workers` at a time (default 1), and
attaches the minimal failure-inducing change to the commit as a note under
`refs/notes/reduce`. Fuzzers that store their findings as commits (seed, then
variant with the trailer) thus get each finding triaged while they go on,
without a burst of commits starting a burst of reductions; `git log
--notes=reduce` shows the results.

A commit message is data from whoever wrote the commit, and commits arrive by
fetch, amend, `commit -C`, cherry-pick and rebase alike, so the trailer only
names a test, as `.gitattributes` only names a diff or merge driver: what
runs is `git config gitreduce.test.NAME.command`, from the user's own (local
or global) configuration. A name that is not defined, or not a plain word
(`[A-Za-z0-9._-]+`), runs nothing and the note says why; so does a
`Reduce-Test:` line that git does not read as a trailer (not in the last
paragraph). The hook is shell, not Python, so that a commit costs no
interpreter start; the trust rule therefore lives in `POST_COMMIT` itself.

Installing writes into the repository's hooks directory, `core.hooksPath` if
set (relative to the work tree, as git reads it), else `.git/hooks`, and
records the absolute path of the `git-reduce` running the install, so the
hook finds it even when the virtualenv is not on PATH. A hook we did not
write is only replaced with `--force`, and then kept as `<hook>.pre-gitreduce`
(uninstall puts it back).

This is the repository side; `git reduce hooks install|uninstall` is its
command-line front, `gitreduce.cli.hooks`.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
import tempfile
from pathlib import Path

import pygit2

from gitreduce.core.errors import UserError
from gitreduce.git.layout import common_dir

MARKER = "# gitreduce-hook:"
BACKUP_SUFFIX = ".pre-gitreduce"
_EXECUTABLE_LINE = "GITREDUCE_EXE=''"

POST_COMMIT = r"""#!/bin/sh
# gitreduce-hook: post-commit
#
# Installed by `git reduce hooks install`; `git reduce hooks uninstall` removes it.
#
# When a commit's message ends with the trailers (its last paragraph, together)
#
#     Reduce-Test: NAME       a test defined in your git config (below)
#     Reduce-Path: PATH       optional: another file the test needs (repeat the
#                             trailer for more)
#
# this hook queues the commit for reduction against its parent (the parent holds
# the passing seed, the commit the failing variant) of the files it changes and
# those Reduce-Path names: one file as one file, several as a pair of file sets.
# One background
# `git reduce triage --queue` reduces the queue, gitreduce.triage.workers
# reductions at a time (default 1: fifty commits never start fifty reductions),
# and attaches each minimal failure-inducing change to its commit as a note;
# see them with
#
#     git log --notes=reduce
#
# A commit message is data from whoever wrote the commit, so it only names a
# test, as .gitattributes only names a diff or merge driver; what runs is
# defined in your own config (local or global), never in a commit:
#
#     git config gitreduce.test.NAME.command 'CMD'
#
# CMD is a test as for `git reduce --test`: 0 good, 1-127 bad, 125 skip, `{}` the
# candidate file. A name that is not defined here, or is not a name (letters,
# digits, '.', '_', '-'), runs nothing: the note says why. The result is also
# kept as the branch reduce/<short sha>. CMD runs in the root of the work tree.
# The commit is never delayed or failed: the hook returns at once and always
# exits 0. It queues commits made by `git commit` (and --amend) only, not by
# cherry-pick, revert, rebase or am, so rewriting a history of findings queues
# nothing (`git reduce triage` reduces such a backlog). Log:
# $GIT_DIR/gitreduce-hook.log. Off for one command: GITREDUCE_HOOK=0.

# The git-reduce that installed this hook (used while it exists), else PATH's.
GITREDUCE_EXE=''

say() {
    printf 'git-reduce hook: %s\n' "$*" >&2
}

trailer() {
    # The last value of trailer $1 (any case) among $trailers.
    printf '%s\n' "$trailers" | awk -v key="$1" '
        BEGIN { key = tolower(key) ":" }
        tolower(substr($0, 1, length(key))) == key {
            value = substr($0, length(key) + 1); sub(/^[ \t]+/, "", value)
        }
        END { if (value != "") print value }'
}

attach_note() {
    # Attach the text of file $2 to commit $1 as its note, verbatim (via a blob).
    blob=$(git hash-object -w "$2") || return 1
    tries=0
    until git notes --ref=reduce add -f -C "$blob" "$1" 2>/dev/null; do
        tries=$((tries + 1))
        [ $tries -ge 10 ] && return 1
        sleep 1 # another hook's note is being written
    done
}

not_run() {
    # Run nothing, and say why: on stderr, in the log and as the commit's note.
    # $1 is the reason (one line), the further arguments the note's other lines.
    say "$short not run: $1"
    log=$(git rev-parse --absolute-git-dir)/gitreduce-hook.log || return 0
    printf '%s %s: not run: %s\n' "$(date '+%Y-%m-%d %H:%M:%S')" "$short" "$1" >>"$log"
    note=$(mktemp) || return 0
    printf 'not run: %s\n\n' "$1" >"$note"
    shift
    printf '%s\n' "$@" >>"$note"
    attach_note "$sha" "$note" || echo "$short: could not write the note" >>"$log"
    rm -f "$note"
}

launch() {
    [ "${GITREDUCE_HOOK:-1}" = 0 ] && return 0
    message=$(git log -1 --format=%B HEAD 2>/dev/null)
    trailers=$(printf '%s\n' "$message" | git interpret-trailers --parse 2>/dev/null)
    name=$(trailer Reduce-Test)
    named=$(printf '%s\n' "$trailers" | grep -ci '^reduce-test:')
    # Without a Reduce-Test trailer, a Reduce-Test line elsewhere is a mistake to point out.
    if [ "$named" = 0 ]; then
        printf '%s\n' "$message" | grep -qi '^[[:space:]]*reduce-test[[:space:]]*:' || return 0
    fi
    sha=$(git rev-parse -q --verify HEAD) || return 0
    short=$(git rev-parse --short "$sha") || return 0
    if [ "$named" = 0 ]; then
        why="its Reduce-Test: line is not a trailer: trailers are the last paragraph, together"
        not_run "$why" \
            "git reads trailers only in the last paragraph of a message, all of them" \
            "together, with no blank line between them; each -m is a paragraph of its own:" \
            "" \
            "    git commit -m msg -m \"Reduce-Test: gcc-ice" \
            "    Reduce-Path: prog.c\"" \
            "" \
            "Check a message with: git log -1 --format=%B | git interpret-trailers --parse" \
            "Fix it with git commit --amend; the hook then runs on the amended commit."
        return 0
    fi
    # The name goes into a config key and a note: only a plain word is a name.
    case $name in
    "" | *[!ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-]*)
        shown=$(printf '%s' "$name" | LC_ALL=C tr -c ' -~' '?')
        not_run "'$shown' is not a test name (letters, digits, '.', '_', '-')" \
            "A Reduce-Test: trailer names a test; its command is defined in your git config:" \
            "" \
            "    git config gitreduce.test.NAME.command 'CMD'" \
            "" \
            "and the commit says Reduce-Test: NAME. A commit message never says what runs."
        return 0
        ;;
    esac
    test_cmd=$(git config --get "gitreduce.test.$name.command" 2>/dev/null)
    if [ -z "$test_cmd" ]; then
        not_run "test '$name' is not defined here (git config gitreduce.test.$name.command ...)" \
            "This commit names the test '$name'. A commit only names a test; what runs is" \
            "defined in your own git config (local or global), never in a commit:" \
            "" \
            "    git config gitreduce.test.$name.command 'CMD'" \
            "" \
            "Then reduce it: git reduce $short^..$short -- PATH --test 'CMD'"
        return 0
    fi
    # Not a matter of trust (the command is the user's own): a rebase or a picked
    # range of findings should not start one reduction per commit.
    action=$(git reflog -1 --format=%gs HEAD 2>/dev/null)
    case $action in
    "" | commit*) ;;
    *)
        say "$short not reduced: only \`git commit\` runs a Reduce-Test (this was ${action%%:*})"
        return 0
        ;;
    esac
    if ! git rev-parse -q --verify "$sha^" >/dev/null; then
        say "$short not reduced: it has no parent to be the passing seed"
        return 0
    fi
    # What is reduced: the changed files, then those Reduce-Path adds (the drain checks
    # each path; here they only name the reduction).
    files=$( {
        git -c core.quotePath=false diff-tree --no-commit-id --name-only -r "$sha^" "$sha"
        printf '%s\n' "$trailers" | awk '
            tolower(substr($0, 1, 12)) == "reduce-path:" {
                value = substr($0, 13); sub(/^[ \t]+/, "", value); sub(/[ \t]+$/, "", value)
                if (value != "") print value
            }'
    } | awk '!seen[$0]++')
    count=$(printf '%s' "$files" | grep -c '')
    case $count in
    0) what="no file" ;;
    1) what=$files ;;
    [2-4]) what=$(printf '%s' "$files" | tr '\n' ' ') ;;
    *) what="$count files" ;;
    esac
    exe=
    if [ -n "$GITREDUCE_EXE" ] && [ -x "$GITREDUCE_EXE" ]; then
        exe=$GITREDUCE_EXE
    else
        exe=$(command -v git-reduce 2>/dev/null)
    fi
    if [ -z "$exe" ]; then
        say "$short not reduced: git-reduce not found;" \
            "put it on PATH or run git reduce hooks install --force"
        return 0
    fi
    log=$(git rev-parse --absolute-git-dir)/gitreduce-hook.log || return 0
    common=$(git rev-parse --path-format=absolute --git-common-dir 2>/dev/null) || return 0
    queue=$common/gitreduce/queue
    if ! { mkdir -p "$queue" && : >"$queue/$sha"; }; then
        say "$short not reduced: cannot write to $queue"
        return 0
    fi
    say "queued $short (${what% }, test '$name') for reduction in the background;" \
        "then: git log --notes=reduce -1 $short"
    # A drain that holds the lock reads the queue again before it ends: it takes this one.
    if command -v flock >/dev/null 2>&1 &&
        ! flock -n "$common/gitreduce/queue.lock" true 2>/dev/null; then
        return 0
    fi
    unset GIT_INDEX_FILE # git commit's index may be a temporary one, gone by then
    # Fully detached: own session, no terminal, no pipe to git. git returns at once.
    if command -v setsid >/dev/null 2>&1; then
        setsid "$exe" triage --queue </dev/null >>"$log" 2>&1 &
    else
        nohup "$exe" triage --queue </dev/null >>"$log" 2>&1 &
    fi
}

launch
exit 0
"""

TEMPLATES = {"post-commit": POST_COMMIT}


def git_reduce_executable() -> str | None:
    """The absolute path of this installation's `git-reduce` console script, if found.

    The script next to the running interpreter (a virtualenv's bin/) first,
    then the one this process was started as, then PATH's.
    """
    candidates = [
        Path(sys.executable).parent / "git-reduce",
        Path(sys.argv[0]) if Path(sys.argv[0]).name == "git-reduce" else None,
    ]
    for candidate in candidates:
        if candidate is not None and candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate.absolute())
    found = shutil.which("git-reduce")
    return str(Path(found).absolute()) if found else None


def render(name: str, executable: str | None) -> str:
    """The hook's text with `executable` recorded as the git-reduce to run."""
    text = TEMPLATES[name]
    if executable:
        text = text.replace(_EXECUTABLE_LINE, f"GITREDUCE_EXE={shlex.quote(executable)}", 1)
    return text


def _repository(repo_path: Path | str) -> pygit2.Repository:
    found = pygit2.discover_repository(str(Path(repo_path).absolute()))
    if found is None:
        raise UserError(f"{repo_path} is not in a git repository; run this inside one")
    return pygit2.Repository(found)


def hooks_dir(repo: pygit2.Repository) -> Path:
    """Where git looks for this repository's hooks.

    `core.hooksPath` if set: `~` expanded, and a relative one taken from the
    root of the work tree (from the git directory in a bare repository), where
    git runs its hooks. Otherwise `hooks/` in the common git directory (shared
    by linked worktrees).
    """
    try:
        configured = repo.config["core.hooksPath"]
    except KeyError:
        configured = None
    if configured:
        path = Path(os.path.expanduser(str(configured)))
        if not path.is_absolute():
            path = Path(repo.workdir or repo.path) / path
        return path
    return common_dir(repo) / "hooks"


def is_ours(path: Path) -> bool:
    try:
        head = path.read_text(errors="replace")[:512]
    except OSError:
        return False
    return MARKER in head


def _write_executable(path: Path, text: str) -> None:
    """Replace `path` by rename, so git never runs a half-written hook."""
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "w") as file:
            file.write(text)
        os.chmod(temporary, 0o755)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _backup_name(path: Path) -> Path:
    backup = path.with_name(path.name + BACKUP_SUFFIX)
    number = 1
    while backup.exists() or backup.is_symlink():
        backup = path.with_name(f"{path.name}{BACKUP_SUFFIX}.{number}")
        number += 1
    return backup


def install(
    repo_path: Path | str = ".", force: bool = False, executable: str | None = None
) -> list[str]:
    """Install the hooks into the repository at (or above) `repo_path`; what was done, per hook.

    `executable` is the git-reduce the hooks run (default: this installation's).
    An existing hook that is not ours is refused unless `force`, then kept as
    `<hook>.pre-gitreduce`.
    """
    repo = _repository(repo_path)
    directory = hooks_dir(repo)
    executable = executable or git_reduce_executable()
    if executable is None:
        raise UserError("cannot find the git-reduce executable to record in the hook")
    foreign = [
        directory / name
        for name in TEMPLATES
        if ((directory / name).exists() or (directory / name).is_symlink())
        and not is_ours(directory / name)
    ]
    if foreign and not force:
        names = ", ".join(str(path) for path in foreign)
        raise UserError(
            f"{names} exists and was not installed by git reduce; rerun with --force to "
            f"replace it (it is kept as {foreign[0].name}{BACKUP_SUFFIX})"
        )
    try:
        directory.mkdir(parents=True, exist_ok=True)
        done = []
        for name in TEMPLATES:
            path = directory / name
            note = ""
            if path in foreign:
                backup = _backup_name(path)
                path.rename(backup)
                note = f"; the previous hook is kept as {backup.name}"
            _write_executable(path, render(name, executable))
            done.append(f"installed {path} (runs {executable}){note}")
        done.append(
            "notes appear in git log --notes=reduce; in every git log after: "
            "git config --add notes.displayRef refs/notes/reduce"
        )
    except OSError as error:
        raise UserError(f"cannot install into {directory}: {error.strerror or error}") from None
    return done


def uninstall(repo_path: Path | str = ".") -> list[str]:
    """Remove our hooks (and put back what `install --force` set aside); what was done."""
    repo = _repository(repo_path)
    directory = hooks_dir(repo)
    done = []
    try:
        for name in TEMPLATES:
            path = directory / name
            if not (path.exists() or path.is_symlink()):
                done.append(f"no {name} hook in {directory}")
                continue
            if not is_ours(path):
                raise UserError(f"{path} was not installed by git reduce; leaving it alone")
            path.unlink()
            backup = path.with_name(name + BACKUP_SUFFIX)
            if backup.exists() or backup.is_symlink():
                backup.rename(path)
                done.append(f"removed {path}; restored the previous hook from {backup.name}")
            else:
                done.append(f"removed {path}")
    except OSError as error:
        raise UserError(f"cannot uninstall from {directory}: {error.strerror or error}") from None
    return done
