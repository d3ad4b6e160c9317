"""Single-program passes and the schedule that runs them (see docs/passes.md).

Job: one module per pass family, each turning the current text into ordered
batches of candidates; `schedule` declares which passes run, in which order,
until when.
May import: `gitreduce.core` and `gitreduce.lang`. Never git, processes,
the oracle or the CLI.
"""
