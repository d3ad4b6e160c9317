"""The node-kind vocabulary the passes share: field names and kind-name patterns.

Passes hold no per-language tables. They recognise what they work on by the
field names the tree-sitter grammars share (`body`, `parameters`,
`return_type`) and by patterns in kind names (`*_statement`, `*identifier`),
so one rule serves every grammar that follows the common conventions. The
vocabulary lives here, once, so a grammar that names a thing differently is
taught in one place.
"""

from __future__ import annotations

import tree_sitter

# Kind-name endings of a statement-like unit: deleting one leaves a valid list.
STATEMENT_LIKE = ("statement", "declaration", "definition", "item", "field_declaration")
# Kind-name endings of a block whose every named child is a statement.
BLOCK_LIKE = ("block", "compound_statement")
# Kind-name endings of a list of statements or declarations: a block, or the body
# of a struct, class, impl or namespace.
STATEMENT_LISTS = (*BLOCK_LIKE, "declaration_list", "statement_list", "_body")
# Fields of a function or type that hold its parameter lists, and of a call or
# type use that hold the matching argument lists, in the same order.
PARAMETER_FIELDS = ("parameters", "type_parameters")
ARGUMENT_FIELDS = ("arguments", "type_arguments")
# Declaration kinds that declare variables (JavaScript's lexical_declaration, Go's
# var_declaration, Rust's let_declaration, Lua's local variable_declaration), and
# the keywords that introduce them.
VARIABLE_DECLARATIONS = ("variable", "var_", "lexical", "let", "local", "property")
VARIABLE_KEYWORDS = ("let", "var", "local")
# Fields that hold a function's result type when the grammar names it after the
# parameters (Rust, Go, TypeScript, Python); C, C++ and Java declare it in front.
RESULT_FIELDS = ("return_type", "result")
DECLARED_TYPE_FIELD = "type"
RETURNS = ("return_statement", "return_expression")
# What may end a block as its value (Rust's tail expression), and what may not.
TAIL_ENDINGS = ("expression", "identifier", "literal", "invocation")
NOT_A_TAIL = ("statement", "declaration", "definition", "item", "comment")


def is_identifier(node: tree_sitter.Node) -> bool:
    """A name: a named leaf whose kind says identifier (type_identifier, field_identifier...)."""
    return node.child_count == 0 and node.is_named and "identifier" in node.type


def is_function(node: tree_sitter.Node) -> bool:
    """Anything with a body and parameters of its own: functions, methods, closures, lambdas."""
    if node.child_by_field_name("body") is None:
        return False
    if node.child_by_field_name("parameters") is not None:
        return True
    declarator = node.child_by_field_name("declarator")
    return declarator is not None and "function" in declarator.type
