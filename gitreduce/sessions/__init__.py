"""Sessions: one reduction wired end to end, one module per mode.

Job: read the inputs, calibrate the originals, build the engine over the
oracle and the verdict cache, run the algorithm, record the result, and
return a summary object the reporters render.
May import: every layer below (git, oracle, generator, pair, passes, core,
lang). Never the CLI: sessions print nothing; progress goes to callbacks.
"""
