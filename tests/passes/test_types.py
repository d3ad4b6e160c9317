"""Type names replaced: an alias inlined at its uses (the alias goes), or a type the file
does not define made the language's plain integer type."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from support import current_for, parses_cleanly

from gitreduce.passes.types import replace_types, type_candidates


def candidates(text: bytes, language: str) -> list[bytes]:
    current = current_for(text, language)
    try:
        return [candidate for _, candidate in type_candidates(current, frozenset())]
    finally:
        current.engine.close()


def test_a_c_typedef_is_inlined_at_every_use_and_goes():
    text = b"typedef unsigned long wide;\nwide a;\nint f(wide b) { return b > a; }\n"
    assert b"unsigned long a;\nint f(unsigned long b) { return b > a; }\n" in candidates(text, "c")


def test_a_cpp_using_alias_and_a_rust_type_alias_are_inlined():
    cpp = b"using Count = long;\nCount total(Count a) { return a; }\n"
    assert b"long total(long a) { return a; }\n" in candidates(cpp, "cpp")
    rust = b"type Small = u8;\nfn f(x: Small) -> Small { x }\n"
    assert b"fn f(x: u8) -> u8 { x }\n" in candidates(rust, "rust")


def test_a_generic_alias_and_a_function_pointer_typedef_are_left_alone():
    rust = b"type Pair<T> = (T, T);\nfn f(x: Pair<u8>) {}\n"
    assert not any(b"Pair" not in candidate for candidate in candidates(rust, "rust"))
    c = b"typedef int (*callback)(int);\ncallback handler;\n"
    assert not any(b"typedef" not in candidate for candidate in candidates(c, "c"))


def test_a_type_from_a_header_becomes_int_everywhere_but_struct_tags_stay():
    text = (
        b"#include <stdint.h>\nstruct s { int8_t x; };\nstruct s v;\n"
        b"int8_t g(int8_t y) { return y; }\n"
    )
    found = candidates(text, "c")
    plain = b"#include <stdint.h>\nstruct s { int x; };\nstruct s v;\nint g(int y) { return y; }\n"
    assert plain in found
    assert all(b"struct int" not in candidate for candidate in found)
    assert all(parses_cleanly("c", candidate) for candidate in found)


def test_only_smaller_candidates_are_offered():
    """`T` is shorter than `int`; inlining an alias used many times may grow the text."""
    text = b"typedef struct { int a; int b; } pair;\npair x, y, z, w, v, u, t;\n"
    for candidate in candidates(text, "c"):
        assert len(candidate) < len(text)
    assert candidates(b"T x;\nT y;\n", "c") == []


GCC = shutil.which("gcc")


@pytest.mark.skipif(GCC is None, reason="no C compiler")  # the machine's image ships gcc
def test_with_gcc_the_header_goes_once_its_type_is_plain(tmp_path: Path):
    """The warning the test looks for survives `int8_t` becoming `int`; the pass takes it,
    and the include is then no longer needed (what a later tree round deletes)."""
    source = tmp_path / "t.c"

    def warns(text: bytes) -> bool:
        source.write_bytes(text)
        process = subprocess.run(
            [GCC or "gcc", "-fsyntax-only", "-Wsequence-point", str(source)],
            capture_output=True,
            text=True,
        )
        return process.returncode == 0 and "may be undefined" in process.stderr

    text = b"#include <stdint.h>\nint8_t g;\nvoid f(void) { g = g--; }\n"
    assert warns(text)
    current = current_for(text, "c", warns)
    try:
        assert replace_types(current)
        assert b"int8_t" not in current.text and warns(current.text)
        assert warns(current.text.replace(b"#include <stdint.h>\n", b""))
    finally:
        current.engine.close()
