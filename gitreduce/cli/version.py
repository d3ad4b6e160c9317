"""`git reduce --version`: this package's version, then what a bug report needs beside it, one
line each: tree-sitter and each grammar package in use, pygit2 and its libgit2."""

from __future__ import annotations

import sys

import pygit2
import tree_sitter
import typer

from gitreduce.lang.grammars import OFFICIAL_WHEELS

FALLBACK_GRAMMARS = "tree-sitter-languages"


def _installed(distribution: str) -> str | None:
    # Imported here: importlib.metadata costs every run 19 ms of start, for `--version` alone.
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(distribution)
    except PackageNotFoundError:
        return None


def version_lines() -> list[str]:
    """`git reduce VERSION`, then one line per library: tree-sitter (with the newest grammar
    ABI it reads), each grammar wheel, the fallback bundle, pygit2 (with libgit2)."""
    from gitreduce import __version__

    lines = [f"git reduce {_installed('gitreduce') or __version__}"]
    lines.append(
        f"tree-sitter {_installed('tree-sitter') or '?'} (grammar ABI up to "
        f"{tree_sitter.LANGUAGE_VERSION})"
    )
    for module, _ in OFFICIAL_WHEELS.values():
        distribution = module.replace("_", "-")
        lines.append(f"{distribution} {_installed(distribution) or 'not installed'}")
    lines.append(f"{FALLBACK_GRAMMARS} {_installed(FALLBACK_GRAMMARS) or 'not installed'}")
    lines.append(f"pygit2 {pygit2.__version__} (libgit2 {pygit2.LIBGIT2_VERSION})")
    return lines


def print_versions(value: bool) -> None:
    """`--version`'s callback: the lines on stdout, then exit 0."""
    if not value:
        return
    sys.stdout.write("\n".join(version_lines()) + "\n")
    raise typer.Exit()
