"""Generator-based reduction (GReduce): reduce a generator's execution, not its output.

When a failing input came from a random generator, the generator knows what
a valid input is; the reducer does not. Reducing the generator's recorded
random decisions, and re-running the generator along the reduced record,
keeps every candidate an input the generator itself could have made.

- random_source.py: the `random.Random` the generator draws from, which
  hands every draw to a hook (recorded or forced), with the portable forms
  of what it drew (Pick) and what it could have drawn (Domain);
- trace.py: the trace model: decisions (Dec(O)) with their call stacks
  (Prog(O)), the loop, iteration and block regions around them, the calls;
- bytecode.py: what a function's bytecode says about loops whose trip count
  may be a decision and branches guarded by one, and which code is traced;
- recorder.py: run the generator once under instrumentation (`execute`) and
  record its trace;
- plan.py: reduced traces: the edits a trace allows (removing iterations and
  blocks, hoisting calls, simplifying values) and the plan of kept decisions
  they give;
- replay.py: trace-aligned re-execution of a plan, with the halt, bypass and
  re-align strategies for decisions that cannot be aligned;
- target.py: load a generator from a file or a module, afresh for every run;
- pool.py: the worker processes that record and replay the generator for the
  session, both ends of their pipe protocol, timeouts;
- search.py: which iterations and blocks to remove, tree-based (HDD) or
  sequence-based (ddmin), then which calls to hoist and which decisions to
  simplify.

The session (sessions/generate.py) adds the oracle, the engine and the
verdict cache; cli/generate.py is `git reduce generate`.

Nothing is imported here: worker processes import pool.py and what it needs
alone, and should not pay for the engine, the oracle and pygit2 at every
start.
"""

DEFAULT_GENERATOR_TIMEOUT = 10.0
"""Seconds a generator may take for the original run, unless the user says otherwise."""
