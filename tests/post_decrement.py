"""The stand-in bug the pair tests share, and a seed and variant that hold it.

The variant fails while it assigns a post-decrement to another variable
(`x = y--`, where the seed has `y = x - 1`); the variant's other changes are
ones the failure does not need.
"""

from __future__ import annotations

import re

SEED = b"""#include <stdio.h>

struct point { int x; int y; };

int helper(int a, int b) { return a * b + 3; }

int unrelated(void) { int q = 4; return q * q; }

int main(void) {
    int x = 1, y = 2;
    printf("%d\\n", helper(x, y));
    for (int i = 0; i < 10; i++) {
        x += helper(i, y);
        y += i;
    }
    y = x - 1;
    return y;
}
"""


def mutated(seed: bytes) -> bytes:
    """The variant of `seed`: the bug, plus a change inside `unrelated` and an insertion
    inside a declaration, neither of which the failure needs."""
    return (
        seed.replace(b"y = x - 1;", b"x = y--;")
        .replace(b"return q * q;", b"return q + q * 2;")
        .replace(b"int x = 1, y = 2;", b"int x = 1, y = 2, z = 7;")
    )


VARIANT = mutated(SEED)


def flat(text: bytes) -> bytes:
    return re.sub(rb"\s+", b"", text)


def bug(text: bytes) -> bool:
    """The stand-in compiler bug: a post-decrement assigned to another variable."""
    return re.search(rb"\w=\w--;", flat(text)) is not None
