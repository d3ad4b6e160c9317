"""A candidate's cache key: the git object id it has, computed as git computes it.

One file's candidate is keyed by its blob id (`git hash-object`), a file
set's by the id of the tree holding its files (`git write-tree` of an index
holding them, `git mktree`): every member a blob of mode 100644 at its
relative path, directories as subtrees. So a key names the same object in
git as in the cache, and the verdict cache can keep each candidate reachable
under its key: `git cat-file -p KEY` shows a file's candidate, `git ls-tree
-r KEY` a set's files. The same set has the same key whatever order it was
read in, and a set and a file never share one.

Every key is computed by `candidate_key`, in the engine's hot path (twice
per candidate, before and after its test): for a single file it costs one
prefix comparison more than the blob id; for a set it parses the packed
bytes once and hashes each member (measured in docs/cache.md).
Nothing here writes objects: the git layer writes the same trees
(`gitreduce.git.cache_format.write_candidate`).
"""

from __future__ import annotations

import hashlib
from typing import Union

from gitreduce.core.fileset import HEADER

BLOB_MODE = b"100644"
TREE_MODE = b"40000"  # as git writes it in a tree object: no leading zero

# A set as git holds it: each name of a directory to a member's content, or to the
# directory below it.
Tree = dict[str, Union[memoryview, "Tree"]]


def blob_id(content: bytes | memoryview) -> str:
    """The git blob id of `content` (what `git hash-object` prints)."""
    digest = hashlib.sha1(b"blob %d\0" % len(content))
    digest.update(content)
    return digest.hexdigest()


def candidate_key(content: bytes) -> str:
    """The cache key of a candidate: its tree id when `content` is a packed file set
    (`core/fileset.pack`), its blob id otherwise."""
    tree = set_tree(content)
    if tree is None:
        return blob_id(content)
    return tree_digest(tree).hex()


def tree_digest(tree: Tree) -> bytes:
    """The raw git id of `tree`, subtrees included, as `git mktree` would write it."""
    entries: list[tuple[bytes, bytes]] = []
    for name, entry in tree.items():
        encoded = name.encode()
        if isinstance(entry, dict):
            record = TREE_MODE + b" " + encoded + b"\0" + tree_digest(entry)
            entries.append((encoded + b"/", record))
        else:
            digest = hashlib.sha1(b"blob %d\0" % len(entry))
            digest.update(entry)
            entries.append((encoded, BLOB_MODE + b" " + encoded + b"\0" + digest.digest()))
    entries.sort()  # git's order: a directory sorts as its name followed by "/"
    body = b"".join(record for _, record in entries)
    return hashlib.sha1(b"tree %d\0" % len(body) + body).digest()


def set_tree(content: bytes) -> Tree | None:
    """The files of `content` as a tree, when `content` is exactly what `fileset.pack` makes
    of a set git can hold as a tree; None for anything else (one file's text).

    Exactly: entries in pack's order, sizes written as pack writes them, plain
    relative paths, and no path both a file and a directory. A text that only
    looks like a packed set is then keyed by its blob id, so no two contents
    ever share a key.
    """
    if not content.startswith(HEADER):
        return None
    view = memoryview(content)
    root: Tree = {}
    previous = ""
    at = len(HEADER)
    end_of_data = len(content)
    while at < end_of_data:
        end = content.find(b"\n", at)
        if end < 0:
            return None
        size, space, name = content[at:end].partition(b" ")
        if not space or not size.isdigit() or (size[:1] == b"0" and size != b"0"):
            return None
        start = end + 1
        stop = start + int(size)
        try:
            path = name.decode()
        except UnicodeDecodeError:
            return None
        if stop > end_of_data or path <= previous or not _place(root, path, view[start:stop]):
            return None
        previous = path
        at = stop
    return root


def _place(root: Tree, path: str, content: memoryview) -> bool:
    """Put `content` at `path` under `root`; False when `path` is no plain relative path, or
    a file and a directory would share a name."""
    if "\0" in path or "\n" in path:
        return False
    *directories, name = path.split("/")
    node = root
    for part in directories:
        if part in ("", ".", ".."):
            return False
        below = node.setdefault(part, {})
        if not isinstance(below, dict):
            return False
        node = below
    if name in ("", ".", "..") or name in node:
        return False
    node[name] = content
    return True
