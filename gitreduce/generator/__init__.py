"""Generator-based reduction (GReduce): reduce a generator's execution, not its output.

When a failing input came from a random generator, the generator knows what
a valid input is; the reducer does not. Reducing the generator's recorded
random decisions, and re-running the generator along the reduced record,
keeps every candidate an input the generator itself could have made.

- trace.py: run the generator once under instrumentation; record each random
  decision (Dec(O)) with its call stack (Prog(O)), and recognise loops whose
  trip count is a decision and branches guarded by one;
- replay.py: trace-aligned re-execution of a reduced trace, with the halt,
  bypass and re-align strategies for decisions that cannot be aligned, and
  the worker loop that runs generators in a subprocess;
- reduce.py: which iterations and blocks to remove, tree-based (HDD) or
  sequence-based (ddmin), then which calls to hoist and which decisions to
  simplify;
- session.py: workers, oracle, engine, verdict cache and result recording;
- cli.py: `git reduce generate`.

Nothing is imported here: worker processes import replay.py alone, and should
not pay for the engine, the oracle and pygit2 at every start.
"""
