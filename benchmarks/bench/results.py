"""The records the runner writes: one per tool run, one per pairwise run.

Job: `Result` (single-program mode) and `PairResult` (``--pairs``), whose
fields are the entries of results.json and pairs.json, and the names of
git-reduce's pairwise algorithms those records and their ratios are keyed by.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

PAIR_ALGORITHMS = ("ppr", "dd", "dd-empty")
# the two DD baselines and the key suffix of PPR's ratios against each
DD_BASELINES = {"dd": "dd", "dd-empty": "dd_empty"}


@dataclass
class Result:
    case: str
    tool: str
    initial_tokens: int | None = None
    final_tokens: int | None = None
    wall_seconds: float | None = None
    tests_run: int | None = None
    tests_counted: int | None = None  # by the counting wrapper, when one was used
    cache_hits: int | None = None
    oracle_seconds: float | None = None
    overhead_seconds: float | None = None
    overhead_percent: float | None = None
    overhead_source: str | None = None  # "stats" (the CLI's own) or "wrapper" (measured)
    final_test_sh_exit: int | None = None
    reproduces: bool = False
    timed_out: bool = False
    exit_status: int | None = None
    command: str = ""
    source: str = "run"  # "run" or "baseline"
    result_file: str | None = None
    log_file: str | None = None
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class PairResult:
    case: str
    algorithm: str
    language: str  # "c/c++", "rust", or the extension
    origin: str = "custom"  # "shared" (public cases), "fixtures" or "custom"
    # git-reduce's own report (--json): [before, after]
    seed_tokens: list[int | None] = field(default_factory=lambda: [None, None])
    variant_tokens: list[int | None] = field(default_factory=lambda: [None, None])
    diff_tokens: list[int | None] = field(default_factory=lambda: [None, None])
    # the runner's recount with tokens.py SEED VARIANT: [before, after]
    recount_seed_tokens: list[int | None] = field(default_factory=lambda: [None, None])
    recount_variant_tokens: list[int | None] = field(default_factory=lambda: [None, None])
    recount_diff_tokens: list[int | None] = field(default_factory=lambda: [None, None])
    count_mismatches: list[str] = field(default_factory=list)
    tests_run: int | None = None
    cache_hits: int | None = None
    wall_seconds: float | None = None  # measured by the runner (whole process)
    stats_wall_seconds: float | None = None  # git-reduce's own clock
    overhead_seconds: float | None = None
    overhead_percent: float | None = None  # overhead_seconds / stats_wall_seconds
    seed_test_sh_exit: int | None = None
    variant_test_sh_exit: int | None = None
    seed_good: bool = False
    variant_bad: bool = False
    checks_ok: bool = False
    interrupted: bool = False
    timed_out: bool = False
    timeout_seconds: float | None = None
    exit_status: int | None = None
    command: str = ""
    seed_result: str | None = None
    variant_result: str | None = None
    log_file: str | None = None
    loadavg_before: list[float] = field(default_factory=list)
    loadavg_after: list[float] = field(default_factory=list)
    loadavg_during: dict[str, Any] = field(default_factory=dict)  # LoadSampler.summary()
    error: str | None = None
    stats: dict[str, Any] = field(default_factory=dict)

    @property
    def size_after(self) -> int | None:
        """Program size of the result: reduced seed + reduced variant (tokens.py)."""
        s, v = self.recount_seed_tokens[1], self.recount_variant_tokens[1]
        return None if s is None or v is None else s + v
