"""Tree differencing (Δ_T) between a seed and a variant parse tree, GumTree-style.

PPR's MinTdiff does not want a token diff: it wants subtree-level operations
(delete a seed subtree, insert a variant subtree, replace one by the other) so
it can minimise each unique subtree under its own property and try undoing each
replacement. This subpackage matches the two trees the way GumTree does
(Falleri et al., ASE'14) and derives those operations from the mapping.

Job: Δ_T and its operations, in modules that each import only those above:
- model: `FlatTree`, the operations, and `TreeDiff` (apply or undo any subset
  of the operations on the original texts);
- lcs: order-preserving alignments of two child lists;
- matcher: the three GumTree phases that map seed nodes to variant nodes;
- script: the operations of a finished mapping;
- diff: the entry points `diff_trees` and `diff_flat`.
What the rest of gitreduce uses is exported here.
May import: `gitreduce.core.edits` and tree_sitter's types. Never the token
alignment or pair states, git, processes, the oracle or the CLI.
"""

from gitreduce.pair.treediff.diff import diff_flat, diff_trees
from gitreduce.pair.treediff.model import (
    Deletion,
    FlatTree,
    Insertion,
    Move,
    Operation,
    Replacement,
    TreeDiff,
    Update,
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
