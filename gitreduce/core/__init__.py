"""The reduction core: outcomes, edits as data, ddmin, the engine and the best text so far.

Job: the one road from a candidate to a verdict (`engine`), the abstract
search (`ddmin`), and `Current`, the smallest interesting text a pass works on.
May import: `gitreduce.lang` (a `Current` keeps its parse) and the standard
library's threads. Never git, processes, the oracle or the CLI: the engine
receives the test as a function.
"""
