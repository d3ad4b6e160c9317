"""Parsing candidates: the cheap syntax check before the expensive test, and token counts.

A token is a non-empty, non-comment leaf of the parse tree, the same rule the
benchmark's tokens.py uses, so the sizes we report are the sizes it measures.

The check (`Syntax.acceptable`) is asked about every candidate, and most
candidates are a known text with a few spans cut out. Re-parsing a
20,000-token file from scratch for each would cost a large part of a test, so
when the caller names the text a candidate was made from, the check parses
incrementally: the parent's own tree, edited where the candidate differs, lets
tree-sitter re-parse only around the change. Its verdict must be the one a full
parse gives, and an incrementally re-parsed tree is not always the tree a full
parse builds: where error recovery ran, the two can count different ERROR
nodes. So the incremental tree is asked only what both agree on (see
`Syntax._incremental`), and a candidate that leaves the answer open is parsed in full.
"""

from __future__ import annotations

import hashlib
import re
from bisect import bisect_left, bisect_right
from collections import OrderedDict, deque
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

import tree_sitter

from gitreduce.lang.grammars import Grammar
from gitreduce.lang.respan import Spans, respanned

_PLAIN_TOKEN = re.compile(rb"\w+|[^\w\s]")


def count_errors(node: tree_sitter.Node) -> int:
    """ERROR and MISSING nodes below `node`, visiting only subtrees that have any."""
    if not node.has_error:
        return 0
    return _errors_from(node)


def _errors_from(node: tree_sitter.Node) -> int:
    """`count_errors` of a node its parent's walk enters: whatever its own flag says.

    (A MISSING node is entered for being missing; and a node can have an
    error that no child list shows, such as a missing token of a directive:
    then it counts none.)
    """
    count = 0
    pending = [node]
    while pending:
        current = pending.pop()
        if current.is_error or current.is_missing:
            count += 1
        for child in current.children:
            if child.has_error or child.is_missing:
                pending.append(child)
    return count


def _item_errors(root: tree_sitter.Node, item: tree_sitter.Node) -> int:
    """What top-level `item` adds to `count_errors(root)`."""
    if root.has_error and (item.has_error or item.is_missing):
        return _errors_from(item)
    return 0


def empty_blocks(node: tree_sitter.Node) -> int:
    """`block` nodes with nothing in them below `node`."""
    count = 0
    cursor = node.walk()
    while True:
        current = cursor.node
        if current is not None and current.type == "block" and current.child_count == 0:
            count += 1
        if cursor.goto_first_child() or cursor.goto_next_sibling():
            continue
        while cursor.goto_parent():
            if cursor.goto_next_sibling():
                break
        else:
            return count


def leaves(tree: tree_sitter.Tree | tree_sitter.Node) -> list[tree_sitter.Node]:
    """Token leaves in text order (comments and zero-width nodes left out), of a whole
    tree or of one node."""
    result: list[tree_sitter.Node] = []
    cursor = tree.walk()
    while True:
        node = cursor.node
        if cursor.goto_first_child():
            continue
        if node is not None and node.end_byte > node.start_byte and "comment" not in node.type:
            result.append(node)
        while not cursor.goto_next_sibling():
            if not cursor.goto_parent():
                return result


@cache
def _comment_kinds(language: tree_sitter.Language) -> frozenset[int]:
    """The node kinds whose name says comment: what `leaves` leaves out, by number."""
    return frozenset(
        kind
        for kind in range(language.node_kind_count)
        if "comment" in (language.node_kind_for_id(kind) or "")
    )


def leaf_spans(tree: tree_sitter.Tree) -> tuple[list[int], list[int]]:
    """The start and end bytes of `leaves(tree)`, in two lists.

    What token counts and token lists need, on every candidate of a pair: a
    node object is made only for the leaves, and the comment test compares a
    kind number rather than building the kind's name: a fifth to a third less
    time than the spans read from `leaves` (2,500-token Rust and C files,
    1.6-2.2 ms against 2.0-2.8 ms, beside a 3-4-ms parse).
    """
    comments = _comment_kinds(tree.language)
    starts: list[int] = []
    ends: list[int] = []
    cursor = tree.walk()
    down, right, up = cursor.goto_first_child, cursor.goto_next_sibling, cursor.goto_parent
    while True:
        if down():
            continue
        node = cursor.node
        assert node is not None  # a cursor always stands on a node
        start, end = node.start_byte, node.end_byte
        if end > start and node.kind_id not in comments:
            starts.append(start)
            ends.append(end)
        while not right():
            if not up():
                return starts, ends


@dataclass
class Parsed:
    """A text with its tree and the start offsets of its tokens, for O(log n) token counts."""

    text: bytes
    tree: tree_sitter.Tree
    token_starts: list[int]
    token_ends: list[int]

    @property
    def tokens(self) -> int:
        return len(self.token_starts)

    def tokens_in(self, start: int, end: int) -> int:
        return bisect_left(self.token_starts, end) - bisect_left(self.token_starts, start)


# Grammars that parse a body with no statement in it as an empty `block` without an
# error, where the language itself rejects it (Python: "expected an indented block"):
# there an empty block counts as a syntax error, so no test is spent on one.
EMPTY_BLOCK_IS_ERROR = frozenset({"python"})

# Grammars stricter than the compilers of their language: gcc and clang take C's
# implicit `int` and K&R forms the grammar parses with errors. Only for these are
# candidates tried past the check (`passes/lenient.py`); elsewhere the check keeps
# a loose test (one that any failure satisfies) from taking text that does not parse.
STRICTER_THAN_COMPILERS = frozenset({"c", "cpp"})

Splice = tuple[int, int, bytes]
"""`parent[start:end]` replaced by the bytes: one difference of a candidate from its parent."""

# Parents whose trees are kept: the current text, the text a running ddmin renders from,
# the other program of a pair, and a few recent ones.
REMEMBERED_TREES = 8
# Trees of texts that passed the gate, kept for `Syntax.parse`: a batch's speculation
# reaches a few candidates past the one the engine takes.
PASSED_TREES = 8

# How `splices_between` finds where two texts agree again after a difference: this many
# bytes must match, and it gives up (one splice for the rest) after this many splices.
_PROBE = 32
_MAX_SPLICES = 64


class _Parent:
    """A text's full parse, kept so that candidates made from it re-parse incrementally."""

    __slots__ = ("_defects_before", "_line_starts", "_starts", "spans", "text", "tree")

    def __init__(self, text: bytes, tree: tree_sitter.Tree, spans: Spans | None = None) -> None:
        self.text = text
        self.tree = tree
        self.spans = spans  # its tokens' (`leaf_spans`), once `Syntax.parse` read them
        self._line_starts: list[int] | None = None
        self._starts: list[int] | None = None
        self._defects_before: list[int] | None = None

    def point(self, offset: int) -> tuple[int, int]:
        """(row, column in bytes) of a byte offset, as tree-sitter's edits want them."""
        if self._line_starts is None:
            starts = [0]
            text = self.text
            at = text.find(b"\n")
            while at >= 0:
                starts.append(at + 1)
                at = text.find(b"\n", at + 1)
            self._line_starts = starts
        row = bisect_right(self._line_starts, offset) - 1
        return row, offset - self._line_starts[row]

    def settled(self, syntax: Syntax, first_change: int) -> tuple[int, int]:
        """Where the top-level items a change at `first_change` cannot reach end, and how
        many syntax errors they hold.

        A full parse reads the candidate from the start, and up to the change it
        reads the parent's bytes: it builds the parent's nodes there. One whole
        item without errors is held back between those items and the one the
        change is in: for the lexer's lookahead, and so that any error recovery
        before it has ended in normal parsing before the texts differ.
        """
        root = self.tree.root_node
        if root.is_error or root.is_missing:
            return 0, 0
        if self._starts is None:
            self._starts, self._defects_before = syntax.defects_by_item(self.tree)
        assert self._defects_before is not None
        before = self._defects_before
        item = bisect_right(self._starts, first_change) - 2
        while item > 0 and before[item + 1] != before[item]:
            item -= 1
        if item <= 0:
            return 0, 0
        return self._starts[item], before[item]


@dataclass(frozen=True)
class _Passed:
    """A text the gate let through with no syntax error, its tree, and where it was re-parsed
    from: the parent, the splices that made it, and the parent's tree told of them."""

    text: bytes
    tree: tree_sitter.Tree
    parent: _Parent | None = None
    splices: Sequence[Splice] = ()
    edited: tree_sitter.Tree | None = None

    def spans(self, comments: frozenset[int]) -> Spans | None:
        """Its tokens' spans from its parent's, where those are known."""
        parent = self.parent
        if parent is None or parent.spans is None or self.edited is None:
            return None
        return respanned(parent.spans, self.splices, self.edited, self.tree, comments)


class Syntax:
    """Parses with one grammar, remembers how broken the original was, and keeps the trees
    of the texts it parsed last, for candidates made from them."""

    def __init__(self, grammar: Grammar, original: bytes) -> None:
        self.grammar = grammar
        self._parser = grammar.parser()
        self._blocks = (
            tree_sitter.Query(grammar.language, "(block) @block")
            if grammar.name in EMPTY_BLOCK_IS_ERROR
            else None
        )
        self._parents: OrderedDict[bytes, _Parent] = OrderedDict()
        # the trees of the last texts the gate let through: one of them is usually the next
        # text taken, whose tree `parse` then need not build again. Error-free ones only,
        # where an incremental parse is the tree a full parse gives, so keeping them never
        # changes a tree a pass sees.
        self._passed: deque[_Passed] = deque(maxlen=PASSED_TREES)
        self._acceptable: set[bytes] = set()  # digests of the texts `check` found acceptable
        tree = self._parser.parse(original)
        self.baseline_errors = self._errors(tree.root_node)
        # the reduction's first `parse` is of the original: this very tree (a full parse)
        self._original = Parsed(original, tree, *leaf_spans(tree))

    def tolerate(self, tree: tree_sitter.Tree) -> None:
        """Accept as many syntax errors as `tree` has from now on (a text the test took
        despite the grammar)."""
        self.baseline_errors = max(self.baseline_errors, self._errors(tree.root_node))

    def _errors(self, root: tree_sitter.Node) -> int:
        errors = count_errors(root)
        if self._blocks is not None:
            errors += self._empty_blocks(root, 0)
        return errors

    def _empty_blocks(self, root: tree_sitter.Node, start: int) -> int:
        """Empty `block` nodes that start at or after byte `start`."""
        assert self._blocks is not None
        cursor = tree_sitter.QueryCursor(self._blocks)
        if start:
            cursor.set_byte_range(start - 1, root.end_byte + 1)
        found = cursor.captures(root).get("block", [])
        return sum(1 for block in found if block.child_count == 0 and block.start_byte >= start)

    def defects_by_item(self, tree: tree_sitter.Tree) -> tuple[list[int], list[int]]:
        """The start of each top-level item, and the syntax errors before each and before
        the end (what `_errors` counts, item by item)."""
        root = tree.root_node
        items = root.children
        starts = [item.start_byte for item in items]
        counts = [_item_errors(root, item) for item in items]
        if self._blocks is not None:
            for block in tree_sitter.QueryCursor(self._blocks).captures(root).get("block", []):
                if block.child_count == 0:
                    counts[max(0, bisect_right(starts, block.start_byte) - 1)] += 1
        before = [0]
        for count in counts:
            before.append(before[-1] + count)
        return starts, before

    def parse(self, text: bytes) -> Parsed:
        """`text` parsed, with its tokens' spans: as parsed lately, or the tree the gate built
        for it when it let it through, and the spans of the text it was made from, where
        they are known, moved past the change (`respan.respanned`)."""
        original = self._original
        if len(text) == len(original.text) and text == original.text:
            spans = original.token_starts, original.token_ends
            self._remember(text, original.tree, spans)
            return Parsed(text, original.tree, *spans)
        known = self._parents.get(text)
        if known is not None and known.spans is not None:  # parsed lately, and read
            self._parents.move_to_end(text)
            return Parsed(text, known.tree, *known.spans)
        passed = self._passed_as(text)
        if passed is None:
            tree = self._parser.parse(text)
            spans = leaf_spans(tree)
        else:
            tree = passed.tree
            spans = passed.spans(_comment_kinds(tree.language)) or leaf_spans(tree)
        self._remember(text, tree, spans)
        return Parsed(text, tree, *spans)

    def passed_tree(self, text: bytes) -> tree_sitter.Tree | None:
        """The tree of `text` if the check let it through lately with no error in it: the
        tree a full parse gives, without the parse."""
        passed = self._passed_as(text)
        return passed.tree if passed is not None else None

    def _passed_as(self, text: bytes) -> _Passed | None:
        return next(
            (
                passed
                for passed in self._passed
                if len(passed.text) == len(text) and passed.text == text
            ),
            None,
        )

    def _remember(self, text: bytes, tree: tree_sitter.Tree, spans: Spans | None = None) -> _Parent:
        text = text if type(text) is bytes else bytes(text)  # a rendered text holds its base
        parent = _Parent(text, tree, spans)
        self._parents[text] = parent
        while len(self._parents) > REMEMBERED_TREES:
            self._parents.popitem(last=False)
        return parent

    def reparsed(self, text: bytes, parent: bytes) -> Parsed | None:
        """`text` as a full parse gives it, re-parsed from the tree of `parent`, one of the
        texts parsed last, where the two differ, its tokens moved from the parent's where
        those are known; None when `parent`'s tree is no longer kept, or when the re-parse
        has a syntax error (error recovery may then build another tree than a full parse
        would, and a caller that tokenizes the tree must see the full parse's tokens
        whatever was parsed before).

        A lifted seed is its reduced variant with the difference's hunks put back: the
        parse of 8,800 JavaScript tokens, 4-6 ms in full, re-reads the hunks only, and
        reading its tokens from the whole tree (2 ms) is left for the hunks too. Its tree
        is kept: once the lift holds, the seed's candidates are made from it (before, the
        gate parsed it in full for the first of them).
        """
        known = self._parents.get(parent)
        if known is None:
            return None
        splices = splices_between(parent, text)
        edited = _edited(known, splices)
        tree = self._parser.parse(text, edited)
        if tree.root_node.has_error:
            return None
        spans = _Passed(text, tree, known, splices, edited).spans(_comment_kinds(tree.language))
        spans = spans or leaf_spans(tree)
        self._remember(text, tree, spans)  # a lift that holds becomes the seed candidates' parent
        return Parsed(text, tree, *spans)

    def _parent(self, text: bytes) -> _Parent:
        known = self._parents.get(text)
        if known is None:
            return self._remember(text, self._parser.parse(text))
        self._parents.move_to_end(text)
        return known

    def check(
        self, text: bytes, parent: bytes | None = None, splices: Sequence[Splice] | None = None
    ) -> bool:
        """`acceptable`, remembered for the texts it accepts (a digest each), for the run.

        The gate is offered a text again when it let the text through but no
        test judged it: the other program of its pair refused first, or the
        speculation that wanted it was abandoned. A quarter of the checks on
        gcc12-pr109392's pair were such repeats, each a parse of 1.3 ms. The
        baseline only grows (`tolerate`), so what was acceptable stays so.
        """
        digest = hashlib.sha1(text).digest()
        if digest in self._acceptable:
            return True
        if not self.acceptable(text, parent, splices):
            return False
        self._acceptable.add(digest)
        return True

    def acceptable(
        self, text: bytes, parent: bytes | None = None, splices: Sequence[Splice] | None = None
    ) -> bool:
        """Whether `text` parses with no more errors than the original had.

        `parent` is a text `text` was made from (by `splices`, in the parent's
        offsets, or else found by comparing the two): its tree, kept or parsed
        once, spares a full parse of every candidate made from it.
        """
        if parent is None:
            return self._full(text)
        if splices is None:
            splices = splices_between(parent, text)
        return self._incremental(text, self._parent(parent), splices)

    def _full(self, text: bytes) -> bool:
        tree = self._parser.parse(text)
        root = tree.root_node
        passes = (not root.has_error and self._blocks is None) or (
            self._errors(root) <= self.baseline_errors
        )
        if passes and not root.has_error:
            self._passed.append(_Passed(text, tree))
        return passes

    def _incremental(self, text: bytes, parent: _Parent, splices: Sequence[Splice]) -> bool:
        """The full parse's verdict, from the parent's tree re-parsed where `splices` changed it.

        The errors of the top-level items before the first change are the
        parent's own (see `_Parent.settled`). After them, only whether there is
        any error is taken from the incremental tree: where the candidate adds
        none, the two parses agree on the tree; where it adds some, both find
        errors, though not always as many. When that is not enough to decide
        (errors in the original, and some missing before the change), the
        candidate is parsed in full.
        """
        first = min((start for start, _, _ in splices), default=len(parent.text))
        boundary, settled = parent.settled(self, first)
        if settled > self.baseline_errors:
            return False
        edited = _edited(parent, splices)
        tree = self._parser.parse(text, edited)
        root = tree.root_node
        if not self._any_defect_after(root, boundary):
            if not root.has_error:
                self._passed.append(_Passed(text, tree, parent, tuple(splices), edited))
            return True
        if settled + 1 > self.baseline_errors:
            return False
        return self._full(text)

    def _any_defect_after(self, root: tree_sitter.Node, boundary: int) -> bool:
        """Whether a top-level item not wholly before `boundary` holds a syntax error
        (a zero-width item at the boundary counts as after it)."""
        if root.is_error or root.is_missing or not boundary:
            return self._errors(root) > 0
        after = [
            item
            for item in root.children
            if item.end_byte > boundary or item.start_byte >= boundary
        ]
        if not after:
            return False
        if any(_item_errors(root, item) for item in after):
            return True
        return self._blocks is not None and self._empty_blocks(root, after[0].start_byte) > 0


def _edited(parent: _Parent, splices: Sequence[Splice]) -> tree_sitter.Tree:
    """A copy of the parent's tree told of `splices` (in the parent's offsets): what a text
    made from the parent by them is re-parsed from."""
    edited = parent.tree.copy()
    for start, end, replacement in sorted(splices, reverse=True):
        start_point = parent.point(start)
        edited.edit(
            start,
            end,
            start + len(replacement),
            start_point,
            parent.point(end),
            _advanced(start_point, replacement),
        )
    return edited


def _advanced(point: tuple[int, int], inserted: bytes) -> tuple[int, int]:
    """Where `inserted`, written at `point`, ends."""
    lines = inserted.count(b"\n")
    if not lines:
        return point[0], point[1] + len(inserted)
    return point[0] + lines, len(inserted) - inserted.rfind(b"\n") - 1


def _common_prefix(old: bytes, at_old: int, new: bytes, at_new: int, limit: int) -> int:
    """How many bytes agree from `at_old` and `at_new` on (at most `limit`), compared in
    doubling blocks so that long agreements cost a few slice comparisons."""
    agreed = 0
    step = 64
    while agreed < limit:
        size = min(step, limit - agreed)
        if (
            old[at_old + agreed : at_old + agreed + size]
            == new[at_new + agreed : at_new + agreed + size]
        ):
            agreed += size
            step *= 2
            continue
        low, high = 0, size  # old and new agree on `low` more bytes; not on `high`
        while high - low > 1:
            middle = (low + high) // 2
            if (
                old[at_old + agreed : at_old + agreed + middle]
                == new[at_new + agreed : at_new + agreed + middle]
            ):
                low = middle
            else:
                high = middle
        return agreed + low
    return agreed


def _common_suffix(old: bytes, new: bytes, limit: int) -> int:
    agreed = 0
    step = 64
    old_end, new_end = len(old), len(new)
    while agreed < limit:
        size = min(step, limit - agreed)
        if (
            old[old_end - agreed - size : old_end - agreed]
            == new[new_end - agreed - size : new_end - agreed]
        ):
            agreed += size
            step *= 2
            continue
        low, high = 0, size
        while high - low > 1:
            middle = (low + high) // 2
            if (
                old[old_end - agreed - middle : old_end - agreed]
                == new[new_end - agreed - middle : new_end - agreed]
            ):
                low = middle
            else:
                high = middle
        return agreed + low
    return agreed


def splices_between(old: bytes, new: bytes) -> list[Splice]:
    """Splices that turn `old` into `new`: few and small when `new` is `old` with some spans
    cut out or replaced, which is how candidates differ from the text they came from.

    Any answer is correct (each splice is exact); a poor one only makes the
    incremental parse re-read more. After a difference the texts are taken to
    agree again where the next `_PROBE` bytes of one are found in the other,
    nearest first.
    """
    suffix = _common_suffix(old, new, min(len(old), len(new)))
    old_stop, new_stop = len(old) - suffix, len(new) - suffix
    splices: list[Splice] = []
    at_old = at_new = 0
    while True:
        agreed = _common_prefix(old, at_old, new, at_new, min(old_stop - at_old, new_stop - at_new))
        at_old += agreed
        at_new += agreed
        if at_old == old_stop and at_new == new_stop:
            return splices
        resumed = None
        if at_old < old_stop and at_new < new_stop and len(splices) < _MAX_SPLICES - 1:
            resumed = _resume(old, at_old, old_stop, new, at_new, new_stop)
        if resumed is None:
            splices.append((at_old, old_stop, new[at_new:new_stop]))
            return splices
        old_next, new_next = resumed
        splices.append((at_old, old_next, new[at_new:new_next]))
        at_old, at_new = old_next, new_next


def _resume(
    old: bytes, at_old: int, old_stop: int, new: bytes, at_new: int, new_stop: int
) -> tuple[int, int] | None:
    """The nearest (old, new) offsets past a difference from which the texts agree for
    `_PROBE` bytes (or to their stops): cut from old, inserted into new, or both."""
    best: tuple[int, int] | None = None
    best_cost = old_stop - at_old + new_stop - at_new
    for skip in (0, 1, 2, 16, 64, 256, 1024):
        # new from at_new + skip on found further on in old: old[at_old:found] was cut
        probe_at = at_new + skip
        if probe_at < new_stop and skip < best_cost:
            probe = new[probe_at : min(probe_at + _PROBE, new_stop)]
            limit = min(old_stop, at_old + best_cost - skip + len(probe))
            found = old.find(probe, at_old, limit)
            if found >= 0 and (found, probe_at) != (at_old, at_new):
                cost = found - at_old + skip
                if cost < best_cost:
                    best, best_cost = (found, probe_at), cost
        # old from at_old + skip on found further on in new: new[at_new:found] was inserted
        probe_at = at_old + skip
        if probe_at < old_stop and skip < best_cost:
            probe = old[probe_at : min(probe_at + _PROBE, old_stop)]
            limit = min(new_stop, at_new + best_cost - skip + len(probe))
            found = new.find(probe, at_new, limit)
            if found >= 0 and (probe_at, found) != (at_old, at_new):
                cost = found - at_new + skip
                if cost < best_cost:
                    best, best_cost = (probe_at, found), cost
    return best


def plain_tokens(text: bytes) -> list[tuple[int, int]]:
    """Byte spans of words and punctuation, for files no grammar parses."""
    return [match.span() for match in _PLAIN_TOKEN.finditer(text)]
