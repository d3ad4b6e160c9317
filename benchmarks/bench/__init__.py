"""The benchmark runner behind ``benchmarks/run.py``, one module per job.

- `paths`: where the repository keeps the cases, baselines and token counter
- `cases`: finding cases on disk, checking them on this machine, running test.sh
- `measure`: running a tool in its own process group; clocks, load, test runs, tokens
- `results`: the records written to results.json and pairs.json
- `tools`: one adapter per compared reducer (gitreduce, cvise, shrinkray)
- `single`: single-program mode, every tool on every case
- `pairs`: pairwise mode (``--pairs``), git-reduce's algorithms on seed + variant
- `report`: Markdown tables, ratios and summaries, and the JSON payloads
"""
