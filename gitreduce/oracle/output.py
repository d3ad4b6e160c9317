"""A test's output as the oracle keeps it: the head and the tail, never the disk's worth.

The test writes its output into a file of its slot (see `runner._run_in` for
why a file and not a pipe), and only the first `HEAD_BYTES` and the last
`TAIL_BYTES` are ever read: a compiler's first diagnostics, a sanitizer's
report after a long program output. A candidate the test runs can loop
printing until the timeout, at a gigabyte a second or more, and two jobs do
so at once. So while a test runs, the middle of its output is given back to
the file system (a hole punched into the file, Linux's
`FALLOC_FL_PUNCH_HOLE`) whenever more than `SPILL_BYTES` of it take up
disk: the file keeps its size and the test its offset, the head and the tail
stay as written, and the disk holds at most a few slices' worth of it.
Where the file system cannot punch holes, the output grows as the test writes
it, as it did before.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Callable
from typing import IO

HEAD_BYTES = 64 * 1024
TAIL_BYTES = 16 * 1024
# Disk a running test's output may take before its middle is given back
SPILL_BYTES = 32 * 1024 * 1024
# How often a running test's output is looked at: rarely enough to cost nothing, often
# enough that a test writing flat out leaves no more than a gigabyte or so behind
TRIM_SECONDS = 0.25

_FALLOC_FL_KEEP_SIZE = 0x01
_FALLOC_FL_PUNCH_HOLE = 0x02
_BLOCK = 4096  # holes go whole blocks at a time; a partial block would be zeroed, not freed


def _fallocate() -> Callable[[int, int, int, int], int] | None:
    try:
        call = ctypes.CDLL(None, use_errno=True).fallocate
    except (OSError, AttributeError):  # no C library to ask, or one without fallocate
        return None
    call.argtypes = (ctypes.c_int, ctypes.c_int, ctypes.c_longlong, ctypes.c_longlong)
    call.restype = ctypes.c_int
    return call


_FALLOCATE = _fallocate()


def trim(out: IO[bytes]) -> None:
    """Give back the disk taken by the middle of a running test's output, once it is more
    than `SPILL_BYTES`; what `read` shows stays the same."""
    if _FALLOCATE is None:
        return
    status = os.fstat(out.fileno())
    if status.st_blocks * 512 <= HEAD_BYTES + TAIL_BYTES + SPILL_BYTES:
        return
    end = (status.st_size - TAIL_BYTES) // _BLOCK * _BLOCK
    if end > HEAD_BYTES:
        mode = _FALLOC_FL_PUNCH_HOLE | _FALLOC_FL_KEEP_SIZE
        _FALLOCATE(out.fileno(), mode, HEAD_BYTES, end - HEAD_BYTES)  # refused: left as is


def read(out: IO[bytes]) -> str:
    """The output a finished test wrote: whole, or its head and tail with a note of how
    much lies between them."""
    size = os.fstat(out.fileno()).st_size
    out.seek(0)
    if size <= HEAD_BYTES + TAIL_BYTES:
        data = out.read()
    else:
        head = out.read(HEAD_BYTES)
        head = head[: head.rfind(b"\n") + 1] or head
        out.seek(size - TAIL_BYTES)
        tail = out.read(TAIL_BYTES)
        tail = tail[tail.find(b"\n") + 1 :]
        omitted = size - len(head) - len(tail)
        data = head + f"[... {omitted} bytes omitted ...]\n".encode() + tail
    return data.decode("utf-8", "replace")
