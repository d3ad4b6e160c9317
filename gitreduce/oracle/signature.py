"""Failure signatures: the one output line that says *how* a test failed.

A reducer that only asks "did it fail?" slips: it happily shrinks a compiler
crash into a syntax error. Comparing a normalised error line of every candidate
with the original's keeps the reduction on the same bug. Normalisation removes
what varies between runs of the same bug (the candidate's own line numbers,
addresses, pids, temp paths) and keeps what tells bugs apart (the compiler's
internal source location, the message).
"""

import re

# Part of the verdict cache key: a cached signature computed by other rules
# would never match a freshly computed one.
SIGNATURE_VERSION = 1

# (rank, pattern): a line's kind is its lowest-ranked match. Rank 0 lines name
# a bug in the tool itself, rank 1 a crash or an uncaught exception, rank 2 a
# fatal diagnostic, rank 3 an ordinary error, which is the least specific
# because a shrinking program produces new ones all the time.
_KINDS: tuple[tuple[int, re.Pattern[str]], ...] = (
    (0, re.compile(r"internal compiler error", re.IGNORECASE)),
    (0, re.compile(r"\bpanicked at\b|^panic: ")),
    (0, re.compile(r"\bassertion\b.*\bfailed\b|\bassertion failed\b", re.IGNORECASE)),
    (0, re.compile(r"\w*Sanitizer\b|\bruntime error: ")),
    (0, re.compile(r"\bLLVM ERROR:")),
    (
        1,
        re.compile(
            r"\bsegmentation fault\b|\bSIGSEGV\b|\bAborted\b|\bBus error\b"
            r"|\bIllegal instruction\b|\bFloating point exception\b|\bcore dumped\b"
            r"|\bstack overflow\b|\boverflowed its stack\b",
            re.IGNORECASE,
        ),
    ),
    (
        1,
        re.compile(
            r"^(?:[A-Za-z_][\w]*\.)*[A-Za-z_]*(?:Error|Exception)\b(?::\s|$)"
            r"|^Exception in thread\b"
        ),
    ),
    (2, re.compile(r"\bfatal(?: error)?:", re.IGNORECASE)),
    (3, re.compile(r"\berror(?:\[\w+\])?:", re.IGNORECASE)),
)
_EXCEPTION_RANK = 1  # the line a Python traceback ends with

_TRACEBACK = "Traceback (most recent call last):"
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_SANITIZER_PID = re.compile(r"^==\d+==\s*")
# `file:line:` or `file:line:col:` at the start of a diagnostic points into the
# candidate, which moves as it shrinks.
_LOCATION = re.compile(r"^(?:[A-Za-z]:)?[^\s:]+:\d+(?::\d+)?:\s*")
_THREAD_ID = re.compile(r"(thread '[^']*') \(\d+\)")
_HEX = re.compile(r"\b0x[0-9a-fA-F]+\b")
_TEMP_PATH = re.compile(
    r"(?<![\w.])(?:/private)?/(?:tmp|var/tmp|var/folders|dev/shm)/[^\s:'\"`),;\]]*"
)


def extract_signature(output: str, *, candidate: str | None = None) -> str | None:
    """The normalised most specific error line of `output`, or None if nothing looks like one.

    Among lines of the most specific kind the first wins: later errors are
    usually consequences of the first. `candidate` is the file name of the
    program under test; its line numbers are masked wherever they appear
    (e.g. in a panic or an assertion of the program itself), because they
    change with every reduction step while the bug stays the same.
    """
    best_rank = len(_KINDS)
    best: str | None = None
    in_traceback = False
    for raw in output.splitlines():
        line = _ANSI.sub("", raw).rstrip()
        if line.startswith(_TRACEBACK):
            in_traceback = True
            continue
        if in_traceback:
            # Frames quote source code, which may say anything; the first
            # unindented line is the exception that ended the program.
            if not line or line[0].isspace():
                continue
            in_traceback = False
            rank = min(_rank(line), _EXCEPTION_RANK)
        else:
            rank = _rank(line)
        if rank < best_rank:
            best_rank, best = rank, line
            if rank == 0:
                break
    return None if best is None else _normalise(best, candidate)


def signature_matches(expected: str | None, actual: str | None) -> bool:
    """Whether a candidate failed the same way as the original.

    An original without a signature imposes nothing, so everything matches it.
    """
    return expected is None or expected == actual


def _rank(line: str) -> int:
    return min((rank for rank, pattern in _KINDS if pattern.search(line)), default=len(_KINDS))


def _normalise(line: str, candidate: str | None) -> str:
    line = _SANITIZER_PID.sub("", line.strip())
    line = _LOCATION.sub("", line)
    if candidate:
        name = re.escape(candidate.rsplit("/", 1)[-1])
        line = re.sub(rf"((?<![\w.-]){name}):\d+(?::\d+)?", r"\1:<line>", line)
    line = _THREAD_ID.sub(r"\1", line)
    line = _HEX.sub("0x<hex>", line)
    line = _TEMP_PATH.sub("<tmp>", line)
    return " ".join(line.split())
