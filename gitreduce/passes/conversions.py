"""Structure form conversion (SFC): a statement rewritten into a smaller form of another
kind, where no deletion of its own tokens leads.

Deletions and hoisting already turn an `if`/`else` into either branch or into
its `if` alone, and a loop into its body. What they cannot reach is a form
that spells the construct with a different keyword: `for (; c;) s` keeps its
two `;` for good, while `while (c) s` says the same with two tokens fewer;
and an `if (c) s` or `while (c) s` whose statement the bug does not need
keeps its condition only as an expression statement `c;`, which hoisting
never offers (an expression does not stand where a statement stands).
Conversions are found by field names (`condition`, `body`), so every grammar
whose `for` has a condition gets them (C, C++, Java, JavaScript, C#...); the
syntax check drops a conversion the grammar does not spell that way.
"""

from __future__ import annotations

from collections.abc import Iterator

import tree_sitter

from gitreduce.core import edits
from gitreduce.core.current import Current

CONDITIONAL_WORDS = ("if", "while", "for")


def _with_conditions(root: tree_sitter.Node) -> Iterator[tree_sitter.Node]:
    """Conditionals and loops with a `condition` field, outermost first: statements,
    or expressions in the grammars where they are (Rust), but no `c ? a : b`."""
    pending = [root]
    while pending:
        node = pending.pop()
        pending.extend(reversed(node.named_children))
        kind = node.type
        if any(word in kind for word in CONDITIONAL_WORDS) and node.child_by_field_name(
            "condition"
        ):
            yield node


def _bare(condition: tree_sitter.Node) -> tree_sitter.Node:
    """The expression inside a condition's own parentheses (C's `parenthesized_expression`)."""
    inner = condition.named_children
    if condition.children and condition.children[0].type == "(" and len(inner) == 1:
        return inner[0]
    return condition


def _forms(statement: tree_sitter.Node, text: bytes) -> list[bytes]:
    condition = statement.child_by_field_name("condition")
    assert condition is not None
    expression = _bare(condition)
    spelled = text[expression.start_byte : expression.end_byte]
    forms = [spelled + b";"]
    body = statement.child_by_field_name("body")
    if "for" in statement.type and body is not None:
        forms.insert(0, b"while (" + spelled + b") " + text[body.start_byte : body.end_byte])
    return forms


def conversion_candidates(current: Current) -> Iterator[bytes]:
    """Each loop with a condition as a `while` over it, and each conditional statement
    as its condition alone; outermost first."""
    parsed = current.parsed
    assert parsed is not None
    text = parsed.text
    for statement in _with_conditions(parsed.tree.root_node):
        for form in _forms(statement, text):
            edit = edits.Edit(statement.start_byte, statement.end_byte, form)
            candidate = edits.apply(text, [edit])
            if len(candidate) < len(text):
                yield candidate


def convert_structures(current: Current) -> bool:
    """Take the first interesting conversion, derive again, until none is; True if any."""
    return current.try_until_none(conversion_candidates)
