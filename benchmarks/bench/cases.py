"""Benchmark cases: finding them on disk, and checking that this machine can run them.

Job: a case is a folder holding ``variant.EXT`` and ``test.sh`` (and, for
pairwise mode, ``seed.EXT``); this module discovers such folders (the shipped
public cases and fixtures by default), loads them, runs a case's ``test.sh``
on a file (how every result is checked), and sets aside the cases whose
``test.sh`` misjudges their originals here (a missing compiler, say).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from bench.paths import CASES_ROOT, FIXTURES_ROOT

C_LIKE = {".c", ".h", ".i", ".cc", ".cpp", ".cxx", ".hpp", ".C"}


@dataclass
class Case:
    name: str
    path: Path
    variant: Path
    origin: str  # "shared" (the public cases, benchmarks/cases) or "fixtures" or "custom"

    @property
    def ext(self) -> str:
        return self.variant.suffix

    @property
    def test_sh(self) -> Path:
        return self.path / "test.sh"


@dataclass
class PairCase(Case):
    seed: Path


CaseT = TypeVar("CaseT", bound=Case)


def safe(name: str) -> str:
    """A case's name as part of a file name (a name made unique carries a slash)."""
    return name.replace("/", "__")


def language_group(ext: str) -> str:
    if ext in C_LIKE:
        return "c/c++"
    if ext == ".rs":
        return "rust"
    return ext.lstrip(".") or "?"


def run_test(case: Case, path: Path, timeout: float = 300) -> int | None:
    """Exit status of the case's test.sh on ``path`` (None if it could not run)."""
    if not path.is_file():
        return None
    try:
        return subprocess.run(
            [str(case.test_sh), str(path.resolve())],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=timeout,
            check=False,
        ).returncode
    except subprocess.TimeoutExpired:
        return 124
    except OSError:
        return None


def is_case_dir(path: Path) -> bool:
    return (path / "test.sh").is_file() and any(p.is_file() for p in path.glob("variant.*"))


def load_case(path: Path, origin: str) -> Case:
    path = path.resolve()
    variants = sorted(p for p in path.glob("variant.*") if p.is_file())
    if len(variants) != 1:
        raise ValueError(f"expected exactly one variant.* file, found {len(variants)}")
    return Case(name=path.name, path=path, variant=variants[0], origin=origin)


def is_pair_dir(path: Path) -> bool:
    return (
        (path / "test.sh").is_file()
        and any(p.is_file() for p in path.glob("seed.*"))
        and any(p.is_file() for p in path.glob("variant.*"))
    )


def load_pair_case(path: Path, origin: str) -> PairCase:
    path = path.resolve()
    seeds = sorted(p for p in path.glob("seed.*") if p.is_file())
    variants = sorted(p for p in path.glob("variant.*") if p.is_file())
    if len(seeds) != 1 or len(variants) != 1:
        raise ValueError(
            f"expected one seed.* and one variant.* file, found {len(seeds)} and {len(variants)}"
        )
    if seeds[0].suffix != variants[0].suffix:
        raise ValueError(f"seed and variant extensions differ: {seeds[0].name}, {variants[0].name}")
    return PairCase(name=path.name, path=path, variant=variants[0], origin=origin, seed=seeds[0])


def _discover(
    dirs: list[Path] | None,
    is_case: Callable[[Path], bool],
    load: Callable[[Path, str], CaseT],
) -> list[CaseT]:
    """Each DIR is a case folder, or a folder whose sub-folders are cases (default: the
    public cases in benchmarks/cases, then fixtures/); names stay unique in the tables."""
    roots: list[tuple[Path, str]]
    if dirs:
        roots = [(d, "custom") for d in dirs]
    else:
        roots = [(CASES_ROOT, "shared"), (FIXTURES_ROOT, "fixtures")]
    cases: list[CaseT] = []
    seen: set[str] = set()
    for root, origin in roots:
        if not root.is_dir():
            if dirs:
                raise SystemExit(f"no such case dir: {root}")
            continue
        found = [root] if is_case(root) else sorted(p for p in root.iterdir() if is_case(p))
        for p in found:
            try:
                case = load(p, origin)
            except ValueError as exc:
                print(f"skipping {p}: {exc}", file=sys.stderr)
                continue
            if case.name in seen:
                case.name = f"{origin}/{case.name}"
            seen.add(case.name)
            cases.append(case)
    return cases


def discover_cases(dirs: list[Path] | None) -> list[Case]:
    return _discover(dirs, is_case_dir, load_case)


def discover_pair_cases(dirs: list[Path] | None) -> list[PairCase]:
    """Like ``discover_cases``, for folders holding seed.EXT, variant.EXT and test.sh."""
    return _discover(dirs, is_pair_dir, load_pair_case)


def _missing_debian_packages(case: Case) -> list[str]:
    """The Debian packages case.json requires that dpkg does not know as installed."""
    try:
        wanted = json.loads((case.path / "case.json").read_text())["requires"]["debian"]
    except (OSError, ValueError, KeyError, TypeError):
        return []
    missing = []
    for package in wanted:
        status = subprocess.run(
            ["dpkg-query", "-W", "-f=${Status}", package],
            capture_output=True,
            text=True,
            check=False,
        )
        if "install ok installed" not in status.stdout:
            missing.append(package)
    return missing


def unusable_reason(case: Case) -> str | None:
    """Why the case cannot be measured on this machine (test.sh misjudges its originals),
    or None. A missing compiler would otherwise show up as a failed reduction."""
    seeds = sorted(p for p in case.path.glob("seed.*") if p.is_file())
    expected = [(case.variant, 1)] + [(seed, 0) for seed in seeds[:1]]
    for path, want in expected:
        got = run_test(case, path)
        if got != want:
            reason = f"test.sh {path.name} exits {got}, not {want}"
            missing = _missing_debian_packages(case)
            if missing:
                reason += f" (case.json requires, not installed: {', '.join(missing)})"
            return reason
    return None


def usable_cases(cases: list[CaseT], notes: list[str]) -> list[CaseT]:
    """The cases this machine can run; the others are named in the notes and on stderr."""
    usable = []
    for case in cases:
        reason = unusable_reason(case)
        if reason is None:
            usable.append(case)
            continue
        note = f"{case.name}: skipped, {reason}."
        notes.append(note)
        print(note, file=sys.stderr, flush=True)
    return usable
