"""Perses-style syntax-guided reduction on tree-sitter trees.

Nodes wait in a max-heap by token count, so the biggest subtrees are worked on
first (the cheapest place to remove the most). Working on a node means
(1) hoisting: replacing it by a smaller descendant of a compatible kind, then
(2) ddmin over its named children, taking list separators along, then pushing
its surviving children. Pending nodes are disjoint subtrees, and every change
happens inside the node at work, so pending positions only shift: they are
remembered as byte ranges plus the log of changes since they were pushed, and
found again in the re-parsed tree when popped.
"""

from __future__ import annotations

import copy
import functools
import heapq
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import tree_sitter

from gitreduce.core import edits
from gitreduce.core.current import (
    Current,
    Unit,
    deletion_spans,
    first_then_delete_units,
    render_deletions,
)
from gitreduce.core.ddmin import opening
from gitreduce.core.judges import Lookahead
from gitreduce.lang.syntax import Parsed
from gitreduce.passes.catalog import Catalog, Replacement

SEPARATORS = frozenset({b",", b";"})
HOIST_DEPTH = 4
HOIST_CANDIDATES = 8
# A nesting chain: `((((x))))`, `- - - x`, `{ { { s; } } }`, `f(f(f(x)))`, each node with one
# child that holds nearly all of its tokens. Hoisting looks `HOIST_DEPTH` levels down, so
# a chain of n levels took n / HOIST_DEPTH successes, a test each (20,000 nested
# parentheses: 7,000 tests). The node at the top of a chain also offers the compatible
# nodes along it at depths 8, 16, 32, ..., deepest first: the chain shrinks by halves, and
# the depth a bug needs (a parser's stack overflow) is found in about log2(n) tests.
CHAIN_SHARE = 0.9
CHAIN_DEEPEST = 1 << 16


@dataclass(frozen=True)
class _Change:
    """Bytes [start, end) were replaced; everything from `end` on moved by `shift`."""

    start: int
    end: int
    shift: int


@dataclass(order=True)
class _Pending:
    priority: tuple[int, int]
    start: int
    end: int
    kind: str
    log_position: int


def _locate(root: tree_sitter.Node, start: int, end: int, kind: str) -> tree_sitter.Node | None:
    node = root.descendant_for_byte_range(start, end)
    while node is not None and node.start_byte == start and node.end_byte == end:
        if node.type == kind:
            return node
        node = node.parent
    return None


def list_units(node: tree_sitter.Node) -> list[Unit]:
    """The named children of `node` as deletion units, each owning the separator after it.

    A `;` counts as a separator only between elements; a final one terminates
    the construct (`int a, b;`) and stays.
    """
    children = node.children
    units: list[Unit] = []
    for index, child in enumerate(children):
        if not child.is_named:
            continue
        separator = None
        following = children[index + 1] if index + 1 < len(children) else None
        if following is not None and not following.is_named and following.text in SEPARATORS:
            has_later_element = any(c.is_named for c in children[index + 2 :])
            if following.text == b"," or has_later_element:
                separator = (following.start_byte, following.end_byte)
        units.append(Unit(child.start_byte, child.end_byte, separator))
    return units


OPENING_BRACKETS = frozenset({b"(", b"[", b"{", b"<"})


def operand_units(node: tree_sitter.Node) -> list[Unit]:
    """Named children together with the operator-like tokens right before them.

    Deleting `= 1` from `ENUM_B = 1` or `+ b` from `a + b` is valid where deleting
    the operand alone is not. Tried after plain `list_units`, since attaching
    the token is wrong as often as right (`case 1: stmt` needs its colon).
    """
    children = node.children
    units: list[Unit] = []
    seen_named = False
    for index, child in enumerate(children):
        if not child.is_named:
            continue
        run_start = index
        while run_start > 0 and not children[run_start - 1].is_named:
            run_start -= 1
        leading = children[run_start:index]
        if (
            seen_named
            and leading
            and all(t.text not in SEPARATORS and t.text not in OPENING_BRACKETS for t in leading)
        ):
            units.append(Unit(leading[0].start_byte, child.end_byte))
        seen_named = True
    return units


def _declaration_endings(node: tree_sitter.Node) -> list[Replacement]:
    """`;` in place of a `{ ... }` body: a definition becomes a declaration.

    C-Vise's "remove function body", for every grammar with a `body` field.
    A second form also drops what stands between the signature and the body
    (a constructor's `: base(args)`), which a declaration may not carry.
    """
    parent = node.parent
    if (
        parent is None
        or node.child_count < 2
        or node.children[0].type != "{"
        or parent.child_by_field_name("body") != node
    ):
        return []
    endings = [Replacement(1, b";", node.type)]
    signature = parent.child_by_field_name("declarator") or parent.child_by_field_name("parameters")
    if signature is not None and signature.end_byte < node.start_byte:
        assert parent.text is not None  # trees of parsed candidates keep their source
        between = parent.text[
            signature.end_byte - parent.start_byte : node.start_byte - parent.start_byte
        ]
        if between and between.strip():
            endings.append(Replacement(1, b";", node.type, signature.end_byte))
    return endings


def _line_start(text: bytes, position: int) -> int:
    return text.rfind(b"\n", 0, position) + 1


def _dedent(text: bytes, node: tree_sitter.Node, block: tree_sitter.Node) -> list[tuple[int, int]]:
    """Deletions that take `block`'s later lines back to `node`'s indentation.

    Raises ValueError where that cannot be done by deleting indentation: a line
    that does not start with the block's own (inside a string, say).
    """
    node_prefix = text[_line_start(text, node.start_byte) : node.start_byte]
    block_line = _line_start(text, block.start_byte)
    if block_line <= node.start_byte:  # `if x: a()`: the body shares the header's line
        if b"\n" in text[block.start_byte : block.end_byte]:
            raise ValueError("a body on the header's line that goes on")
        return []
    block_prefix = text[block_line : block.start_byte]
    if node_prefix.strip() or block_prefix.strip() or not block_prefix.startswith(node_prefix):
        raise ValueError("indentation the node and its body do not share")
    deletions = []
    line = text.find(b"\n", block.start_byte, block.end_byte)
    while line >= 0:
        line += 1
        following = text.find(b"\n", line, block.end_byte)
        content = text[line : following if following >= 0 else block.end_byte]
        if content.strip():
            if not content.startswith(block_prefix):
                raise ValueError("a line less indented than its block (a string, a comment)")
            deletions.append((line + len(node_prefix), line + len(block_prefix)))
        line = following
    return deletions


def _unwrapped_bodies(node: tree_sitter.Node, parsed: Parsed) -> list[Replacement]:
    """`node` replaced by the statements of a body block that has no braces of its own
    (Python's, Lua's), dedented to `node`'s column.

    Hoisting offers one statement of a body at a time; where a body is a
    `{ ... }` it is a statement itself and hoists whole, but an indented body
    is no statement, and the loop or condition around the needed lines would
    stay for good.
    """
    text = parsed.text
    found = []
    for block in node.named_children:
        if not block.type.endswith("block") or not block.named_child_count:
            continue
        if block.children[0].text in OPENING_BRACKETS:
            continue
        try:
            dedents = _dedent(text, node, block)
        except ValueError:
            continue
        deletions = (
            (node.start_byte, block.start_byte),
            *dedents,
            (block.end_byte, node.end_byte),
        )
        rendered = edits.apply(text, [edits.Edit(*span) for span in deletions])
        unwrapped = rendered[node.start_byte : node.end_byte + len(rendered) - len(text)]
        tokens = parsed.tokens_in(block.start_byte, block.end_byte)
        found.append(Replacement(tokens, unwrapped, block.type, deletions=deletions))
    return found


def _push(heap: list[_Pending], parsed: Parsed, node: tree_sitter.Node, log_position: int) -> None:
    """Queue `node` by its size, biggest first, if it holds two tokens or more."""
    tokens = parsed.tokens_in(node.start_byte, node.end_byte)
    if tokens >= 2:
        start, end = node.start_byte, node.end_byte
        heapq.heappush(heap, _Pending((-tokens, start), start, end, node.type, log_position))


def _where(entry: _Pending, log: list[_Change]) -> tuple[int, int]:
    """Where `entry`'s node is after the changes of `log` since it was pushed."""
    start, end = entry.start, entry.end
    for change in log[entry.log_position :]:
        if start >= change.end:
            start += change.shift
            end += change.shift
    return start, end


def _rendered(text: bytes, start: int, end: int, replacement: Replacement) -> bytes:
    """`text` with the node at [start, end) replaced by `replacement`."""
    if replacement.deletions:
        return edits.apply(text, [edits.Edit(*span) for span in replacement.deletions])
    at = start if replacement.start < 0 else replacement.start
    return edits.apply(text, [edits.Edit(at, end, replacement.text)])


UNIT_KINDS = (list_units, operand_units)


class TreeReducer:
    """One sweep of the heap over the current tree; call `sweep` until it reports no progress.

    `then`: what the caller tries once a sweep ends without progress (the schedule's next
    pass), the lookahead of the sweep's last batches. `next_sweep(current)`: the reducer
    of the sweep the caller runs on `current` after one that shrank the text; where the
    sweep's last batches look ahead then (its `opening`), instead of leaving a job idle
    until the sweep ends. Without it no sweep follows (a caller that sweeps once a
    round), and they look ahead to `then` whether the sweep shrank the text or not.
    """

    def __init__(
        self,
        current: Current,
        catalog: Catalog,
        then: Lookahead[bytes] | None = None,
        next_sweep: Callable[[Current], TreeReducer] | None = None,
    ) -> None:
        if current.syntax is None:
            raise ValueError("tree reduction needs a grammar")
        self.current = current
        self.grammar = current.syntax.grammar
        self.catalog = catalog
        self._then = then
        self._next_sweep = next_sweep
        self._start_length = len(current.text)
        self._log: list[_Change] = []
        self._heap: list[_Pending] = []

    def _push(self, node: tree_sitter.Node) -> None:
        parsed = self.current.parsed
        assert parsed is not None
        _push(self._heap, parsed, node, len(self._log))

    def _where_now(self, entry: _Pending) -> tuple[int, int]:
        return _where(entry, self._log)

    def _record(self, start: int, end: int, old_length: int) -> None:
        shift = len(self.current.text) - old_length
        if shift:
            self._log.append(_Change(start, end, shift))

    def sweep(self, roots: list[tree_sitter.Node] | None = None) -> bool:
        """Work through the heap from `roots` (default: the whole tree); True if it shrank."""
        parsed = self.current.parsed
        assert parsed is not None
        start_length = self._start_length = len(self.current.text)
        self._log.clear()
        self._heap.clear()
        for root in roots if roots is not None else [parsed.tree.root_node]:
            self._push(root)
        while self._heap:
            entry = heapq.heappop(self._heap)
            start, end = self._where_now(entry)
            parsed = self.current.parsed
            assert parsed is not None
            node = _locate(parsed.tree.root_node, start, end, entry.kind)
            if node is None:
                continue
            hoisted, node = self._reduce(node)
            if hoisted:
                if node is not None:
                    self._push(node)
                continue
            if node is not None:
                for child in node.named_children:
                    self._push(child)
        return len(self.current.text) < start_length

    def _replacements(self, node: tree_sitter.Node) -> list[Replacement]:
        """Compatible descendants and stock phrases smaller than `node`, smallest first."""
        parsed = self.current.parsed
        assert parsed is not None
        own_tokens = parsed.tokens_in(node.start_byte, node.end_byte)
        own_text = parsed.text[node.start_byte : node.end_byte]
        stock = {
            (r.text, r.start): r for r in self.catalog.for_kind(node.type) if r.tokens < own_tokens
        }
        endings = _declaration_endings(node)
        found: dict[tuple[bytes, int], Replacement] = {}
        frontier = list(node.named_children)
        for _ in range(HOIST_DEPTH):
            deeper = []
            for child in frontier:
                tokens = parsed.tokens_in(child.start_byte, child.end_byte)
                if 0 < tokens < own_tokens and self.catalog.compatible(node.type, child.type):
                    text = parsed.text[child.start_byte : child.end_byte]
                    found.setdefault((text, -1), Replacement(tokens, text, child.type))
                deeper.extend(child.named_children)
            frontier = deeper
        descendants = set(found)
        for key, replacement in stock.items():
            found.setdefault(key, replacement)
        found.pop((own_text, -1), None)
        # Descendants before stock phrases: hoisting keeps the program's own
        # meaning, which the bug more likely needs; a `0` put in too early can
        # block the deletions that would have made the node disappear.
        ranked = sorted(
            found.values(),
            key=lambda r: ((r.text, r.start) not in descendants, r.tokens, len(r.text), r.text),
        )[:HOIST_CANDIDATES]
        # a whole body, and a body's `;`, are offered however many descendants there are
        return (
            self._down_the_chain(node, own_tokens)
            + ranked
            + _unwrapped_bodies(node, parsed)
            + endings
        )

    def _down_the_chain(self, node: tree_sitter.Node, own_tokens: int) -> list[Replacement]:
        """The compatible nodes at depths 8, 16, 32, ... of the nesting chain `node` tops,
        deepest first (see `CHAIN_SHARE`); none for a node inside a chain, a few levels
        below a node of its own kind (that node offers them: walking down from every level
        would cost the square of the chain's length)."""
        parsed = self.current.parsed
        assert parsed is not None
        below, tokens = node, own_tokens
        for _ in range(2 * HOIST_DEPTH):
            above = below.parent
            if above is None:
                break
            above_tokens = parsed.tokens_in(above.start_byte, above.end_byte)
            if tokens < CHAIN_SHARE * above_tokens:
                break
            if above.type == node.type:
                return []
            below, tokens = above, above_tokens
        found: list[Replacement] = []
        current, tokens, depth, offer_at = node, own_tokens, 0, 2 * HOIST_DEPTH
        while depth < CHAIN_DEEPEST:
            children = current.named_children
            sizes = [parsed.tokens_in(child.start_byte, child.end_byte) for child in children]
            if not children or max(sizes) < CHAIN_SHARE * tokens:
                break
            widest = sizes.index(max(sizes))
            current, tokens, depth = children[widest], sizes[widest], depth + 1
            if depth >= offer_at and self.catalog.compatible(node.type, current.type):
                text = parsed.text[current.start_byte : current.end_byte]
                found.append(Replacement(tokens, text, current.type))
                offer_at = 2 * depth
        return found[::-1]

    def _reduce(self, node: tree_sitter.Node) -> tuple[bool, tree_sitter.Node | None]:
        """Replace `node` by the smallest compatible phrase that keeps the bug, or else
        ddmin over its children; whether it was replaced, and the node standing there
        afterwards (None when that is no node of the kind, e.g. a body that became `;`).

        The replacements and the first ddmin are one stream of candidates
        (`first_then_delete_units`): no job waits for the last replacement's test
        before ddmin's first ones start.
        """
        replacements = self._replacements(node)
        text = self.current.text
        start, end, kind = node.start_byte, node.end_byte, node.type

        def rendered(replacement: Replacement) -> bytes:
            return _rendered(text, start, end, replacement)

        first = replacements
        for phase, make_units in enumerate(UNIT_KINDS):
            units = make_units(node)
            if not units and not first:
                continue
            old_length = len(self.current.text)
            taken, deleted = first_then_delete_units(
                self.current,
                first,
                rendered,
                units,
                try_empty=phase == 0,
                lookahead=functools.partial(self._ahead, start, end, kind, old_length, phase),
                after_first=functools.partial(self._after_hoist, start, end, first),
                after_deleting=functools.partial(
                    self._after_deleting, start, end, kind, old_length, phase
                ),
            )
            first = []
            if taken is not None:
                chosen = replacements[taken]
                at = start if chosen.start < 0 else chosen.start
                self._record(at, end, old_length)
                parsed = self.current.parsed
                assert parsed is not None
                return True, _locate(parsed.tree.root_node, at, at + len(chosen.text), chosen.kind)
            if not deleted:
                continue
            self._record(start, end, old_length)
            end += len(self.current.text) - old_length
            parsed = self.current.parsed
            assert parsed is not None
            located = _locate(parsed.tree.root_node, start, end, kind)
            if located is None:
                return False, None
            node = located
        return False, node

    def _ahead(self, start: int, end: int, kind: str, length: int, phase: int) -> Iterator[bytes]:
        """The candidates the sweep goes on to if none of the node's current phase is taken:
        its later phase, then the nodes the heap hands out next, each as `_reduce` would
        offer them. `end` and `length` are the node's end and the text's length when the
        phase began; whatever the phase took since then lay inside the node."""
        parsed = self.current.parsed
        assert parsed is not None
        shift = len(self.current.text) - length
        log = self._log + ([_Change(start, end, shift)] if shift else [])
        node = _locate(parsed.tree.root_node, start, end + shift, kind)
        heap = list(self._heap)
        if node is not None:  # else the node went whole, and the sweep goes on with the heap
            yield from self._offers(node, phase + 1)
            for child in node.named_children:
                _push(heap, parsed, child, len(log))
        yield from self._handed_out(heap, parsed, log)
        yield from self._after_heap()

    def _after_heap(self) -> Iterator[bytes]:
        """What follows once the heap is empty: the next sweep, if this one shrank the text
        and one follows, else the caller's next pass (`then`)."""
        if len(self.current.text) < self._start_length and self._next_sweep is not None:
            yield from self._next_sweep(self.current).opening()
        elif self._then is not None:
            yield from self._then()  # no sweep follows: the caller goes on

    def _supposing(self, text: bytes) -> TreeReducer | None:
        """This sweep as it would stand had the engine taken `text` (None: it does not
        parse): for reading what it tries next should `text` win, a bet while its test
        runs. Its caller's next pass is not known for a text not taken (`then`)."""
        current = self.current.supposing(text)
        if current.parsed is None:
            return None
        supposed = copy.copy(self)
        supposed.current = current
        supposed._then = None
        supposed._log = list(self._log)
        supposed._heap = list(self._heap)
        return supposed

    def _after_hoist(
        self, start: int, end: int, replacements: Sequence[Replacement], index: int
    ) -> Iterator[bytes]:
        """What the sweep tries once `replacements[index]` of the node at `start`-`end` is
        taken, as `sweep` goes on after `_reduce` replaced it: the node standing there
        queued, the heap handed out."""
        chosen = replacements[index]
        supposed = self._supposing(_rendered(self.current.text, start, end, chosen))
        if supposed is None:
            return
        at = start if chosen.start < 0 else chosen.start
        supposed._record(at, end, len(self.current.text))
        parsed = supposed.current.parsed
        assert parsed is not None
        heap = supposed._heap
        node = _locate(parsed.tree.root_node, at, at + len(chosen.text), chosen.kind)
        if node is not None:
            _push(heap, parsed, node, len(supposed._log))
        yield from supposed._handed_out(heap, parsed, supposed._log)
        yield from supposed._after_heap()

    def _after_deleting(
        self, start: int, end: int, kind: str, length: int, phase: int, text: bytes
    ) -> Iterator[bytes]:
        """What the sweep tries once the deletions of the node's `phase` end on `text`
        (`length`: the text's when the phase began): as `_ahead` from there."""
        supposed = self._supposing(text)
        if supposed is not None:
            yield from supposed._ahead(start, end, kind, length, phase)

    def opening(self) -> Iterator[bytes]:
        """What a sweep over the whole tree reads while nothing is taken, in its order, and
        then what its caller tries next (`then`), since such a sweep ends as it began."""
        parsed, heap = self._whole_tree()
        yield from self._handed_out(heap, parsed, [])
        if self._then is not None:
            yield from self._then()

    def first_batch(self) -> Iterator[bytes]:
        """The candidates a sweep over the whole tree sends as its first batch: the root's
        offers of the first phase that has any (`_reduce`'s first stream)."""
        parsed, heap = self._whole_tree()
        if heap:
            yield from self._offers(parsed.tree.root_node, 0, first_stream=True)

    def _whole_tree(self) -> tuple[Parsed, list[_Pending]]:
        """The current parse, and the heap a sweep over all of it starts from (the root,
        unless it holds fewer than two tokens)."""
        parsed = self.current.parsed
        assert parsed is not None
        heap: list[_Pending] = []
        _push(heap, parsed, parsed.tree.root_node, 0)
        return parsed, heap

    def _handed_out(
        self, heap: list[_Pending], parsed: Parsed, log: list[_Change]
    ) -> Iterator[bytes]:
        """The offers of the nodes `heap` hands out, in the sweep's order, while nothing
        is taken (each node's children queued after it, as `sweep` does)."""
        while heap:
            entry = heapq.heappop(heap)
            following = _locate(parsed.tree.root_node, *_where(entry, log), entry.kind)
            if following is None:
                continue
            yield from self._offers(following, 0)
            for child in following.named_children:
                _push(heap, parsed, child, len(log))

    def _offers(
        self, node: tree_sitter.Node, phase: int, *, first_stream: bool = False
    ) -> Iterator[bytes]:
        """What `_reduce` offers for `node` from `phase` on while nothing is taken; with
        `first_stream`, only what it sends in one stream first."""
        text = self.current.text
        first = self._replacements(node) if phase == 0 else []
        for later, make_units in enumerate(UNIT_KINDS[phase:], start=phase):
            units = make_units(node)
            if not units and not first:
                continue
            for replacement in first:
                yield _rendered(text, node.start_byte, node.end_byte, replacement)
            first = []
            for kept in opening(len(units), try_empty=later == 0):
                yield render_deletions(text, deletion_spans(units, kept))
            if first_stream:
                return
