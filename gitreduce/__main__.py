"""`python -m gitreduce`: the `git-reduce` command, for running it without its script on PATH
(a triage starts its reductions this way, with the interpreter it runs in)."""

from gitreduce.cli import main

main()
