"""Delete a name together with every construct that uses it.

Syntax-guided passes remove one subtree at a time, so a parameter survives as
long as a call passes an argument for it, and the argument survives as long as
the parameter exists. Taking out, in one candidate, every list element or
statement that mentions a name (its declaration included) breaks such knots
without language-specific rules: the generic cousin of C-Vise's
remove-unused-parameter and remove-unused-variable passes.
"""

from __future__ import annotations

from collections.abc import Iterator

import tree_sitter

from gitreduce.core.current import Current, deletion_spans, render_deletions
from gitreduce.lang.kinds import BLOCK_LIKE, STATEMENT_LIKE, is_identifier
from gitreduce.passes.tree import list_units

SEPARATOR = b","


def _in_comma_list(node: tree_sitter.Node) -> bool:
    return any(
        sibling is not None and sibling.type == "," and sibling.text == SEPARATOR
        for sibling in (node.prev_sibling, node.next_sibling)
    )


def enclosing_unit(leaf: tree_sitter.Node) -> tuple[tree_sitter.Node, bool] | None:
    """The nearest comma-list element (True) or statement (False) around `leaf`.

    An element of a block counts as a statement whatever its kind, so that a
    block's value in an expression language (Rust's tail `v` in `{ ..; v }`)
    goes alone rather than taking its whole function along.
    """
    node: tree_sitter.Node | None = leaf
    while node is not None and node.parent is not None:
        if _in_comma_list(node):
            return node, True
        statement_like = node.type.endswith(STATEMENT_LIKE) or (
            node.is_named and node.parent.type.endswith(BLOCK_LIKE)
        )
        if statement_like and node.parent.named_child_count > 1:
            return node, False
        node = node.parent
    return None


def unit_deletion_spans(units: list[tuple[tree_sitter.Node, bool]]) -> list[tuple[int, int]]:
    """Spans removing all `units`; the elements of one list are removed together, so
    that two neighbours never both claim the comma between them."""
    spans: list[tuple[int, int]] = []
    by_list: dict[tuple[int, int], tuple[tree_sitter.Node, set[int]]] = {}
    for node, is_element in units:
        parent = node.parent
        if not is_element or parent is None:
            spans.append((node.start_byte, node.end_byte))
            continue
        _, starts = by_list.setdefault((parent.start_byte, parent.end_byte), (parent, set()))
        starts.add(node.start_byte)
    for parent, starts in by_list.values():
        elements = list_units(parent)
        kept = [i for i, unit in enumerate(elements) if unit.start not in starts]
        spans.extend(deletion_spans(elements, kept))
    return spans


def name_candidates(current: Current) -> Iterator[bytes]:
    """One candidate per name used more than once: every unit mentioning it deleted."""
    parsed = current.parsed
    assert parsed is not None
    occurrences: dict[bytes, list[tree_sitter.Node]] = {}
    pending = [parsed.tree.root_node]
    while pending:
        node = pending.pop()
        if is_identifier(node):
            occurrences.setdefault(node.text or b"", []).append(node)
        else:
            pending.extend(node.children)
    names = sorted(
        (name for name, found in occurrences.items() if len(found) > 1),
        key=lambda name: (-len(occurrences[name]), name),
    )
    for name in names:
        units = [enclosing_unit(leaf) for leaf in occurrences[name]]
        if all(unit is not None for unit in units):
            spans = unit_deletion_spans([unit for unit in units if unit is not None])
            yield render_deletions(parsed.text, outermost_spans(spans))


def outermost_spans(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Spans nested in an earlier, wider one dropped; overlapping ones merged."""
    result: list[tuple[int, int]] = []
    for start, end in sorted(spans, key=lambda span: (span[0], -span[1])):
        if result and start < result[-1][1]:
            if end > result[-1][1]:
                result[-1] = (result[-1][0], end)
            continue
        result.append((start, end))
    return result


def delete_names(current: Current) -> bool:
    """Try each name's deletion in turn (re-deriving after every success); True if any went."""
    return current.try_until_none(name_candidates)
