"""What a program teaches about its node kinds: the stock phrases and slots hoisting uses.

The tree sweeps (`passes/tree.py`) replace a node by a descendant or a small
phrase of a compatible kind; which kinds are compatible, and which phrases
there are, is learnt from the program's own trees (`Catalog`), once per text
(`catalog_of`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

from gitreduce.lang.grammars import Grammar
from gitreduce.lang.syntax import Parsed


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

    def extended(self, parsed: Parsed, *, phrases: bool = True) -> Catalog:
        """A copy that also knows the phrases and slots of `parsed` (only its slots without
        `phrases`); learnt only if this catalog has not learnt that very text (a first
        sweep starts from the original its program's catalog was just learnt from: 14 ms
        on 8,800 JavaScript tokens)."""
        copy = self.copy()
        if not copy.learnt(parsed.text):
            copy.learn(parsed, phrases=phrases)
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
