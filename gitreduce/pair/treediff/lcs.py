"""Order-preserving alignments of two sequences, for the matcher's child lists.

`lcs` pairs equal keys of two child lists in order (weighted by subtree size
when the lists are small enough for an exact table, difflib's matcher beyond),
and `heaviest_increasing` keeps the order-preserving chain of already matched
children that carries the most matched content.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence

# Largest gap (seed children x variant children) aligned with an exact LCS table.
MAX_LCS_CELLS = 4096


def heaviest_increasing(
    pairs: list[tuple[int, int]], weights: list[int], bound: int
) -> list[tuple[int, int]]:
    """The subsequence of `pairs` (sorted by first, second < bound) strictly increasing in
    second with the largest total weight: a Fenwick tree of prefix maxima, O(k log bound)."""
    tree_value = [0] * (bound + 1)
    tree_index = [-1] * (bound + 1)
    previous = [-1] * len(pairs)
    totals = [0] * len(pairs)
    for k, (_, j) in enumerate(pairs):
        best, best_index = 0, -1
        position = j  # prefix maximum over seconds < j (Fenwick positions 1..j)
        while position > 0:
            if tree_value[position] > best:
                best, best_index = tree_value[position], tree_index[position]
            position -= position & -position
        totals[k] = best + weights[k]
        previous[k] = best_index
        position = j + 1
        while position <= bound:
            if totals[k] > tree_value[position]:
                tree_value[position] = totals[k]
                tree_index[position] = k
            position += position & -position
    k = max(range(len(pairs)), key=totals.__getitem__) if pairs else -1
    chain: list[tuple[int, int]] = []
    while k >= 0:
        chain.append(pairs[k])
        k = previous[k]
    chain.reverse()
    return chain


def lcs(
    first: Sequence[object],
    second: Sequence[object],
    first_sizes: Sequence[int] | None = None,
    second_sizes: Sequence[int] | None = None,
) -> list[tuple[int, int]]:
    """Index pairs of a common subsequence of the keys.

    With sizes, small gaps get the alignment of the largest total matched size
    (min of the two sizes per pair), so a statement pairs with its edited self
    rather than with a smaller look-alike earlier in the list. Large gaps are
    trimmed of equal ends and handed to difflib, which is unweighted.
    """
    n, m = len(first), len(second)
    if not n or not m:
        return []
    if n * m <= MAX_LCS_CELLS:
        return _lcs_table(first, second, first_sizes, second_sizes)
    head = 0
    while head < n and head < m and first[head] == second[head]:
        head += 1
    tail = 0
    while tail < n - head and tail < m - head and first[n - 1 - tail] == second[m - 1 - tail]:
        tail += 1
    pairs = [(k, k) for k in range(head)]
    a = first[head : n - tail]
    b = second[head : m - tail]
    if a and b:
        matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
        pairs.extend(
            (block.a + k + head, block.b + k + head)
            for block in matcher.get_matching_blocks()
            for k in range(block.size)
        )
    pairs.extend((n - tail + k, m - tail + k) for k in range(tail))
    return pairs


def _lcs_table(
    a: Sequence[object],
    b: Sequence[object],
    a_sizes: Sequence[int] | None,
    b_sizes: Sequence[int] | None,
) -> list[tuple[int, int]]:
    n, m = len(a), len(b)
    if a_sizes is None or b_sizes is None:
        a_sizes = [1] * n
        b_sizes = [1] * m
    table = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        row, below = table[i], table[i + 1]
        item = a[i]
        for j in range(m - 1, -1, -1):
            best = below[j] if below[j] >= row[j + 1] else row[j + 1]
            if item == b[j]:
                gain = below[j + 1] + min(a_sizes[i], b_sizes[j])
                if gain > best:
                    best = gain
            row[j] = best
    pairs: list[tuple[int, int]] = []
    i = j = 0
    while i < n and j < m:
        if a[i] == b[j] and table[i][j] == table[i + 1][j + 1] + min(a_sizes[i], b_sizes[j]):
            pairs.append((i, j))
            i += 1
            j += 1
            continue
        if table[i + 1][j] >= table[i][j + 1]:
            i += 1
        else:
            j += 1
    return pairs
