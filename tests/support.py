"""Shared helpers: in-process reductions with plain predicates, tree-sitter queries, and
test scripts on disk."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import tree_sitter

from gitreduce.core.current import Current
from gitreduce.core.engine import Engine, Stats
from gitreduce.core.outcome import Outcome, Verdict
from gitreduce.lang import grammars
from gitreduce.lang.syntax import Syntax
from gitreduce.passes.schedule import reduce_program

Predicate = Callable[[bytes], bool]


@dataclass
class Reduction:
    """What one in-process reduction did."""

    text: bytes
    stats: Stats
    tested: list[bytes] = field(default_factory=list)
    accepted: list[bytes] = field(default_factory=list)
    passes: list[str] = field(default_factory=list)  # the pass that found each accepted text


def make_engine(predicate: Predicate, jobs: int, tested: list[bytes] | None = None) -> Engine:
    lock = threading.Lock()

    def run_test(text: bytes) -> Outcome:
        if tested is not None:
            with lock:
                tested.append(text)
        if predicate(text):
            return Outcome(Verdict.BAD, 1, 0.0, "exit 1")
        return Outcome(Verdict.GOOD, 0, 0.0)

    return Engine(run_test, lambda outcome: outcome.verdict is Verdict.BAD, jobs=jobs)


def reduce_text(
    text: bytes, language: str | None, predicate: Predicate, *, jobs: int = 1
) -> Reduction:
    """Run the whole single-program schedule on `text` (no grammar when `language` is None)."""
    assert predicate(text), "the original must be interesting"
    tested: list[bytes] = []
    accepted: list[bytes] = []
    passes: list[str] = []
    engine = make_engine(predicate, jobs, tested)
    grammar = grammars.load(language) if language else None
    if language:
        assert grammar is not None, language
    syntax = Syntax(grammar, text) if grammar else None

    def on_change(now: Current) -> None:
        accepted.append(now.text)
        passes.append(engine.pass_name)

    current = Current(text, engine, syntax, on_change)
    try:
        reduce_program(current)
    finally:
        engine.close()
    return Reduction(current.text, engine.stats, tested, accepted, passes)


def current_for(text: bytes, language: str, predicate: Predicate = lambda text: True) -> Current:
    grammar = grammars.load(language)
    assert grammar is not None
    return Current(text, make_engine(predicate, jobs=1), Syntax(grammar, text))


def parser(language: str) -> tree_sitter.Parser:
    grammar = grammars.load(language)
    assert grammar is not None
    return grammar.parser()


def parses_cleanly(language: str, text: bytes) -> bool:
    return not parser(language).parse(text).root_node.has_error


def nodes(language: str, text: bytes) -> list[tree_sitter.Node]:
    tree = parser(language).parse(text)
    found, pending = [], [tree.root_node]
    while pending:
        node = pending.pop()
        found.append(node)
        pending.extend(reversed(node.children))
    return found


CALL_KINDS = {"call_expression", "call"}


def calls(language: str, name: bytes) -> Predicate:
    """'parses without errors and contains a call of `name`'."""

    def predicate(text: bytes) -> bool:
        tree = parser(language).parse(text)
        if tree.root_node.has_error:
            return False
        pending = [tree.root_node]
        while pending:
            node = pending.pop()
            if node.type in CALL_KINDS:
                function = node.child_by_field_name("function")
                if function is not None and function.text == name:
                    return True
            pending.extend(node.children)
        return False

    return predicate


def script(path: Path, body: str, executable: bool = True) -> Path:
    """A shell script at `path` running `body`, executable unless told otherwise."""
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755 if executable else 0o644)
    return path
