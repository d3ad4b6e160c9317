"""Build a repository of fuzzer-style findings, the fixture `git reduce triage` is measured on.

    build_findings_repo.py DEST [--findings N] [--seed S] [--sleep SECONDS] [--check]
    build_findings_repo.py --variants-dir DIR [--findings N] [--seed S] [--sleep S] [--check]

Each finding is two commits: one adds `findings/fNN.c`, a seed program from the
repository's own generator (fixtures/generator/gen_c.py), the next mutates it the way
a mutation fuzzer would and carries the trailer `Reduce-Test: gcc-werror`. The
mutation that matters inserts or rewrites one statement so that gcc reports one of
four diagnostics made errors by `tests/gcc-werror.sh`; zero to two harmless mutations
ride along. Everything is drawn from `random.Random` seeded by strings and committed
with fixed dates, so the same arguments give the same commit ids. See README.md.
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import json
import os
import random
import re
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from gitreduce.oracle.signature import extract_signature

GEN_C = Path(__file__).resolve().parents[2] / "fixtures" / "generator" / "gen_c.py"
TEST_NAME = "gcc-werror"
SCRIPT_PATH = f"tests/{TEST_NAME}.sh"
EPOCH = 1767225600  # 2026-01-01T00:00:00Z: the first commit's date; each next one a minute on


@dataclass(frozen=True)
class Bug:
    """A gcc warning made an error (`-Werror=NAME`), and the mutations that draw it.

    Templates fill `{v}` with a variable in scope, `{k}` with a small constant, `{w}`
    with a shift count too wide for `long`; `rewrite` turns an assignment `{t} = {e};`
    into the bug. The message names no identifier or value, so every finding of the
    bug has the same signature.
    """

    name: str
    weight: int
    message: str
    inserts: tuple[str, ...]
    rewrite: str | None

    @property
    def signature(self) -> str:
        return f"error: {self.message} [-Werror={self.name}]"


BUGS = (
    Bug("div-by-zero", 4, "division by zero", ("{v} = {v} / 0;", "{v} %= 0;"), "{t} = {e} / 0;"),
    Bug(
        "shift-count-overflow",
        3,
        "left shift count >= width of type",
        ("{v} = {v} << {w};", "{v} <<= {w};"),
        "{t} = {e} << {w};",
    ),
    Bug(
        "tautological-compare",
        2,
        "self-comparison always evaluates to true",
        ("if ({v} == {v}) {v} = {k};", "{v} = ({v} >= {v}) ? {k} : {v};"),
        None,
    ),
    Bug("unused-value", 1, "statement with no effect", ("{v} + {k};", "{v} == {k};"), "{e};"),
)

# The layout gen_c.py writes: globals, then functions whose locals are `__auto_type`.
GLOBAL = re.compile(r"^static (?:int|long) (g_\d+) = ")
HEADER = re.compile(r"^(?:static void func_\d+|int main)\((.*)\)$")
PARAM = re.compile(r"(?:int|long) (p_\d+)")
LOCAL = re.compile(r"^\s+__auto_type (l_\d+) = ")
ASSIGN = re.compile(r"^(\s+)(\w+) = (.+);$")
LITERAL = re.compile(r"(?<![\w.])\d+(?=L?\b)")
OPERATOR = re.compile(r" ([-+^|&]) ")


@dataclass(frozen=True)
class Site:
    """A statement a new one can go in front of, and the variables in scope there."""

    line: int
    indent: str
    scope: tuple[str, ...]


@dataclass(frozen=True)
class Finding:
    number: str  # NN of fNN.c
    bug: Bug
    seed: str
    variant: str


def statement_sites(lines: list[str]) -> list[Site]:
    names = [m.group(1) for line in lines if (m := GLOBAL.match(line))]
    sites: list[Site] = []
    scope: list[str] | None = None
    for number, line in enumerate(lines):
        if header := HEADER.match(line):
            scope = [*names, *PARAM.findall(header.group(1))]
        elif line == "}":
            scope = None
        elif scope is not None and line.endswith(";"):
            sites.append(Site(number, line[: len(line) - len(line.lstrip())], tuple(scope)))
            if local := LOCAL.match(line):
                scope.append(local.group(1))
    return sites


def fill(template: str, rng: random.Random, **names: str) -> str:
    return template.format(k=rng.randint(1, 99), w=rng.randint(64, 127), **names)


def insert(lines: list[str], rng: random.Random, template: str) -> None:
    site = rng.choice([site for site in statement_sites(lines) if site.scope])
    lines.insert(site.line, site.indent + fill(template, rng, v=rng.choice(site.scope)))


def assignments(lines: list[str]) -> list[int]:
    body = {site.line for site in statement_sites(lines)}
    return [n for n in sorted(body) if ASSIGN.match(lines[n]) and not LOCAL.match(lines[n])]


def harmless(lines: list[str], rng: random.Random) -> None:
    """One mutation that changes what the program computes, not what gcc says of it."""
    body = [site.line for site in statement_sites(lines)]
    kind = rng.choice(("insert", "literal", "operator", "delete"))
    literals = [n for n in body if LITERAL.search(lines[n])]
    operators = [n for n in body if OPERATOR.search(lines[n])]
    if kind == "literal" and literals:
        n = rng.choice(literals)
        spans = [m.span() for m in LITERAL.finditer(lines[n])]
        start, end = rng.choice(spans)
        lines[n] = f"{lines[n][:start]}{rng.randint(0, 99)}{lines[n][end:]}"
    elif kind == "operator" and operators:
        n = rng.choice(operators)
        found = rng.choice(list(OPERATOR.finditer(lines[n])))
        new = rng.choice([op for op in "+-^|&" if op != found.group(1)])
        lines[n] = f"{lines[n][: found.start(1)]}{new}{lines[n][found.end(1) :]}"
    elif kind == "delete" and assignments(lines):
        del lines[rng.choice(assignments(lines))]
    else:
        insert(lines, rng, f"{{v}} = {{v}} {rng.choice('+-^|&')} {{k}};")


def mutate(seed: str, bug: Bug, rng: random.Random) -> str:
    lines = seed.splitlines()
    for _ in range(rng.randint(0, 2)):
        harmless(lines, rng)
    targets = assignments(lines)
    if bug.rewrite and targets and rng.random() < 0.4:
        n = rng.choice(targets)
        match = ASSIGN.match(lines[n])
        assert match is not None
        indent, target, expression = match.groups()
        lines[n] = indent + fill(bug.rewrite, rng, t=target, e=expression)
    else:
        insert(lines, rng, rng.choice(bug.inserts))
    return "\n".join(lines) + "\n"


def seed_programs(seed: int) -> Iterator[str]:
    """gen_c.py programs with a global (so every function has a variable) of 1-3 KB."""
    spec = importlib.util.spec_from_file_location("gen_c", GEN_C)
    assert spec is not None and spec.loader is not None
    gen_c = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen_c)
    for k in itertools.count():
        text: str = gen_c.generate(random.Random(f"findings:{seed}:{k}"))
        if any(GLOBAL.match(line) for line in text.splitlines()) and 1000 <= len(text) <= 3000:
            yield text


def bug_order(count: int, seed: int) -> list[Bug]:
    """Every bug at least once, the rest by weight (largest remainder), in shuffled order."""
    spare = count - len(BUGS)
    total = sum(bug.weight for bug in BUGS)
    shares = [spare * bug.weight / total for bug in BUGS]
    counts = [1 + int(share) for share in shares]
    by_remainder = sorted(range(len(BUGS)), key=lambda b: int(shares[b]) - shares[b])
    for b in by_remainder[: count - sum(counts)]:
        counts[b] += 1
    order = [bug for bug, n in zip(BUGS, counts, strict=True) for _ in range(n)]
    random.Random(f"bugs:{seed}").shuffle(order)
    return order


def plan(count: int, seed: int, *, one_seed: bool) -> list[Finding]:
    programs = seed_programs(seed)
    first = next(programs)
    width = max(2, len(str(count - 1)))
    return [
        Finding(f"{i:0{width}d}", bug, text, mutate(text, bug, random.Random(f"mutate:{seed}:{i}")))
        for i, bug in enumerate(bug_order(count, seed))
        for text in [first if one_seed or i == 0 else next(programs)]
    ]


def test_script(sleep: float) -> str:
    flags = " ".join(f"-Werror={bug.name}" for bug in BUGS)
    return f"""#!/bin/sh
# {TEST_NAME}.sh FILE: gcc -O1 with four warnings made errors. As git bisect run reads it:
#   0    FILE compiles (good)
#   1    every error is one of the -Werror= diagnostics (bad: a finding)
#   125  FILE does not compile for another reason (cannot be tested)
export LC_ALL=C
file=${{1:-$GITREDUCE_FILE}}
{f"sleep {sleep:g}" if sleep else ":"}
out=$(gcc -x c -std=gnu11 -O1 -fdiagnostics-plain-output {flags} \\
    -c -o /dev/null "$file" 2>&1) && exit 0
printf '%s\\n' "$out"
errors=$(printf '%s\\n' "$out" | grep 'error:') || exit 125
printf '%s\\n' "$errors" | grep -qv -- '-Werror=' && exit 125
exit 1
"""


def write_script(path: Path, sleep: float) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(test_script(sleep))
    path.chmod(0o755)
    return path.resolve()


class Repository:
    """git with a fixed identity, dates a minute apart, and no user config or hooks."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.commits = 0
        self.env = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
        subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True)

    def git(self, *args: str, env: dict[str, str] | None = None) -> str:
        command = ["git", "-C", str(self.path), "-c", "core.hooksPath=/dev/null", *args]
        done = subprocess.run(
            command, check=True, capture_output=True, text=True, env={**self.env, **(env or {})}
        )
        return done.stdout.strip()

    def commit(self, message: str, *paths: str) -> str:
        date = f"@{EPOCH + 60 * self.commits} +0000"
        self.commits += 1
        person = {"NAME": "fuzzer", "EMAIL": "fuzzer@example.invalid", "DATE": date}
        env = {
            f"GIT_{who}_{key}": v for who in ("AUTHOR", "COMMITTER") for key, v in person.items()
        }
        self.git("add", "--", *paths)
        self.git("commit", "-q", "--no-gpg-sign", "-m", message, env=env)
        return self.git("rev-parse", "HEAD")


def build_repository(dest: Path, findings: list[Finding], sleep: float) -> list[dict[str, str]]:
    repo = Repository(dest)
    script = write_script(dest / SCRIPT_PATH, sleep)
    repo.commit(f"fuzzing setup: the {TEST_NAME} test", SCRIPT_PATH)
    repo.git("config", f"gitreduce.test.{TEST_NAME}.command", f"{shlex.quote(str(script))} {{}}")
    (dest / "findings").mkdir()
    manifest = []
    for finding in findings:
        path = f"findings/f{finding.number}.c"
        (dest / path).write_text(finding.seed)
        seed = repo.commit(f"fuzz: seed {finding.number}", path)
        (dest / path).write_text(finding.variant)
        message = f"fuzz: finding {finding.number}\n\nReduce-Test: {TEST_NAME}"
        variant = repo.commit(message, path)
        manifest.append({"path": path, "seed": seed, "variant": variant, "bug": finding.bug.name})
    return manifest


def build_directory(dest: Path, findings: list[Finding], sleep: float) -> list[dict[str, str]]:
    write_script(dest / f"{TEST_NAME}.sh", sleep)
    (dest / "seed.c").write_text(findings[0].seed)
    (dest / "variants").mkdir()
    for finding in findings:
        (dest / "variants" / f"f{finding.number}.c").write_text(finding.variant)
    return [{"path": f"variants/f{f.number}.c", "bug": f.bug.name} for f in findings]


def judge(script: Path, name: str, text: str) -> tuple[int, str | None]:
    """The test's exit and signature for `text`, laid out as gitreduce lays out a candidate."""
    with tempfile.TemporaryDirectory() as scratch:
        (Path(scratch) / name).parent.mkdir(parents=True, exist_ok=True)
        (Path(scratch) / name).write_text(text)
        done = subprocess.run(
            [str(script), name], cwd=scratch, capture_output=True, text=True, check=False
        )
    return done.returncode, extract_signature(done.stdout + done.stderr, candidate=name)


def check(script: Path, findings: list[Finding], names: list[str]) -> list[str]:
    """What is wrong: a seed that does not pass, a variant without its bug's signature."""
    jobs: list[tuple[str, str, int, str | None]]
    jobs = [(n, f.seed, 0, None) for n, f in zip(names, findings, strict=True)]
    jobs += [(n, f.variant, 1, f.bug.signature) for n, f in zip(names, findings, strict=True)]
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(lambda job: judge(script, job[0], job[1]), jobs))
    return [
        f"{name} {'variant' if want else 'seed'}: exit {got} ({signature}), want {want} ({sig})"
        for (name, _, want, sig), (got, signature) in zip(jobs, results, strict=True)
        if (got, signature if want else None) != (want, sig)
    ]


def arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("dest", nargs="?", type=Path, help="the repository to create")
    where.add_argument("--variants-dir", type=Path, help="write seed.c and variants/ instead")
    parser.add_argument("--findings", type=int, default=24, help="how many (default 24)")
    parser.add_argument("--seed", type=int, default=0, help="what to draw (default 0)")
    parser.add_argument("--sleep", type=float, default=0.0, help="the test sleeps first")
    parser.add_argument("--check", action="store_true", help="run the test on every program")
    parser.add_argument("--manifest", type=Path, help="write the findings as JSON here")
    args = parser.parse_args(argv)
    if args.findings < len(BUGS):
        parser.error(f"--findings must be at least {len(BUGS)}: one finding per bug")
    if args.sleep < 0:
        parser.error("--sleep must not be negative")
    target = args.dest or args.variants_dir
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        parser.error(f"{target} exists and is not an empty directory")
    return args


def main(argv: list[str] | None = None) -> int:
    args = arguments(argv)
    start = time.monotonic()
    findings = plan(args.findings, args.seed, one_seed=args.dest is None)
    if args.dest is not None:
        manifest = build_repository(args.dest, findings, args.sleep)
        script = args.dest / SCRIPT_PATH
    else:
        manifest = build_directory(args.variants_dir, findings, args.sleep)
        script = args.variants_dir / f"{TEST_NAME}.sh"
    if args.manifest:
        args.manifest.write_text(json.dumps(manifest, indent=2) + "\n")
    seconds = time.monotonic() - start
    print(f"{len(findings)} findings in {args.dest or args.variants_dir} ({seconds:.1f} s)")
    for bug in BUGS:
        count = sum(finding.bug is bug for finding in findings)
        print(f"  {count:3d}  {bug.name:22s} {bug.signature}")
    if args.check:
        start = time.monotonic()
        problems = check(script.resolve(), findings, [entry["path"] for entry in manifest])
        for problem in problems:
            print(f"check: {problem}", file=sys.stderr)
        if problems:
            return 1
        print(
            f"checked: every seed passes, every variant fails with its bug's signature "
            f"({time.monotonic() - start:.1f} s)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
