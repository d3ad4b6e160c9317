"""A set of files as one candidate: the bytes the engine, the cache and the oracle pass around.

A multi-file reproduction (two translation units and a header, a package and
its `__main__`) is reduced as one candidate that is a whole file set. Packing
the set into one canonical byte string lets everything that already works on
a candidate's bytes work on sets unchanged: the engine's ordering and
parallelism, the verdict cache keyed on content (the same set always packs to
the same bytes, whatever order its files were read in), calibration,
re-verification and the Dask workers. Only the oracle looks inside, to write
the files at their relative paths in its scratch directory.

The format: the header line, then per file in path order a line
`<size> <path>` followed by exactly `<size>` bytes of content.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import PurePosixPath

HEADER = b"gitreduce file set 1\n"


def check_path(path: str) -> str | None:
    """Why `path` cannot name a member of a set (None when it can): a set lives inside
    one directory, so only plain relative paths below it are members."""
    parts = PurePosixPath(path).parts
    if not parts or PurePosixPath(path).is_absolute():
        return "not a relative path"
    if ".." in parts or "." in path.split("/"):
        return "not a plain path below the set's directory"
    if "\n" in path or "\0" in path:
        return "a newline or NUL in the name"
    if any(_names_git_directory(part) for part in parts):
        return "a .git directory (git's own files, which a test that runs git would obey)"
    try:
        path.encode()
    except UnicodeEncodeError:
        return "a name that is not UTF-8"
    return None


def _names_git_directory(name: str) -> bool:
    """`.git` as git itself refuses it in a tree: any case, trailing dots or spaces ignored
    (what case-insensitive and Windows file systems would open as `.git`)."""
    return name.rstrip(". ").lower() == ".git"


def pack(files: Mapping[str, bytes]) -> bytes:
    """The canonical bytes of the set `files` (relative POSIX path -> content)."""
    chunks = [HEADER]
    for path in sorted(files):
        problem = check_path(path)
        if problem is not None:
            raise ValueError(f"{path!r} cannot be in a file set: {problem}")
        content = files[path]
        chunks.append(b"%d %s\n" % (len(content), path.encode()))
        chunks.append(content)
    return b"".join(chunks)


def placer(files: Mapping[str, bytes], path: str) -> Callable[[bytes], bytes]:
    """`pack` of `files` with `path` holding the text given, as a function of that text.

    The reduction of one member tests thousands of candidates with every other
    member fixed: the entries before and after it are packed once, here, so
    placing a candidate is one join, whatever the set's size.
    """
    problem = check_path(path)
    if problem is not None:
        raise ValueError(f"{path!r} cannot be in a file set: {problem}")
    others = {name: content for name, content in files.items() if name != path}
    head = pack({name: content for name, content in others.items() if name < path})
    tail = pack({name: content for name, content in others.items() if name > path})
    tail = tail[len(HEADER) :]
    entry = b" %s\n" % path.encode()

    def place(text: bytes) -> bytes:
        return b"".join((head, b"%d" % len(text), entry, text, tail))

    return place


def unpack(data: bytes) -> dict[str, bytes]:
    """The set that `pack` made `data` from; ValueError for anything else."""
    if not data.startswith(HEADER):
        raise ValueError("not a packed file set")
    files: dict[str, bytes] = {}
    at = len(HEADER)
    while at < len(data):
        end = data.find(b"\n", at)
        size, space, name = data[at:end].partition(b" ")
        if end < 0 or not space or not size.isdigit():
            raise ValueError("a packed file set with a damaged entry")
        start = end + 1
        stop = start + int(size)
        if stop > len(data):
            raise ValueError("a packed file set cut short")
        files[name.decode()] = data[start:stop]
        at = stop
    return files
