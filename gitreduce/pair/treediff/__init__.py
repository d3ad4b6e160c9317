"""Tree differencing (Δ_T) between a seed and a variant parse tree, GumTree-style.

Job: match two parse trees and report the subtree-level operations PPR's
MinTdiff works with (`diff_trees`, `TreeDiff`). What the rest of gitreduce
uses is exported here.
May import: `gitreduce.core.edits` and tree_sitter's types. Never the token
alignment or pair states, git, processes, the oracle or the CLI.
"""

from gitreduce.pair.treediff.matcher import (
    Deletion,
    FlatTree,
    Insertion,
    Move,
    Operation,
    Replacement,
    TreeDiff,
    Update,
    diff_flat,
    diff_trees,
)

__all__ = [
    "Deletion",
    "FlatTree",
    "Insertion",
    "Move",
    "Operation",
    "Replacement",
    "TreeDiff",
    "Update",
    "diff_flat",
    "diff_trees",
]
