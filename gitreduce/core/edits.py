"""Edits as data: every candidate is the current text plus a few byte-range replacements.

Describing candidates as edits (rather than as new trees) lets one routine
render any subset of them, keeps candidates cheap to build, and tells the
caller exactly which region changed so pending work elsewhere can be shifted.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class Edit:
    """Replace text[start:end] by `replacement`."""

    start: int
    end: int
    replacement: bytes = b""


def _is_word_byte(byte: int) -> bool:
    return byte == 0x5F or 0x30 <= byte <= 0x39 or 0x41 <= byte <= 0x5A or 0x61 <= byte <= 0x7A


class Rendered(bytes):
    """A candidate text that remembers how it was made: `edits` applied to `base`.

    Pairwise reduction runs the single-program passes on the seed and must
    carry each candidate's change over to the variant; knowing the edits makes
    that exact and cheap, where re-diffing every candidate against its base would
    cost a Myers run per candidate and guess where repeated text was cut.
    """

    base: bytes
    edits: tuple[Edit, ...]
    # What was written where, in `base`'s offsets: `edits` as rendered, with the space a
    # deletion left between two words. The syntax check re-parses `base`'s tree there.
    splices: tuple[tuple[int, int, bytes], ...]
    # (name, new spelling) for each name the edits rename at every occurrence, so that a
    # second program carrying them renames its own occurrences too (`pair/seed_view.py`).
    renames: tuple[tuple[bytes, bytes], ...] = ()


def apply(
    text: bytes, edits: Iterable[Edit], renames: tuple[tuple[bytes, bytes], ...] = ()
) -> Rendered:
    """Render `edits` (non-overlapping; any order) onto `text`; `renames`: the names
    they respell everywhere (see `Rendered`).

    A deletion that would glue two words together (`int x` losing nothing but
    what stood between `int` and `x` without space) leaves one space instead,
    and a replacement that would glue to a word beside it (`feature(x)`'s
    brackets replaced by `y`) gets a space on that side: an edit never
    silently creates a new identifier.
    """
    ordered = sorted(edits)
    pieces: list[bytes] = []
    splices: list[tuple[int, int, bytes]] = []
    position = 0
    last_byte = -1
    for edit in ordered:
        if edit.start == edit.end and not edit.replacement:
            continue
        if edit.start < position:
            raise ValueError(f"overlapping edits at byte {edit.start}")
        kept = text[position : edit.start]
        if kept:
            pieces.append(kept)
            last_byte = kept[-1]
        replacement = edit.replacement
        if (
            not replacement
            and last_byte >= 0
            and edit.end < len(text)
            and _is_word_byte(last_byte)
            and _is_word_byte(text[edit.end])
        ):
            replacement = b" "
        if replacement:
            if last_byte >= 0 and _is_word_byte(last_byte) and _is_word_byte(replacement[0]):
                replacement = b" " + replacement
            if (
                edit.end < len(text)
                and _is_word_byte(replacement[-1])
                and _is_word_byte(text[edit.end])
            ):
                replacement += b" "
            pieces.append(replacement)
            last_byte = replacement[-1]
        splices.append((edit.start, edit.end, replacement))
        position = edit.end
    pieces.append(text[position:])
    rendered = Rendered(b"".join(pieces))
    rendered.base = text
    rendered.edits = tuple(ordered)
    rendered.splices = tuple(splices)
    rendered.renames = renames
    return rendered


def take_following_blanks(text: bytes, start: int, end: int) -> int:
    """The end of a deletion that opens a line's content, moved over the blanks after it.

    Deleting `static` from `    static int f` would leave `     int f`: one
    blank too many, an IndentationError in Python and noise in every result.
    """
    if text[text.rfind(b"\n", 0, start) + 1 : start].strip() or text[end - 1 : end] == b"\n":
        return end  # content before it on its line, or whole lines: the next line's indent stays
    while end < len(text) and text[end] in b" \t":
        end += 1
    return end


def widen_to_lines(text: bytes, start: int, end: int) -> tuple[int, int]:
    """Grow a deletion over the whole lines it occupies, so removed code leaves no blank lines.

    Only when nothing but white space shares those lines with the range.
    """
    line_start = text.rfind(b"\n", 0, start) + 1
    if text[line_start:start].strip():
        return start, end
    line_end = text.find(b"\n", end)
    line_end = len(text) if line_end < 0 else line_end + 1
    if text[end:line_end].strip():
        return start, end
    return line_start, line_end
