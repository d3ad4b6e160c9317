"""Pairwise reduction: a seed and a variant shrunk together, and their difference with them.

Job: the token alignment both programs share, the pair state and its views
for single-program passes, tree differencing, PPR (MinTdiff, MinLdiff,
MinCommonality) and Zeller's dd as a baseline.
May import: `gitreduce.passes`, `gitreduce.core`, `gitreduce.lang`. Never git,
processes, the oracle or the CLI.
"""

from __future__ import annotations

from typing import Literal

PairAlgorithm = Literal["ppr", "dd", "dd-empty"]
PAIR_ALGORITHMS: dict[str, PairAlgorithm] = {"ppr": "ppr", "dd": "dd", "dd-empty": "dd-empty"}
"""The pairwise algorithms by the names `--algorithm` takes: PPR, Zeller's dd over the
diff's hunks, and the PPR paper's baseline (dd over the variant's tokens from nothing).
Here, with nothing else, so the command line checks the name without loading them."""
