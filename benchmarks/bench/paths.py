"""Where the runner finds what the repository ships for the benchmarks.

Job: one place for the paths the runner defaults to: the public cases and the
fixtures, the stored C-Vise baselines, the reference token counter, and the
repository's own virtualenv (a Python with tree-sitter for the token counter,
and a git-reduce to benchmark when none is on PATH).
"""

from __future__ import annotations

from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parent.parent
REPO = BENCHMARKS.parent
CASES_ROOT = BENCHMARKS / "cases"
FIXTURES_ROOT = REPO / "fixtures"
BASELINE_DIR = BENCHMARKS / "baselines"
TOKENS_PY = BENCHMARKS / "tools" / "tokens.py"
VENV_PYTHON = REPO / ".venv" / "bin" / "python"
VENV_GITREDUCE = REPO / ".venv" / "bin" / "git-reduce"
