"""Identifier replacement (Vulcan): every use of a name redirected to another name,
so that the first name's declaration goes.

Deletion passes stop at a program in which each declaration is still used:
a helper function called once, a second variable that only feeds the first.
Vulcan's remedy is to replace a name by another one of the same kind in
scope; the declaration then has no use left. Here both steps form one
candidate, so that it is smaller than what it came from and the usual
"smaller and still failing" rule judges it: the unit around the name's first
occurrence (its declaration, in declare-before-use languages) is deleted and
every other occurrence renamed, consistently in the whole program.

A variable (a name of the grammar's plain `identifier` kind, never called) has
one more stand-in after the names: the literal `0`, which every supported
language spells alike and which needs no declaration of its own. A pointer
only passed along, a counter only compared, a global only read then go even
where no other variable would type-check in their place: C-Reduce gets there
by constant propagation; here it is one more candidate of the same rule.

Kinds come from the grammar: a name may stand in for another only if it occurs
as a leaf of the same kind (`identifier`, `type_identifier`,
`field_identifier`...), and a function only for a function of the same arity
(argument counts of its calls, parameter counts of its declaration; a name
with neither is no function and stands only for another such name). Scope is
approximated without a symbol table: a name
first seen inside a function is only offered for uses inside that function
after its first occurrence; a name first seen outside every function is
offered everywhere.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import tree_sitter

from gitreduce.core import edits
from gitreduce.core.current import Current, deletion_edits
from gitreduce.lang.kinds import (
    ARGUMENT_FIELDS,
    PARAMETER_FIELDS,
    is_function,
    is_identifier,
)
from gitreduce.passes.names import enclosing_unit, unit_deletion_spans

T = TypeVar("T")

# Stand-ins tried per name; the rest would cost a test each for little gain.
MAX_STAND_INS = 4

# The literal a variable's uses may become, and the one leaf kind it may replace:
# `identifier` is what C, C++, Rust, JavaScript, Python, Go and Java call a name
# read as a value (types, fields and labels have kinds of their own).
LITERAL_STAND_IN = b"0"
VALUE_KIND = "identifier"


@dataclass
class Name:
    """An identifier by its spelling, with every leaf that spells it, in source order."""

    text: bytes
    leaves: list[tree_sitter.Node] = field(default_factory=list)

    @property
    def kinds(self) -> set[str]:
        return {leaf.type for leaf in self.leaves}

    @property
    def first(self) -> tree_sitter.Node:
        return self.leaves[0]

    @property
    def arities(self) -> set[int]:
        """How many arguments its calls pass and its declarations take: empty for a
        name never called or declared with parameters (a variable, a type)."""
        return {n for n in (_arity(leaf) for leaf in self.leaves) if n is not None}


def _arity(leaf: tree_sitter.Node) -> int | None:
    """The argument count where `leaf` is called (`f(a, b)`: the `function` or `name`
    of a node with `arguments`), or the parameter count where it is declared with
    parameters beside it; None elsewhere."""
    parent = leaf.parent
    if parent is None:
        return None
    lists = [parent.child_by_field_name(f) for f in (*ARGUMENT_FIELDS, *PARAMETER_FIELDS)]
    found = [items for items in lists if items is not None and items.start_byte >= leaf.end_byte]
    if not found:
        return None
    # C's `f(void)` declares no parameter
    return sum(
        1 for item in found[0].named_children if "comment" not in item.type and item.text != b"void"
    )


def identifier_names(root: tree_sitter.Node) -> dict[bytes, Name]:
    """Every identifier leaf, grouped by its text, in source order."""
    found: dict[bytes, Name] = {}
    pending = [root]
    while pending:
        node = pending.pop()
        if is_identifier(node):
            text = node.text or b""
            found.setdefault(text, Name(text)).leaves.append(node)
        else:
            pending.extend(reversed(node.children))
    return found


def scope_of(leaf: tree_sitter.Node) -> tuple[int, int] | None:
    """The byte range a name first seen at `leaf` is visible in: the function whose
    parameters or body hold it, from `leaf` on, or None (everywhere) for a name no
    function holds (a function's own name is its surroundings')."""
    node = leaf.parent
    while node is not None:
        if is_function(node) and any(
            part.start_byte <= leaf.start_byte < part.end_byte for part in _inner_parts(node)
        ):
            return leaf.start_byte, node.end_byte
        node = node.parent
    return None


def parameter_list(function: tree_sitter.Node) -> tree_sitter.Node | None:
    """A function's parameter list (inside its declarator, in C and C++)."""
    declarator = function.child_by_field_name("declarator")
    return function.child_by_field_name("parameters") or (
        declarator.child_by_field_name("parameters") if declarator is not None else None
    )


def _inner_parts(function: tree_sitter.Node) -> list[tree_sitter.Node]:
    """A function's body and parameter list."""
    parts = [function.child_by_field_name("body"), parameter_list(function)]
    return [part for part in parts if part is not None]


def same_kind(other: Name, name: Name, kinds: set[str]) -> bool:
    """Whether `other` may stand in for `name` at uses of `kinds`: another name that occurs
    as a leaf of each of those kinds, a function of a matching arity for a function."""
    arities = name.arities
    return (
        other.text != name.text
        and kinds <= other.kinds
        and bool(arities) == bool(other.arities)
        and bool(arities & other.arities or arities == other.arities)
    )


def stand_in_order(other: Name) -> tuple[int, int, bytes]:
    """Most promising stand-ins first: the most used (likeliest to be what the failure
    needs anyway), then the shortest."""
    return -len(other.leaves), len(other.text), other.text


def visible(stand_in: Name, uses: list[tree_sitter.Node]) -> bool:
    """Whether `stand_in`, as first seen, is in scope at every one of `uses`."""
    scope = scope_of(stand_in.first)
    if scope is None:
        return True
    return all(scope[0] <= use.start_byte and use.end_byte <= scope[1] for use in uses)


def _written(use: tree_sitter.Node) -> bool:
    """Whether `use` is a place a value is stored (`x = ...`, `x++`): a literal there
    parses, and only the compiler would refuse it, at the cost of a test."""
    parent = use.parent
    if parent is None:
        return False
    if "update" in parent.type:
        return True
    return "assignment" in parent.type and parent.child_by_field_name("left") == use


def takes_literal(name: Name, uses: list[tree_sitter.Node]) -> bool:
    """Whether every use of `name` is a value the literal stand-in may replace."""
    return (
        not name.arities
        and all(use.type == VALUE_KIND for use in uses)
        and not any(_written(use) for use in uses)
    )


def _renamings(
    name: Name, names: dict[bytes, Name]
) -> Iterator[tuple[bytes, list[tuple[int, int]], list[tree_sitter.Node]]]:
    """(stand-in, declaration spans, uses to rename) for `name`, most promising first:
    the names of its kind in scope, then, for a variable, the literal."""
    unit = enclosing_unit(name.first)
    if unit is None:
        return
    declaration = unit[0]
    start, end = declaration.start_byte, declaration.end_byte
    uses = [leaf for leaf in name.leaves if not (start <= leaf.start_byte < end)]
    if not uses:
        return
    kinds = {use.type for use in uses}
    stand_ins = [
        other
        for other in names.values()
        if same_kind(other, name, kinds)
        and not (start <= other.first.start_byte < end)
        and visible(other, uses)
    ]
    stand_ins.sort(key=stand_in_order)
    spans = unit_deletion_spans([unit])
    for other in stand_ins[:MAX_STAND_INS]:
        yield other.text, spans, uses
    if takes_literal(name, uses):
        yield LITERAL_STAND_IN, spans, uses


def replacement_plan(
    current: Current, settled: frozenset[bytes] = frozenset()
) -> list[tuple[bytes, bytes]]:
    """(name, candidate) per name not `settled` (most used first), its declaration
    deleted and its uses renamed to each stand-in in turn; only candidates smaller
    than the current text."""
    parsed = current.parsed
    assert parsed is not None
    text = parsed.text
    names = identifier_names(parsed.tree.root_node)
    order = sorted(names.values(), key=lambda name: (-len(name.leaves), name.first.start_byte))
    plan: list[tuple[bytes, bytes]] = []
    for name in order:
        if name.text in settled:
            continue
        for stand_in, spans, uses in _renamings(name, names):
            changes = deletion_edits(text, spans)
            deleted = [(change.start, change.end) for change in changes]
            changes += [
                edits.Edit(use.start_byte, use.end_byte, stand_in)
                for use in uses
                if not any(a <= use.start_byte < b for a, b in deleted)
            ]
            candidate = edits.apply(text, changes, renames=((name.text, stand_in),))
            if len(candidate) < len(text):
                plan.append((name.text, candidate))
    return plan


def first_identifiers(current: Current) -> list[bytes]:
    """The candidates `replace_identifiers` tries first: its plan with nothing settled yet."""
    if current.parsed is None:
        return []
    return [candidate for _, candidate in replacement_plan(current, frozenset())]


def replace_identifiers(current: Current) -> bool:
    """Take the first interesting replacement, plan again, until none is; True if any.
    A plan that takes nothing ends the pass: `Current.then` is its lookahead."""
    if current.parsed is None:
        return False
    return take_replacements(
        lambda settled: replacement_plan(current, settled),
        lambda candidates: current.try_candidates(candidates, current.then),
    )


def take_replacements(
    plan: Callable[[frozenset[bytes]], Sequence[tuple[bytes, T]]],
    take: Callable[[Iterable[T]], int | None],
) -> bool:
    """Take the first interesting candidate of `plan` (name, candidate pairs, the names
    settled so far left out), plan again, until none is; True if any was taken.

    A name whose every stand-in failed is not tried again in this run: after
    each success the program differs, and its candidates with it, so retrying
    them would cost tests anew; the schedule runs the pass again when the
    rounds change the program.
    """
    settled: set[bytes] = set()
    progress = False
    while True:
        planned = plan(frozenset(settled))
        found = take(candidate for _, candidate in planned)
        if found is None:
            return progress
        settled.update(name for name, _ in planned[:found])
        progress = True
