"""Measuring a tool run: its own process group, its clock, its test runs, token counts.

Job: what the runner needs to measure any tool the same way: run a command in
a process group killed as a whole on timeout, time it, sample the load
average, count the tool's test runs with a wrapper script around its test,
read a tool's JSON report from its output, and count tokens with the
reference counter.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from bench.paths import VENV_PYTHON

MACHINE_NOTE = "2 cores, shared machine"


def python_for_tokens() -> str:
    return str(VENV_PYTHON) if VENV_PYTHON.exists() else sys.executable


def count_tokens(path: Path, tokens_py: Path) -> int | None:
    if not path.is_file():
        return None
    out = subprocess.run(
        [python_for_tokens(), str(tokens_py), str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    try:
        return int(out.stdout.strip())
    except ValueError:
        return None


def count_pair(seed: Path, variant: Path, tokens_py: Path) -> tuple[int, int, int] | None:
    """(seed tokens, variant tokens, diff tokens) from ``tokens.py SEED VARIANT``."""
    if not (seed.is_file() and variant.is_file()):
        return None
    out = subprocess.run(
        [python_for_tokens(), str(tokens_py), str(seed), str(variant)],
        capture_output=True,
        text=True,
        check=False,
    )
    parts = out.stdout.split()
    if len(parts) != 3:
        return None
    try:
        s, v, d = (int(x) for x in parts)
    except ValueError:
        return None
    return s, v, d


def loadavg() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


class LoadSampler:
    """Samples the 1-minute load average every ``every`` seconds while in a ``with``."""

    def __init__(self, every: float = 10.0) -> None:
        self.every = every
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self._stop.wait(self.every):
            now = loadavg()
            if now:
                self.samples.append(now[0])

    def __enter__(self) -> LoadSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def summary(self) -> dict[str, Any]:
        if not self.samples:
            return {}
        return {
            "every_seconds": self.every,
            "samples": len(self.samples),
            "min": min(self.samples),
            "median": round(statistics.median(self.samples), 2),
            "max": max(self.samples),
        }


def tool_version(cmd: list[str]) -> str:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return "unavailable"
    text = (out.stdout.strip() or out.stderr.strip()).splitlines()
    return text[0] if text else "unknown"


def write_timing_wrapper(path: Path, log: Path, target: Path) -> None:
    """Script that runs ``target "$@"`` and appends one "start end" line to ``log``.

    The number of lines is the number of test runs; the intervals give the wall time
    during which at least one test was running.
    """
    path.write_text(
        "#!/bin/bash\n"
        "s=$EPOCHREALTIME\n"
        f'{shlex.quote(str(target))} "$@"\n'
        "rc=$?\n"
        f'echo "$s $EPOCHREALTIME $rc" >> {shlex.quote(str(log))}\n'
        "exit $rc\n"
    )
    path.chmod(0o755)


def read_timing_log(log: Path) -> list[tuple[float, float]]:
    spans: list[tuple[float, float]] = []
    if not log.exists():
        return spans
    for line in log.read_text(errors="replace").splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        try:
            start, end = (float(p.replace(",", ".")) for p in parts[:2])
        except ValueError:
            continue
        spans.append((start, end))
    return spans


def busy_seconds(spans: list[tuple[float, float]], lo: float, hi: float) -> float:
    """Length of the union of ``spans`` clipped to [lo, hi]."""
    total = 0.0
    cur_s: float | None = None
    cur_e = 0.0
    for s, e in sorted((max(s, lo), min(e, hi)) for s, e in spans):
        if e <= s:
            continue
        if cur_s is None or s > cur_e:
            if cur_s is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_s is not None:
        total += cur_e - cur_s
    return total


def run_group(
    cmd: list[str],
    cwd: Path,
    log: Path,
    timeout: float | None,
    stdout: Path | None = None,
    env: dict[str, str] | None = None,
) -> tuple[int | None, float, float, float, bool]:
    """Run ``cmd`` in its own process group (killed as a whole on timeout).

    Output goes to ``log`` (stdout to ``stdout`` instead, when given); ``env`` replaces
    the environment when given.  On timeout the group gets SIGTERM, then SIGKILL.
    Returns (exit status, wall seconds, start epoch, end epoch, timed out).
    """
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as fh, contextlib.ExitStack() as stack:
        out_fh = stack.enter_context(stdout.open("w")) if stdout else fh
        fh.write(f"$ (cd {shlex.quote(str(cwd))} && {shlex.join(cmd)})\n")
        fh.flush()
        t_epoch0 = time.time()
        t0 = time.monotonic()
        try:
            proc = subprocess.Popen(
                cmd,
                cwd=cwd,
                stdout=out_fh,
                stderr=fh if stdout else subprocess.STDOUT,
                start_new_session=True,
                env=env,
            )
        except OSError as exc:
            fh.write(f"cannot start: {exc}\n")
            return None, 0.0, t_epoch0, t_epoch0, False
        timed_out = False
        rc: int | None
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            rc = None
            for sig in (signal.SIGTERM, signal.SIGKILL):
                try:
                    os.killpg(proc.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    proc.wait(timeout=15)
                    break
                except subprocess.TimeoutExpired:
                    continue
        wall = time.monotonic() - t0
        t_epoch1 = time.time()
        # leftover members of the group (e.g. test scripts still running after exit)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
    return rc, wall, t_epoch0, t_epoch1, timed_out


def parse_json_output(text: str) -> dict[str, Any] | None:
    """The JSON object in a tool's stdout (the whole text, or the last top-level object)."""
    try:
        data = json.loads(text)
        return data if isinstance(data, dict) else None
    except ValueError:
        pass
    lines = text.splitlines()
    for i in range(len(lines) - 1, -1, -1):
        if lines[i].startswith("{"):
            try:
                data = json.loads("\n".join(lines[i:]))
            except ValueError:
                continue
            return data if isinstance(data, dict) else None
    return None


def inside_git_work_tree(path: Path) -> bool:
    try:
        out = subprocess.run(
            ["git", "-C", str(path), "rev-parse", "--is-inside-work-tree"],
            capture_output=True,
            text=True,
            check=False,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0 and out.stdout.strip() == "true"
