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

from gitreduce.current import Current, render_deletions

STATEMENT_LIKE = ("statement", "declaration", "definition", "item", "field_declaration")
SEPARATOR = b","


def _is_identifier(node: tree_sitter.Node) -> bool:
    return node.child_count == 0 and node.is_named and "identifier" in node.type


def _element_spans(node: tree_sitter.Node) -> list[tuple[int, int]] | None:
    """The spans that delete `node` as an element of a comma list, separator included."""
    previous, following = node.prev_sibling, node.next_sibling
    if following is not None and following.type == "," and following.text == SEPARATOR:
        return [(node.start_byte, following.end_byte)]
    if previous is not None and previous.type == "," and previous.text == SEPARATOR:
        return [(previous.start_byte, node.end_byte)]
    return None


def _enclosing_unit(leaf: tree_sitter.Node) -> list[tuple[int, int]] | None:
    """Spans deleting the nearest comma-list element or statement around `leaf`."""
    node: tree_sitter.Node | None = leaf
    while node is not None and node.parent is not None:
        spans = _element_spans(node)
        if spans is not None:
            return spans
        if node.type.endswith(STATEMENT_LIKE) and node.parent.named_child_count > 1:
            return [(node.start_byte, node.end_byte)]
        node = node.parent
    return None


def name_candidates(current: Current) -> Iterator[bytes]:
    """One candidate per name used more than once: every unit mentioning it deleted."""
    parsed = current.parsed
    assert parsed is not None
    occurrences: dict[bytes, list[tree_sitter.Node]] = {}
    pending = [parsed.tree.root_node]
    while pending:
        node = pending.pop()
        if _is_identifier(node):
            occurrences.setdefault(node.text or b"", []).append(node)
        else:
            pending.extend(node.children)
    names = sorted(
        (name for name, found in occurrences.items() if len(found) > 1),
        key=lambda name: (-len(occurrences[name]), name),
    )
    for name in names:
        spans: list[tuple[int, int]] = []
        for leaf in occurrences[name]:
            unit = _enclosing_unit(leaf)
            if unit is None:
                break
            spans.extend(unit)
        else:
            yield render_deletions(parsed.text, _outermost(spans))


def _outermost(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Drop spans nested in (or overlapping) an earlier, wider one."""
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
    progress = False
    while (
        current.parsed is not None and current.try_candidates(name_candidates(current)) is not None
    ):
        progress = True
    return progress
