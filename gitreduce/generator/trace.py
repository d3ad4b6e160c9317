"""The trace model: one execution of a generator as data.

A `Trace` holds every random decision (the paper's Dec(O): the API and the
value it returned, in portable form) with its site (Prog(O): the API and the
call stack, as code objects and bytecode offsets from the entry function
down), the regions the decisions fall in (loops, their iterations, the blocks
random guards let run) and the calls of generator functions. The recorder
fills it; trace-aligned re-execution and the search read it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from gitreduce.generator.random_source import Domain

# Frame = (file, function, first line of the function, bytecode offset of the call)
Frame = tuple[str, str, int, int]
# Site = (API name, frames from the entry function down to the call): Prog(O)
Site = tuple[str, tuple[Frame, ...]]

ROOT = -1  # the region id of "not inside any region"


@dataclass(frozen=True, slots=True)
class Decision:
    """One random decision: Prog(O) is `site`, Dec(O) is `api` and `value`."""

    site: Site
    line: int  # where in the generator, for people
    value: Any  # portable: a number, bytes, a Pick, a tuple of Picks or a permutation
    region: int  # innermost region it was made in (ROOT when none)
    domain: Domain | None

    @property
    def api(self) -> str:
        return self.site[0]


@dataclass(slots=True)
class Region:
    """A loop, one of its iterations, or the block a guard let run.

    `init` is the decision that started it: the trip count of a loop (None
    when the count was not recognisably a decision, so its iterations cannot
    be removed) or the guard of a block.
    """

    id: int
    kind: str  # "loop", "iteration", "block"
    parent: int
    first: int  # decisions made before it opened
    last: int = -1  # decisions made before it closed
    init: int | None = None
    ordinal: int = 0  # iterations: 1, 2, ...
    where: tuple[str, int] = ("", 0)  # file and line, for people
    call: int = ROOT  # the call whose frame opened it


@dataclass(slots=True)
class Call:
    """One call of a generator function, and the decisions made while it ran.

    A recursive generator builds nested parts by nested calls of one function
    (an expression inside an expression, a statement inside a block); running
    an outer call along the decisions of a nested call of the same function
    replaces the outer part by the nested one, the way Perses hoists a node.
    """

    id: int
    parent: int  # the nearest traced call it was made from (ROOT for the entry function)
    code: tuple[str, str, int]  # file, function, first line: what makes calls comparable
    depth: int  # its frame's position in the frames of a decision's site
    region: int  # innermost region open when it started
    first: int  # decisions made before it started
    last: int = -1  # decisions made before it returned
    suspends: bool = False  # a generator function: its decisions need not be contiguous


@dataclass
class Trace:
    """One execution: its decisions, its regions and the input it generated."""

    decisions: list[Decision]
    regions: list[Region]
    output: bytes
    guards: dict[int, bool] = field(default_factory=dict)  # guard decision -> block ran
    seconds: float = 0.0
    calls: list[Call] = field(default_factory=list)

    def counts(self) -> dict[int, int]:
        """Loop-count decision -> its loop region."""
        found = self.__dict__.get("_counts")
        if found is None:
            found = {r.init: r.id for r in self.regions if r.kind == "loop" and r.init is not None}
            self.__dict__["_counts"] = found
        return found

    def blocks(self) -> dict[int, int]:
        """Guard decision -> the block region it let run."""
        found = self.__dict__.get("_blocks")
        if found is None:
            found = {r.init: r.id for r in self.regions if r.kind == "block" and r.init is not None}
            self.__dict__["_blocks"] = found
        return found

    def ancestors(self, region: int) -> Iterator[int]:
        """`region` and the regions around it, innermost first."""
        while region != ROOT:
            yield region
            region = self.regions[region].parent

    def path(self, region: int) -> tuple[int, ...]:
        """Iteration numbers of the loops around `region`, outermost first: its execution index."""
        ordinals = [
            self.regions[r].ordinal
            for r in self.ancestors(region)
            if self.regions[r].kind == "iteration"
        ]
        return tuple(reversed(ordinals))
