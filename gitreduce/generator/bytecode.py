"""Recognising loops and guards from bytecode, once per code object.

The recorder sees frames at bytecode offsets; what a `for` loop spans
(FOR_ITER's range, and whether its header iterates a `range(...)`), where a
conditional jump right after a call guards a block, and where a generator
function suspends are read from the code object here, and cached. Which code
is the generator's (traced) rather than the standard library's or
gitreduce's own is decided here too.
"""

from __future__ import annotations

import dis
import linecache
import os
import random
import sysconfig
from bisect import bisect_right
from dataclasses import dataclass
from types import CodeType, FrameType

_GUARD_PASSTHROUGH = frozenset(
    {
        "LOAD_CONST",
        "LOAD_FAST",
        "LOAD_DEREF",
        "LOAD_GLOBAL",
        "LOAD_NAME",
        "LOAD_ATTR",
        "COMPARE_OP",
        "IS_OP",
        "CONTAINS_OP",
        "UNARY_NOT",
        "BINARY_OP",
        "COPY",
        "SWAP",
        "NOP",
        "EXTENDED_ARG",
        "TO_BOOL",
        "CACHE",
    }
)


@dataclass(frozen=True, slots=True)
class Guard:
    """A conditional jump right after a call, and the block it guards."""

    jump: int  # offset of the conditional jump
    low: int  # block: the offsets the guarded code occupies
    high: int


class CodeInfo:
    """What the bytecode of one function says about loops and guards, computed once."""

    __slots__ = ("_containing", "guards", "loops", "ranged", "starts", "yields")

    def __init__(self, code: CodeType) -> None:
        instructions = list(dis.get_instructions(code))
        self.starts = [instruction.offset for instruction in instructions]
        self.loops: list[tuple[int, int]] = []
        self.ranged: dict[int, bool] = {}  # loop start -> iterates a range(...)
        for index, instruction in enumerate(instructions):
            if instruction.opname == "FOR_ITER" and isinstance(instruction.argval, int):
                # A long loop's FOR_ITER carries EXTENDED_ARG prefixes, and the back jump
                # lands on the first of them: that is where an iteration ends.
                start = index
                while start > 0 and instructions[start - 1].opname == "EXTENDED_ARG":
                    start -= 1
                offset = instructions[start].offset
                self.loops.append((offset, instruction.argval))
                if code.co_name in _COMPREHENSIONS:
                    lines: set[int | None] = {
                        line for _, _, line in code.co_lines() if line is not None
                    }
                else:
                    header = [instruction]
                    if start > 0 and instructions[start - 1].opname == "GET_ITER":
                        header.append(instructions[start - 1])
                    lines = {i.positions.lineno for i in header if i.positions is not None}
                self.ranged[offset] = _iterates_range(code.co_filename, lines)
        self.loops.sort()
        self.yields = frozenset(i.offset for i in instructions if i.opname == "YIELD_VALUE")
        self.guards: dict[int, Guard] = {}
        for index, instruction in enumerate(instructions):
            if instruction.opname != "CALL":
                continue
            for follower_index in range(index + 1, min(index + 12, len(instructions))):
                follower = instructions[follower_index]
                if follower.opname in _GUARD_PASSTHROUGH:
                    continue
                if (
                    follower.opname.startswith("POP_JUMP")
                    and "IF" in follower.opname
                    and isinstance(follower.argval, int)
                ):
                    target = follower.argval
                    if target > follower.offset:
                        after = instructions[follower_index + 1].offset
                        self.guards[instruction.offset] = Guard(follower.offset, after, target)
                    else:
                        self.guards[instruction.offset] = Guard(
                            follower.offset, target, follower.offset
                        )
                break
        self._containing: dict[int, tuple[tuple[int, int], ...]] = {}

    def instruction_at(self, lasti: int) -> int:
        """The instruction an `f_lasti` falls in (a call leaves it on the CALL's inline cache)."""
        return self.starts[max(0, bisect_right(self.starts, lasti) - 1)]

    def loops_containing(self, offset: int) -> tuple[tuple[int, int], ...]:
        found = self._containing.get(offset)
        if found is None:
            found = tuple(loop for loop in self.loops if loop[0] < offset < loop[1])
            self._containing[offset] = found
        return found


def _iterates_range(filename: str, lines: set[int | None]) -> bool:
    """Whether a loop header reads `for ... in range(...)`: the paper's loop pattern.

    A loop over data whose length happens to equal an earlier decision would
    otherwise pass for a counted loop. Without source to look at, assume it.
    """
    texts = [linecache.getline(filename, line) for line in lines if line]
    if not any(texts):
        return True
    return any("range(" in text for text in texts)


_INFO: dict[CodeType, CodeInfo | None] = {}
_COMPREHENSIONS = frozenset({"<genexpr>", "<listcomp>", "<setcomp>", "<dictcomp>"})
_RANDOM_FILE = os.path.abspath(random.__file__ or "")
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_PATHS = sysconfig.get_paths()
_LIBRARY = tuple(
    {os.path.abspath(_PATHS[key]) + os.sep for key in ("stdlib", "platstdlib") if key in _PATHS}
)
_SITE = tuple(
    {os.path.abspath(_PATHS[key]) + os.sep for key in ("purelib", "platlib") if key in _PATHS}
)


def traced(code: CodeType) -> bool:
    """Generator code is traced; the standard library and gitreduce itself are not."""
    filename = code.co_filename
    if filename.startswith("<frozen"):
        return False
    path = os.path.abspath(filename)
    if path.startswith(_PACKAGE_DIR) or path == _RANDOM_FILE:
        return False
    return not (path.startswith(_LIBRARY) and not path.startswith(_SITE))


def code_info(code: CodeType) -> CodeInfo | None:
    """The analysis of generator code, None for code that is not traced."""
    try:
        return _INFO[code]
    except KeyError:
        info = CodeInfo(code) if traced(code) else None
        _INFO[code] = info
        return info


def call_offset(frame: FrameType) -> int:
    """The instruction a frame is at: the call it is making, for a decision's site."""
    info = _INFO.get(frame.f_code)
    if info is None:
        return frame.f_lasti
    return info.instruction_at(frame.f_lasti)
