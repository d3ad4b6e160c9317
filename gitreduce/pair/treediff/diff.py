"""Δ_T's entry points: flatten two parse trees, match them, and return the edit script.

The matching phases allocate tens of thousands of small lists, so the
collector is paused while they run.
"""

from __future__ import annotations

import gc

import tree_sitter

from gitreduce.pair.treediff.matcher import Matcher
from gitreduce.pair.treediff.model import Deletion, FlatTree, Operation, TreeDiff
from gitreduce.pair.treediff.script import edit_script

MIN_HEIGHT = 2
MIN_DICE = 0.5


def diff_flat(
    seed: FlatTree,
    variant: FlatTree,
    *,
    min_height: int = MIN_HEIGHT,
    min_dice: float = MIN_DICE,
) -> TreeDiff:
    """Match two already-flattened trees and derive the edit script (in variant order)."""
    enabled = gc.isenabled()
    gc.disable()  # tens of thousands of small lists would trigger full collections
    try:
        matcher = Matcher(seed, variant, min_height, min_dice)
        matcher.top_down()
        matcher.bottom_up()
        matcher.drop_stray_hints()
        operations = edit_script(matcher)
    finally:
        if enabled:
            gc.enable()
    operations.sort(key=_variant_position)
    return TreeDiff(seed, variant, matcher.ms, operations)


def _variant_position(op: Operation) -> tuple[int, int]:
    if isinstance(op, Deletion):
        return (op.variant_anchor, op.variant_anchor)
    return op.variant_span


def diff_trees(
    seed_tree: tree_sitter.Tree,
    seed_text: bytes,
    variant_tree: tree_sitter.Tree,
    variant_text: bytes,
    *,
    min_height: int = MIN_HEIGHT,
    min_dice: float = MIN_DICE,
) -> TreeDiff:
    """Δ_T(seed, variant): GumTree mapping plus subtree-level operations.

    Both trees must come from the same grammar (kinds are compared by id) and
    from exactly the texts given (spans and leaf labels are sliced from them).
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        seed = FlatTree(seed_tree, seed_text)
        variant = FlatTree(variant_tree, variant_text)
    finally:
        if enabled:
            gc.enable()
    return diff_flat(seed, variant, min_height=min_height, min_dice=min_dice)
