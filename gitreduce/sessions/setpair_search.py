"""The search over a pair of file sets: the best pair so far, and the passes of one round.

Job: hold the best pair of sets (`SetPairSearch`), measure candidates by the
tokens of their files (`SetSizes`), and shrink the pair by rounds of the
passes of `SET_ROUND` while it shrinks (`run_rounds`). A candidate is a pair
of whole sets, each packed into one byte string (`core/fileset.py`), so the
engine judges it as it judges a file. The passes:

- `set-tdiff`: the files only one set holds, each one change of the
  difference, removed from that set (ddmin, MinTdiff at file granularity);
- `set-ldiff`: ddmin over the files whose versions differ, the variant
  taking the seed's version (or losing the file the seed lacks) for every
  change left out (MinLdiff at file granularity): irrelevant changes to
  whole files go in a few tests;
- `set-commonality`: ddmin over the files both sets hold, removed from both;
- `file-ppr`: PPR (`pair/ppr.py`) on each file whose versions differ,
  biggest first, every other file of both sets fixed: the file's pair is
  judged as its two sets with each side in place (`PairCurrent.places`);
- `file-one-side`: the single-program schedule on each file only one set
  holds, that set judged as it must stay (the seed's good, the variant's bad);
- `file-commonality`: coarse commonality and MinCommonality on each file
  both sets hold identically, every candidate applied to both sets.

Differences go before commonality, whole files before their insides, as PPR
orders its passes. Candidates are pulled in a fixed order and the engine
takes the lowest-indexed success, so the result does not depend on `--jobs`.
The session around the search is `sessions/setpair.py`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence

from gitreduce.core import fileset
from gitreduce.core.current import Current
from gitreduce.core.ddmin import Subset, ddmin
from gitreduce.core.engine import Engine
from gitreduce.core.outcome import Outcome
from gitreduce.core.pass_runner import Pass, run_pass
from gitreduce.lang.grammars import Grammar
from gitreduce.lang.syntax import Syntax
from gitreduce.pair.alignment import Alignment
from gitreduce.pair.current import Measure, PairCandidate, PairCurrent, PairJudge
from gitreduce.pair.ppr import ROUND, Round, finishing, reduce_pair
from gitreduce.pair.state import PairState
from gitreduce.pair.tokens import tokenize
from gitreduce.passes.schedule import reduce_program
from gitreduce.sessions.pair import strip_comments

Files = dict[str, bytes]
# Sizes remembered by content: enough for every file of a set in a few states, few enough
# that thousands of accepted texts of a large file are not all kept alive
REMEMBERED_SIZES = 1024


class SetPairStatus:
    """What progress shows of a pair of sets: each set's tokens and their difference, summed
    over the files, and the pass running."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.label = ""
        self.sizes = (0, 0, 0)  # seed, variant, difference


SetPairProgress = Callable[[SetPairStatus], None]


class SetSizes:
    """Tokens of files and differences of file pairs, as pair mode counts them, remembered
    by content: whole-set candidates are measured by summing their files."""

    def __init__(self, grammars: dict[str, Grammar | None]) -> None:
        self._grammars = grammars
        self._tokens: dict[tuple[str, bytes], int] = {}
        self._pairs: dict[tuple[str, bytes, bytes], tuple[int, int, int]] = {}

    def tokens(self, path: str, text: bytes) -> int:
        key = (path, text)
        if key not in self._tokens:
            if len(self._tokens) >= REMEMBERED_SIZES:
                self._tokens.clear()  # texts of long-gone candidates: let them go
            self._tokens[key] = len(tokenize(text, self._grammars.get(path)))
        return self._tokens[key]

    def pair(self, path: str, seed: bytes | None, variant: bytes | None) -> tuple[int, int, int]:
        """(seed tokens, variant tokens, difference tokens) of one path's two versions; a
        file only one set holds is all difference."""
        if seed is None or variant is None:
            tokens = self.tokens(path, seed if seed is not None else variant or b"")
            return (tokens, 0, tokens) if variant is None else (0, tokens, tokens)
        key = (path, seed, variant)
        if key not in self._pairs:
            if len(self._pairs) >= REMEMBERED_SIZES:
                self._pairs.clear()
            if seed == variant:
                tokens = self.tokens(path, seed)
                self._pairs[key] = (tokens, tokens, 0)
            else:
                alignment = Alignment.of(seed, variant, self._grammars.get(path))
                self._pairs[key] = (
                    len(alignment.seed),
                    len(alignment.variant),
                    alignment.diff_size,
                )
        return self._pairs[key]

    def of_sets(self, seed: Files, variant: Files, leave_out: str = "") -> tuple[int, int, int]:
        """The sets' (seed, variant, difference) tokens, `leave_out` not counted."""
        total = [0, 0, 0]
        for path in seed.keys() | variant.keys():
            if path != leave_out:
                for index, size in enumerate(self.pair(path, seed.get(path), variant.get(path))):
                    total[index] += size
        return total[0], total[1], total[2]


def _measure(sizes: tuple[int, int, int], files: int) -> Measure:
    """A pair of sets' progress order: a smaller difference, then smaller sets, where each
    file counts one more than its tokens, so an emptied file is still something to remove."""
    return sizes[2], sizes[0] + sizes[1] + files


class SetPairSearch:
    """The best pair of sets so far, and the passes over it; only the engine's answers
    change it. Every accepted pair is appended to `accepted`, packed, for the final
    re-verification to walk back along."""

    def __init__(
        self,
        seed: Files,
        variant: Files,
        engine: Engine,
        seed_ok: Callable[[Outcome], bool],
        variant_ok: Callable[[Outcome], bool],
        syntaxes: dict[str, Syntax],
        sizes: SetSizes,
        pinned: frozenset[str],
        opaque: frozenset[str],
        progress: SetPairProgress | None,
    ) -> None:
        self.seed, self.variant = dict(seed), dict(variant)
        self.engine = engine
        self.seed_ok, self.variant_ok = seed_ok, variant_ok
        self.syntaxes = syntaxes
        self.sizes = sizes
        self.pinned, self.opaque = pinned, opaque
        self.label = ""
        self.round = 0
        self.accepted = [(fileset.pack(self.seed), fileset.pack(self.variant))]
        self.status = SetPairStatus(engine)
        self.status.sizes = sizes.of_sets(self.seed, self.variant)
        self._progress = progress

    @property
    def tokens(self) -> int:
        """Both sets' tokens: what a pass over the pair removes."""
        return self.status.sizes[0] + self.status.sizes[1]

    def measure(self) -> Measure:
        return _measure(self.status.sizes, len(self.seed) + len(self.variant))

    def _changed(self, label: str, sizes: tuple[int, int, int]) -> None:
        self.accepted.append((fileset.pack(self.seed), fileset.pack(self.variant)))
        self.status.sizes = sizes
        self.status.label = label
        if self._progress is not None:
            self._progress(self.status)

    # -- whole files --------------------------------------------------------------------

    def try_sets(
        self, candidates: Iterable[tuple[Files, Files]], *, limit: Measure | None = None
    ) -> int | None:
        """Index of the first pair of sets (smaller than `limit`, by default the current
        pair) whose seed is good and variant bad the original way; it becomes current."""
        judge = PairJudge(self.engine, self.seed_ok, self.variant_ok, None, limit or self.measure())
        sizes: dict[int, tuple[int, int, int]] = {}

        def packed() -> Iterator[PairCandidate]:
            for index, (seed, variant) in enumerate(candidates):
                sizes[index] = self.sizes.of_sets(seed, variant)
                measure = _measure(sizes[index], len(seed) + len(variant))
                yield PairCandidate(fileset.pack(seed), fileset.pack(variant), measure)

        found = self.engine.first_judged(packed(), judge, label=self.label)
        if found is None:
            return None
        self.seed = fileset.unpack(found[1].seed)
        self.variant = fileset.unpack(found[1].variant)
        self._changed(self.label, sizes[found[0]])
        return found[0]

    def _ddmin_sets(
        self,
        units: Sequence[str],
        derive: Callable[[Files, Files, set[str]], tuple[Files, Files]],
        *,
        try_empty: bool,
    ) -> bool:
        """ddmin over path units: `derive(seed, variant, left out)` is the candidate pair."""
        if not units:
            return False
        base_seed, base_variant = self.seed, self.variant
        before = self.measure()

        def first_success(subsets: Iterable[Subset]) -> int | None:
            def pairs() -> Iterator[tuple[Files, Files]]:
                for subset in subsets:
                    kept = set(subset)
                    out = {unit for index, unit in enumerate(units) if index not in kept}
                    yield derive(base_seed, base_variant, out)

            return self.try_sets(pairs())

        ddmin(tuple(range(len(units))), first_success, try_empty=try_empty)
        return self.measure() < before

    def file_tdiff(self) -> bool:
        """Files only one set holds, removed from it: `seed:PATH` or `variant:PATH` units."""
        units = sorted(
            [f"seed:{path}" for path in self.seed.keys() - self.variant.keys()]
            + [f"variant:{path}" for path in self.variant.keys() - self.seed.keys()]
        )
        units = [unit for unit in units if unit.partition(":")[2] not in self.pinned]

        def derive(seed: Files, variant: Files, out: set[str]) -> tuple[Files, Files]:
            return (
                {path: text for path, text in seed.items() if f"seed:{path}" not in out},
                {path: text for path, text in variant.items() if f"variant:{path}" not in out},
            )

        return self._ddmin_sets(units, derive, try_empty=True)

    def file_ldiff(self) -> bool:
        """ddmin over the files whose versions differ: for each left out, the variant takes
        the seed's version, or loses the file when the seed has none."""
        units = sorted(
            path
            for path in self.seed.keys() | self.variant.keys()
            if self.seed.get(path) != self.variant.get(path)
            and not (path in self.pinned and path not in self.seed)
        )

        def derive(seed: Files, variant: Files, out: set[str]) -> tuple[Files, Files]:
            reverted = {path: text for path, text in variant.items() if path not in out}
            reverted.update((path, seed[path]) for path in out if path in seed)
            return seed, reverted

        return self._ddmin_sets(units, derive, try_empty=False)

    def file_commonality(self) -> bool:
        """Files both sets hold, removed from both."""
        units = sorted(
            path for path in self.seed.keys() & self.variant.keys() if path not in self.pinned
        )

        def derive(seed: Files, variant: Files, out: set[str]) -> tuple[Files, Files]:
            return (
                {path: text for path, text in seed.items() if path not in out},
                {path: text for path, text in variant.items() if path not in out},
            )

        return self._ddmin_sets(units, derive, try_empty=True)

    # -- inside files -------------------------------------------------------------------

    def _biggest_first(self, paths: Iterable[str]) -> list[str]:
        def size(path: str) -> int:
            return max(len(self.seed.get(path, b"")), len(self.variant.get(path, b"")))

        return sorted((p for p in paths if p not in self.opaque), key=lambda p: (-size(p), p))

    def _file_pair(self, path: str) -> PairCurrent:
        """`path`'s two versions as a pair whose candidates are judged as the two sets with
        each side in place, every other file fixed; each accepted pair updates the sets."""
        seed_place = fileset.placer(self.seed, path)
        variant_place = fileset.placer(self.variant, path)
        others = self.sizes.of_sets(self.seed, self.variant, leave_out=path)
        syntax = self.syntaxes.get(path)

        def changed(current: PairCurrent) -> None:
            state = current.state
            self.seed[path] = state.seed_text()
            self.variant[path] = state.variant_text()
            sizes = (
                others[0] + state.seed_tokens(),
                others[1] + state.variant_tokens(),
                others[2] + state.diff_tokens(),
            )
            self._changed(current.label, sizes)

        grammar = syntax.grammar if syntax is not None else None
        state = PairState.full(Alignment.of(self.seed[path], self.variant[path], grammar))
        current = PairCurrent(
            state,
            self.engine,
            syntax,
            self.seed_ok,
            self.variant_ok,
            changed,
            places=(seed_place, variant_place),
        )
        current.label = self.label
        return current

    def file_ppr(self) -> bool:
        """PPR on each file whose two versions differ, biggest first."""
        before = self.measure()
        differing = (
            path
            for path in self.seed.keys() & self.variant.keys()
            if self.seed[path] != self.variant[path]
        )
        for path in self._biggest_first(differing):
            reduce_pair(self._file_pair(path))
        return self.measure() < before

    def file_one_side(self) -> bool:
        """The single-program schedule on each file only one set holds, that set kept good
        (the seed's) or bad the original way (the variant's)."""
        before = self.measure()
        only = (self.seed.keys() - self.variant.keys()) | (self.variant.keys() - self.seed.keys())
        for path in self._biggest_first(only):
            in_seed = path in self.seed
            files = self.seed if in_seed else self.variant

            def changed(current: Current, path: str = path, files: Files = files) -> None:
                files[path] = current.text
                self._changed(current.label, self.sizes.of_sets(self.seed, self.variant))

            member = Current(
                files[path],
                self.engine,
                self.syntaxes.get(path),
                changed,
                place=fileset.placer(files, path),
                accepts=self.seed_ok if in_seed else self.variant_ok,
            )
            member.label = self.label
            reduce_program(member)
        return self.measure() < before

    def file_commonality_inside(self) -> bool:
        """Coarse commonality (first round) and MinCommonality on each file both sets hold
        identically; every candidate is applied to both sets."""
        before = self.measure()
        same = (
            path
            for path in self.seed.keys() & self.variant.keys()
            if self.seed[path] == self.variant[path]
        )
        for path in self._biggest_first(same):
            current = self._file_pair(path)
            finish = finishing(current.state.seed_text().endswith(b"\n"))
            round_ = Round(current, hoist=self.round > 0)
            for declared in ROUND:
                if declared.name in ("coarse-commonality", "min-commonality"):
                    run_pass(declared, round_, current)
            run_pass(finish, round_, current)
        return self.measure() < before

    # -- the last touch -----------------------------------------------------------------

    def without_comments(self) -> None:
        """Every comment gone from every file with a grammar, when both sets keep their
        property (comments are no tokens, so no pass removes them on purpose); else file
        by file."""
        stripped_seed = {p: self._stripped(p, text) for p, text in self.seed.items()}
        stripped_variant = {p: self._stripped(p, text) for p, text in self.variant.items()}
        if (stripped_seed, stripped_variant) == (self.seed, self.variant):
            return
        limit = self.measure()
        limit = (limit[0], limit[1] + 1)  # no token goes: as small is small enough
        if self.try_sets([(stripped_seed, stripped_variant)], limit=limit) is not None:
            return
        for path in sorted(self.seed.keys() | self.variant.keys()):
            seed, variant = dict(self.seed), dict(self.variant)
            if path in seed:
                seed[path] = stripped_seed[path]
            if path in variant:
                variant[path] = stripped_variant[path]
            if (seed, variant) != (self.seed, self.variant):
                limit = self.measure()
                self.try_sets([(seed, variant)], limit=(limit[0], limit[1] + 1))

    def _stripped(self, path: str, text: bytes) -> bytes:
        syntax = self.syntaxes.get(path)
        return strip_comments(text, syntax) if syntax is not None else text

    def with_final_newlines(self, seed: Files, variant: Files) -> None:
        """The final newline put back on each file whose original had one and whose result
        lost it, when both sets keep their property."""

        def restored(files: Files, originals: Files) -> Files:
            return {
                path: text + b"\n"
                if text and not text.endswith(b"\n") and originals.get(path, b"").endswith(b"\n")
                else text
                for path, text in files.items()
            }

        candidate = (restored(self.seed, seed), restored(self.variant, variant))
        if candidate != (self.seed, self.variant):
            limit = self.measure()
            self.try_sets([candidate], limit=(limit[0], limit[1] + 1))


SET_ROUND: tuple[Pass[SetPairSearch], ...] = (
    Pass(
        "set-tdiff",
        SetPairSearch.file_tdiff,
        "whole files only one set holds, removed from it (ddmin)",
    ),
    Pass(
        "set-ldiff",
        SetPairSearch.file_ldiff,
        "ddmin over the files that differ: the variant takes the seed's version of those left out",
    ),
    Pass(
        "set-commonality",
        SetPairSearch.file_commonality,
        "whole files both sets hold, removed from both (ddmin)",
    ),
    Pass(
        "file-ppr",
        SetPairSearch.file_ppr,
        "PPR on each file whose versions differ, biggest first, the other files fixed",
    ),
    Pass(
        "file-one-side",
        SetPairSearch.file_one_side,
        "the single-program schedule on each file only one set holds",
    ),
    Pass(
        "file-commonality",
        SetPairSearch.file_commonality_inside,
        "coarse commonality and MinCommonality on files both sets hold identically",
    ),
)
"""One round over a pair of sets: differences before commonality, whole files before their
insides (see the module docstring)."""


def run_rounds(pair: SetPairSearch) -> None:
    """Rounds of `SET_ROUND` while the pair shrinks."""
    while True:
        before = pair.measure()
        for declared in SET_ROUND:
            run_pass(declared, pair, pair)
        pair.round += 1
        if pair.measure() >= before:
            return
