"""The oracle: run the user's test on one candidate, classify the run, name the failure.

Job: the process boundary (scratch directories, timeouts, process groups),
the test's fingerprint, calibration of the originals, failure signatures.
May import: `gitreduce.core` (outcomes, errors). Never git or the CLI.
"""
