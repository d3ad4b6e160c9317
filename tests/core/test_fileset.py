"""File sets as candidates: the packing every layer passes around, and one file of a set
reduced with the rest fixed."""

from __future__ import annotations

import pytest
from support import make_engine

from gitreduce.core import fileset
from gitreduce.core.current import Current


def test_a_set_packs_the_same_whatever_order_it_was_read_in_and_unpacks_back() -> None:
    files = {"b/x.c": b"int x;\n", "a.h": b"", "main.c": b"int main(void) {}\n\0bin"}
    packed = fileset.pack(files)
    assert packed == fileset.pack(dict(reversed(list(files.items()))))
    assert fileset.unpack(packed) == files
    assert list(fileset.unpack(packed)) == ["a.h", "b/x.c", "main.c"]
    assert fileset.unpack(fileset.pack({})) == {}


@pytest.mark.parametrize("path", ["", "/etc/passwd", "../up.c", "a/../b.c", "./a.c", "a\nb"])
def test_only_plain_relative_paths_are_members(path: str) -> None:
    assert fileset.check_path(path) is not None
    with pytest.raises(ValueError):
        fileset.pack({path: b"x"})


@pytest.mark.parametrize(
    "data", [b"int x;\n", fileset.HEADER + b"9 a.c\nshort", fileset.HEADER + b"x a.c\n"]
)
def test_anything_but_a_packed_set_is_refused(data: bytes) -> None:
    with pytest.raises(ValueError):
        fileset.unpack(data)


def test_a_member_is_judged_as_the_whole_set_and_stays_a_plain_text() -> None:
    others = {"main.c": b"use(needle);\n"}

    def place(text: bytes) -> bytes:
        return fileset.pack({**others, "lib.c": text})

    tested: list[bytes] = []
    engine = make_engine(
        lambda packed: b"needle" in fileset.unpack(packed)["lib.c"], jobs=2, tested=tested
    )
    current = Current(b"one\nneedle\nthree\n", engine, None, place=place)
    assert current.try_candidates([b"one\n", b"needle\n", b"three\n"]) == 1
    assert current.text == b"needle\n"
    assert tested and all(fileset.unpack(packed)["main.c"] == others["main.c"] for packed in tested)
