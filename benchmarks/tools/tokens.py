#!/usr/bin/env python3
# Provenance: the reference token counter of the public benchmark kit that the cases in
# benchmarks/cases come from (the kit's tools/tokens.py), copied verbatim below this
# comment. The sizes in benchmarks/cases/*/case.json, benchmarks/baselines/ and
# benchmarks/results/ were counted with it, and benchmarks/run.py counts with it
# (--tokens-py names another counter): change how it counts, and no figure compares any
# more. Kept as it came, so ruff leaves it alone (extend-exclude in pyproject.toml).
"""Count tokens of source files the way every benchmark figure here is measured.

A token is a leaf of the tree-sitter parse tree that is not a comment, parsed
with the official grammar wheels (pip install tree-sitter diff-match-patch
tree-sitter-c tree-sitter-cpp tree-sitter-rust tree-sitter-javascript
tree-sitter-python).  With two files it also prints the
token-level difference size: the number of tokens inserted plus deleted by a
minimal token diff (diff-match-patch over token lists), the PPR paper's
"difference size".

usage: tokens.py FILE            -> N
       tokens.py SEED VARIANT    -> seed_tokens variant_tokens diff_tokens
"""
import os
import sys

import importlib

import diff_match_patch as dmp_module
import tree_sitter

EXT = {
    ".c": "c", ".h": "c", ".i": "c", ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".hpp": "cpp",
    ".rs": "rust", ".js": "javascript", ".mjs": "javascript", ".py": "python",
    ".C": "cpp",
}


def parser(lang):
    module = importlib.import_module("tree_sitter_" + lang)
    return tree_sitter.Parser(tree_sitter.Language(module.language()))


def tokens(path):
    lang = EXT.get(os.path.splitext(path)[1])
    data = open(path, "rb").read()
    if lang is None:  # plain text: whitespace-separated words
        return data.split()
    tree = parser(lang).parse(data)
    out, stack = [], [tree.root_node]
    while stack:
        n = stack.pop()
        if n.child_count == 0:
            if "comment" not in n.type and n.end_byte > n.start_byte:
                out.append(data[n.start_byte:n.end_byte])
        else:
            stack.extend(reversed(n.children))
    return out


def diff_size(a, b):
    """Tokens inserted + deleted by a minimal diff of two token lists."""
    table = {}
    enc = lambda toks: "".join(chr(0x100 + table.setdefault(t, len(table))) for t in toks)
    d = dmp_module.diff_match_patch()
    d.Diff_Timeout = 0
    return sum(len(text) for op, text in d.diff_main(enc(a), enc(b), False) if op != 0)


if __name__ == "__main__":
    if len(sys.argv) == 2:
        print(len(tokens(sys.argv[1])))
    elif len(sys.argv) == 3:
        a, b = tokens(sys.argv[1]), tokens(sys.argv[2])
        print(len(a), len(b), diff_size(a, b))
    else:
        sys.exit(__doc__)
