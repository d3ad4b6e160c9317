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

import functools
import heapq
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
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
from gitreduce.lang.grammars import Grammar
from gitreduce.lang.syntax import Parsed

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


@dataclass(frozen=True, order=True)
class Replacement:
    """Text that may stand in for a node: a descendant (hoisting) or a small stock phrase."""

    tokens: int
    text: bytes
    kind: str
    # Where the replaced range starts when not at the node itself (-1): a body
    # turned into `;` takes a constructor's initialiser list along.
    start: int = -1
    # Deletions inside the node that leave `text` in its place, when that is not
    # one replacement of its span: a body unwrapped from its statement, dedented.
    deletions: tuple[tuple[int, int], ...] = ()


def catalog_of(grammar: Grammar, parsed: Parsed) -> Catalog:
    """A catalog of its own that learnt `parsed`, phrases and slots: `_CATALOGS`' copy.

    The reduction's first catalog is of its original, which a session learns while
    the original's test calibrates (15 ms on 8,800 JavaScript tokens, 32 ms on 23,000
    C tokens, otherwise spent with no test running); the few texts learnt last are
    kept, each a pure function of its grammar and bytes.
    """
    key = (grammar.name, bytes(parsed.text))
    with _CATALOGS_LOCK:
        known = _CATALOGS.get(key)
    if known is None:
        known = Catalog(grammar)
        known.learn(parsed)
        with _CATALOGS_LOCK:
            _CATALOGS[key] = known
            while len(_CATALOGS) > _CATALOGS_KEPT:
                _CATALOGS.popitem(last=False)
    return known.copy()


_CATALOGS: OrderedDict[tuple[str, bytes], Catalog] = OrderedDict()
_CATALOGS_KEPT = 4
_CATALOGS_LOCK = threading.Lock()


class Catalog:
    """What the original program teaches about its node kinds.

    - The smallest phrase of each kind, so a node can be replaced by the
      smallest thing of a compatible kind seen anywhere (an expression by `0`,
      a type by `int`), not only by its own descendants: the generic form of
      C-Vise's "replace by a constant" passes.
    - Which kinds stand in the same slot (same parent kind and field, or the
      same list): compatibility for grammars that ship no supertypes (the C++
      and Java wheels, every fallback grammar), added to the supertypes where
      a grammar has them.
    """

    PER_KIND = 2
    MAX_TOKENS = 3

    def __init__(self, grammar: Grammar) -> None:
        self._grammar = grammar
        self._phrases: dict[str, set[tuple[int, bytes]]] = {}
        self._slots: dict[str, set[tuple[str, str]]] = {}
        self._by_kind: dict[str, list[Replacement]] = {}
        self._stock: dict[str, list[Replacement]] = {}
        self._pairs: dict[tuple[str, str], bool] = {}
        self._learnt: bytes | None = None  # the text last learnt with its phrases

    def extended(self, parsed: Parsed) -> Catalog:
        """A copy that also knows the phrases and slots of `parsed`; learnt only if this
        catalog has not learnt that very text (a first sweep starts from the original its
        program's catalog was just learnt from: 14 ms on 8,800 JavaScript tokens)."""
        copy = self.copy()
        if not copy.learnt(parsed.text):
            copy.learn(parsed)
        return copy

    def copy(self) -> Catalog:
        """A catalog of its own that knows what this one knows."""
        copy = Catalog(self._grammar)
        copy._phrases = {kind: set(found) for kind, found in self._phrases.items()}
        copy._slots = {kind: set(found) for kind, found in self._slots.items()}
        copy._by_kind = self._by_kind
        copy._learnt = self._learnt
        return copy

    def learnt(self, text: bytes) -> bool:
        """Whether the text this catalog learnt last with its phrases is `text`."""
        return text is self._learnt or text == self._learnt

    def learn(self, parsed: Parsed, *, phrases: bool = True) -> None:
        """Take the phrases and slots of `parsed`; only its slots when not `phrases`."""
        if phrases:
            self._learnt = parsed.text
        pending = [parsed.tree.root_node]
        while pending:
            node = pending.pop()
            for index, child in enumerate(node.children):
                if not child.is_named or "comment" in child.type:
                    continue
                pending.append(child)
                field_name = node.field_name_for_child(index) or "*"
                self._slots.setdefault(child.type, set()).add((node.type, field_name))
            if not phrases:
                continue
            tokens = parsed.tokens_in(node.start_byte, node.end_byte)
            if 0 < tokens <= self.MAX_TOKENS and not node.has_error:
                phrase = parsed.text[node.start_byte : node.end_byte]
                self._phrases.setdefault(node.type, set()).add((tokens, phrase))
        self._by_kind = {
            kind: [
                Replacement(tokens, phrase, kind)
                for tokens, phrase in sorted(found, key=lambda f: (f[0], len(f[1]), f[1]))[
                    : self.PER_KIND
                ]
            ]
            for kind, found in self._phrases.items()
        }
        self._stock.clear()
        self._pairs.clear()

    def share_slots(self, other: Catalog) -> None:
        """Take which kinds stand in the same slot from `other` too (its phrases stay its own)."""
        for kind, slots in other._slots.items():
            self._slots.setdefault(kind, set()).update(slots)
        self._stock.clear()
        self._pairs.clear()

    def compatible(self, kind: str, other: str) -> bool:
        """Whether a node of kind `other` may plausibly stand where a `kind` node stands."""
        known = self._pairs.get((kind, other))
        if known is None:
            known = self._grammar.compatible(kind, other) or bool(
                self._slots.get(kind, set()) & self._slots.get(other, set())
            )
            self._pairs[(kind, other)] = known
        return known

    def for_kind(self, kind: str) -> list[Replacement]:
        """Stock phrases of every kind compatible with `kind`, smallest first."""
        found = self._stock.get(kind)
        if found is None:
            found = sorted(
                replacement
                for other, replacements in self._by_kind.items()
                if self.compatible(kind, other)
                for replacement in replacements
            )
            self._stock[kind] = found
        return found


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
    pass), the lookahead of the sweep's last batches. `next_sweep`: the reducer of the
    sweep the caller runs after one that shrank the text; where the sweep's last batches
    look ahead then (its `opening`), instead of leaving a job idle until the sweep ends.
    """

    def __init__(
        self,
        current: Current,
        catalog: Catalog,
        then: Lookahead[bytes] | None = None,
        next_sweep: Callable[[], TreeReducer] | None = None,
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
        if node is None:
            return
        yield from self._offers(node, phase + 1)
        heap = list(self._heap)
        for child in node.named_children:
            _push(heap, parsed, child, len(log))
        yield from self._handed_out(heap, parsed, log)
        if len(self.current.text) < self._start_length:
            if self._next_sweep is not None:
                yield from self._next_sweep().opening()
        elif self._then is not None:
            yield from self._then()  # the sweep ends as it began: so does the caller's loop

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
