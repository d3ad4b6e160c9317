"""Identifier replacement across the files of a set: a name a header declares, one file
defines and another uses, gone from all three in one candidate."""

from __future__ import annotations

import re
from collections.abc import Mapping

from support import make_engine, parses_cleanly

from gitreduce.core import fileset
from gitreduce.core.pass_runner import run_pass
from gitreduce.lang import grammars
from gitreduce.lang.syntax import Syntax
from gitreduce.passes.across import ACROSS, SetProgram, replacement_plan

HEADER = b"int hello(void);\nint world(void);\nextern int shared;\n"
DEFINITIONS = b"""#include <stdio.h>
#include "util.h"

int shared = 2;

int hello(void) { return puts("hello"); }

int world(void) { return puts("world"); }
"""
MAIN = b"""#include <stdio.h>
#include "util.h"

int main(void) {
  int local = shared;
  hello();
  world();
  return puts("done") + local;
}
"""
SET = {"util.h": HEADER, "a.c": DEFINITIONS, "b.c": MAIN, "notes.txt": b"world hello\n"}


def words(text: bytes) -> set[bytes]:
    return set(re.findall(rb"\w+", text))


def program_of(files: Mapping[str, bytes], predicate=lambda packed: True) -> SetProgram:
    syntaxes = {}
    for path in files:
        language = grammars.detect(path)
        grammar = grammars.load(language) if language else None
        if grammar is not None:
            syntaxes[path] = Syntax(grammar, files[path])
    return SetProgram(files, syntaxes, make_engine(predicate, jobs=1))


def plan(files: Mapping[str, bytes]) -> list[tuple[bytes, dict[str, bytes]]]:
    program = program_of(files)
    try:
        return replacement_plan(program)
    finally:
        program.engine.close()


def test_a_name_goes_from_every_file_at_once_its_uses_renamed():
    by_name: dict[bytes, list[dict[str, bytes]]] = {}
    for name, candidate in plan(SET):
        by_name.setdefault(name, []).append(candidate)
    without_world = [c for c in by_name[b"world"] if b"hello();\n  hello();" in c["b.c"]]
    assert without_world
    candidate = without_world[0]
    assert candidate["util.h"] == b"int hello(void);\nextern int shared;\n"
    assert b"world" not in words(candidate["a.c"]) and b"hello" in words(candidate["a.c"])
    assert candidate["notes.txt"] == SET["notes.txt"]  # no grammar: never edited
    for path in ("util.h", "a.c", "b.c"):
        assert parses_cleanly("c", candidate[path])


def test_stand_ins_are_of_the_same_kind_and_in_scope_in_each_file():
    for name, candidate in plan(SET):
        assert name in {b"hello", b"world", b"shared"}  # what some file declares
        # a function stands in for a function; `local` is main's own, seen nowhere else
        assert b"local" not in words(candidate["util.h"] + candidate["a.c"])
        if name == b"shared":  # a variable, for a variable
            assert re.search(rb"int local = (hello|world|main|puts);", candidate["b.c"]) is None


def test_a_variable_declared_in_one_file_and_read_in_another_may_become_zero_everywhere():
    literal = [c for name, c in plan(SET) if name == b"shared" and b"int local = 0;" in c["b.c"]]
    assert len(literal) == 1
    candidate = literal[0]
    assert b"shared" not in words(b"".join(candidate[path] for path in ("util.h", "a.c", "b.c")))
    for path in ("util.h", "a.c", "b.c"):
        assert parses_cleanly("c", candidate[path])


def test_a_name_no_file_declares_is_left_alone():
    names = {name for name, _ in plan(SET)}
    assert b"puts" not in names and b"main" not in names


def test_the_pass_takes_what_the_test_accepts_and_counts_its_tests_under_its_name():
    def still_says_hello_twice(packed: bytes) -> bool:
        files = fileset.unpack(packed)
        calls = re.findall(rb"(\w+)\(\);", files["b.c"])
        return len(calls) == 2 and all(call in words(files["a.c"]) for call in calls)

    program = program_of(SET, still_says_hello_twice)
    cross = next(declared for declared in ACROSS if declared.name == "cross-identifiers")
    try:
        assert run_pass(cross, program, program)
    finally:
        program.engine.close()
    sources = b"".join(program.files[path] for path in ("util.h", "a.c", "b.c"))
    assert len({b"hello", b"world"} & words(sources)) == 1  # one function does for both
    assert fileset.pack(program.files) == program.packed
    assert program.engine.stats.of_pass("cross-identifiers").successes >= 1
    assert program.engine.stats.by_pass["cross-identifiers"] >= 1


def consistent(packed: bytes) -> bool:
    """A knot no single file can untie: every function the header declares is defined in
    `a.c` and called in `b.c`, and `hello` stays."""
    files = fileset.unpack(packed)
    declared = set(re.findall(rb"int (\w+)\(void\);", files["util.h"]))
    defined = set(re.findall(rb"int (\w+)\(void\) \{", files["a.c"]))
    called = set(re.findall(rb"(\w+)\(\);", files["b.c"]))
    return b"hello" in declared and declared == defined == called


def test_a_name_goes_with_every_unit_that_mentions_it_in_every_file_at_once():
    program = program_of(SET, consistent)
    try:
        assert consistent(program.packed)
        cross_names = next(declared for declared in ACROSS if declared.name == "cross-names")
        assert run_pass(cross_names, program, program)
    finally:
        program.engine.close()
    files = program.files
    assert all(b"world" not in files[path] for path in ("util.h", "a.c", "b.c"))
    assert b"hello();" in files["b.c"] and b"int hello(void);" in files["util.h"]
    assert files["notes.txt"] == SET["notes.txt"]
    for path in ("util.h", "a.c", "b.c"):
        assert parses_cleanly("c", files[path])
