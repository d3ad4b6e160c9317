"""Writing blobs straight into a pack: the candidates of one checkpoint as two files, not one each.

Why: a loose object is a file created in `objects/xx/` (and removed again
once packed), and on the disks measured here that costs 0.2-1 ms of kernel
time per candidate, in the cache's thread, beside two tests on two cores:
on toy-gcc-pattern at two jobs the cache's thread spent more processor time
than the oracle's. A pack of all the candidates a checkpoint commits is one
`.pack` and one `.idx`, whatever their number; `CacheLog.pack` later folds
these small packs into one delta-compressed pack and deletes them.

The formats are git's (Documentation/gitformat-pack.txt): a version-2 pack
of undeltified blobs, each zlib-compressed, and its version-2 index. The
index is written first, under a temporary name; the pack is renamed into
place, then the index: readers (git, libgit2) look for packs by their
index, so they never see a pack without its index or an index without its
pack. Objects above 2 GiB of pack offsets are left to loose objects (the
caller's fallback): this writer uses 31-bit offsets only.
"""

from __future__ import annotations

import hashlib
import os
import struct
import tempfile
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

_BLOB = 3  # the pack's object type of a blob
_LARGEST_OFFSET = (1 << 31) - 1
# zlib's fastest level: the pack is short-lived, `CacheLog.pack` recompresses it with deltas
_LEVEL = 1


@dataclass(frozen=True)
class WrittenPack:
    """A pack written by `write_blobs`: its `.pack` path (the `.idx` beside it), and the id and
    size of each blob in it, in the order given (a repeated blob once)."""

    path: Path
    blobs: list[tuple[str, int]]

    @property
    def index(self) -> Path:
        return self.path.with_suffix(".idx")


class PackTooLarge(ValueError):
    """The blobs would need pack offsets of 2 GiB or more."""


def blob_header(size: int) -> bytes:
    """An object's header in a pack: its type and size, seven bits a byte, least first."""
    first = (_BLOB << 4) | (size & 0x0F)
    size >>= 4
    header = bytearray()
    while size:
        header.append(first | 0x80)
        first = size & 0x7F
        size >>= 7
    header.append(first)
    return bytes(header)


def write_blobs(objects: Path, contents: Sequence[bytes]) -> WrittenPack | None:
    """Write `contents` as blobs into a new pack under `objects/pack`; None when there are
    none. Raises `PackTooLarge` (nothing written) past 31-bit offsets, `OSError` as the
    disk does."""
    entries: dict[bytes, tuple[int, int, int]] = {}  # binary id -> (offset, crc, size)
    body: list[bytes] = [b"PACK", b""]
    offset = 12
    for content in contents:
        size = len(content)
        digest = hashlib.sha1(b"blob %d\0" % size)
        digest.update(content)
        binary = digest.digest()
        if binary in entries:
            continue
        if offset > _LARGEST_OFFSET:
            raise PackTooLarge(f"{offset} bytes of blobs do not fit 31-bit pack offsets")
        packed = blob_header(size) + zlib.compress(content, _LEVEL)
        entries[binary] = (offset, zlib.crc32(packed), size)
        body.append(packed)
        offset += len(packed)
    if not entries:
        return None
    body[1] = struct.pack(">II", 2, len(entries))
    checksum = hashlib.sha1()
    for part in body:
        checksum.update(part)
    pack_sum = checksum.digest()
    index = _index(entries, pack_sum)
    directory = objects / "pack"
    directory.mkdir(exist_ok=True)
    stem = directory / f"pack-{pack_sum.hex()}"
    pack_path, index_path = stem.with_suffix(".pack"), stem.with_suffix(".idx")
    blobs = [(binary.hex(), size) for binary, (_, _, size) in entries.items()]
    if index_path.exists():  # named by its checksum: the same blobs, in the same order
        return WrittenPack(pack_path, blobs)
    index_temporary = _temporary(directory, [index])
    try:
        pack_temporary = _temporary(directory, [*body, pack_sum])
        try:
            os.replace(pack_temporary, pack_path)
        except BaseException:
            Path(pack_temporary).unlink(missing_ok=True)
            raise
        try:
            os.replace(index_temporary, index_path)
        except BaseException:
            pack_path.unlink(missing_ok=True)  # no reader finds a pack without its index
            raise
    except BaseException:
        Path(index_temporary).unlink(missing_ok=True)
        raise
    return WrittenPack(pack_path, blobs)


def _index(entries: dict[bytes, tuple[int, int, int]], pack_sum: bytes) -> bytes:
    """The version-2 index of a pack holding `entries` (binary id -> offset, crc, size)."""
    names = sorted(entries)
    fanout = [0] * 256
    for name in names:
        fanout[name[0]] += 1
    running = 0
    for byte in range(256):
        running += fanout[byte]
        fanout[byte] = running
    parts = [
        b"\377tOc",
        struct.pack(">I", 2),
        struct.pack(">256I", *fanout),
        b"".join(names),
        struct.pack(f">{len(names)}I", *(entries[name][1] for name in names)),
        struct.pack(f">{len(names)}I", *(entries[name][0] for name in names)),
        pack_sum,
    ]
    content = b"".join(parts)
    return content + hashlib.sha1(content).digest()


def _temporary(directory: Path, parts: Sequence[bytes]) -> str:
    """A new read-only file in `directory` holding `parts`, under a name git ignores
    (`tmp_pack_*`, which `git gc` removes when a writer dies before renaming it)."""
    descriptor, name = tempfile.mkstemp(prefix="tmp_pack_", dir=directory)
    try:
        with os.fdopen(descriptor, "wb") as file:
            for part in parts:
                file.write(part)
        os.chmod(name, 0o444)
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise
    return name


def delete(pack: Path) -> None:
    """Remove a pack this process wrote and has since copied into another: its index first,
    so that no reader finds an index whose pack is gone."""
    pack.with_suffix(".idx").unlink(missing_ok=True)
    pack.unlink(missing_ok=True)
