"""Pairwise reduction: a seed and a variant shrunk together, and their difference with them.

Job: the token alignment both programs share, the pair state and its views
for single-program passes, tree differencing, PPR (MinTdiff, MinLdiff,
MinCommonality) and Zeller's dd as a baseline.
May import: `gitreduce.passes`, `gitreduce.core`, `gitreduce.lang`. Never git,
processes, the oracle or the CLI.
"""
