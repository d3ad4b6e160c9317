"""The repository side: verdict cache, result branches and patches, revisions, bisect, hooks.

Job: everything gitreduce reads from or writes to a git repository, through
pygit2, under `refs/reduce/`, `refs/notes/reduce` and result branches; never
the user's working tree, index, HEAD or current branch.
May import: `gitreduce.oracle` (a test's fingerprint), `gitreduce.core`.
Never sessions, the CLI, typer or rich: the command-line fronts live in
`gitreduce.cli`.
"""
