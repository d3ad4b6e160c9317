"""Passes across the files of a set: a name declared in one file and used in others,
changed in every file at once.

The single-program schedule reduces one member of a set with the others fixed
(`sessions/fileset.py`), and so cannot take a name that files share: a
header's prototype goes only with the definition in one `.c` file and the
calls in another, and no candidate of one file removes all three. Each
candidate here edits every file the name is in and is tested as one packed
set (`core/fileset.py`).

`cross-identifiers` is identifier replacement (`passes/identifiers.py`,
after Vulcan) over the set. For a name that at least two files spell: in
each file whose first occurrence of it stands outside every function (a
declaration, in declare-before-use languages: a prototype, a definition, a
global, an import), the unit around that occurrence is deleted; every other
occurrence, in every file, is renamed to a stand-in, another name of the same
kind (leaf kind, and arity for a function) that is in scope at the uses in
each file: it occurs there before them as `identifiers` asks, or it is
declared outside every function in another file (which this one may include
or import; the test decides). A name no file declares is left to
the per-file passes: renaming a library function everywhere deletes nothing.

`cross-names` is the `names` pass over the set: a name that at least two
files spell goes with every statement or list element that mentions it, in
every file at once (a header's prototype, the definition, each call), where
the per-file pass would have to take the uses before the declarations one
file at a time, and cannot when each of those steps alone breaks the test.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass

import tree_sitter

from gitreduce.core import edits, fileset
from gitreduce.core.current import deletion_edits, render_deletions
from gitreduce.core.engine import Engine
from gitreduce.core.pass_runner import Pass
from gitreduce.lang.kinds import is_identifier
from gitreduce.lang.syntax import Parsed, Syntax, plain_tokens
from gitreduce.passes.identifiers import (
    LITERAL_STAND_IN,
    MAX_STAND_INS,
    Name,
    identifier_names,
    same_kind,
    scope_of,
    stand_in_order,
    take_replacements,
    takes_literal,
    visible,
)
from gitreduce.passes.names import enclosing_unit, outermost_spans, unit_deletion_spans
from gitreduce.passes.windows import EXHAUSTIVE_MAX_TOKENS


class SetProgram:
    """The whole set as the best program so far, for passes whose candidates edit several
    of its files: each candidate is a set, tested packed, and must be smaller in bytes
    than the current set; each file it changes must pass that file's syntax gate."""

    def __init__(
        self,
        files: Mapping[str, bytes],
        syntaxes: Mapping[str, Syntax],
        engine: Engine,
        on_change: Callable[[SetProgram], None] | None = None,
    ) -> None:
        self.engine = engine
        self.label = ""  # the running pass, set by `run_pass`: the engine counts its tests
        self.syntaxes = {path: syntax for path, syntax in syntaxes.items() if path in files}
        self._on_change = on_change
        self.files = dict(files)
        self.packed = fileset.pack(self.files)
        self.parsed: dict[str, Parsed] = {
            path: syntax.parse(self.files[path]) for path, syntax in self.syntaxes.items()
        }
        self._plain_tokens = sum(
            len(plain_tokens(text)) for path, text in self.files.items() if path not in self.parsed
        )

    @property
    def tokens(self) -> int:
        return self._plain_tokens + sum(parsed.tokens for parsed in self.parsed.values())

    def try_sets(self, candidates: Iterable[Mapping[str, bytes]]) -> int | None:
        """Index of the first interesting candidate set, which becomes current; None if
        none is. A candidate may change only files that have a grammar."""
        found = self.engine.first_success(
            (fileset.pack(candidate) for candidate in candidates),
            smaller_than=len(self.packed),
            label=self.label,
            precheck=self._parses,
        )
        if found is None:
            return None
        self.packed = bytes(found[1])
        for path, text in fileset.unpack(self.packed).items():
            if text != self.files[path]:
                self.files[path] = text
                self.parsed[path] = self.syntaxes[path].parse(text)
        if self._on_change is not None:
            self._on_change(self)
        return found[0]

    def _parses(self, packed: bytes) -> bool:
        """The syntax gate of every file the candidate changes, against its current text."""
        for path, text in fileset.unpack(packed).items():
            before = self.files[path]
            if text != before and not self.syntaxes[path].check(text, before):
                return False
        return True


@dataclass(frozen=True)
class _InFile:
    """A name in one file: the declaration deleted there (its span, and the spans that
    delete it with its separator), and the occurrences renamed."""

    declaration: tuple[int, int] | None
    spans: list[tuple[int, int]]
    uses: list[tree_sitter.Node]


def _changes(name: bytes, names: Mapping[str, dict[bytes, Name]]) -> dict[str, _InFile] | None:
    """What happens to `name` in each file that spells it; None when no file declares it
    (outside every function) or one declares it where it cannot be deleted."""
    changes: dict[str, _InFile] = {}
    for path, found in names.items():
        if name not in found:
            continue
        leaves = found[name].leaves
        if scope_of(leaves[0]) is not None:  # first met inside a function: only uses here
            changes[path] = _InFile(None, [], leaves)
            continue
        unit = enclosing_unit(leaves[0])
        if unit is None:
            return None
        start, end = unit[0].start_byte, unit[0].end_byte
        uses = [leaf for leaf in leaves if not start <= leaf.start_byte < end]
        changes[path] = _InFile((start, end), unit_deletion_spans([unit]), uses)
    if all(change.declaration is None for change in changes.values()):
        return None
    return changes


def _in_scope(
    stand_in: bytes, path: str, change: _InFile, names: Mapping[str, dict[bytes, Name]]
) -> bool:
    """Whether `stand_in` can be seen at the uses `change` renames in `path`: as
    `identifiers` judges it there, or as a name another file declares outside every
    function (a header's, which `path` may include)."""
    here = names[path].get(stand_in)
    if here is not None:
        if change.declaration is not None:
            start, end = change.declaration
            if start <= here.first.start_byte < end:
                return False  # it is first seen in what goes
        if visible(here, change.uses):
            return True
    return any(
        stand_in in found and scope_of(found[stand_in].first) is None
        for other, found in names.items()
        if other != path
    )


def replacement_plan(
    program: SetProgram, settled: frozenset[bytes] = frozenset()
) -> list[tuple[bytes, dict[str, bytes]]]:
    """(name, candidate set) per name that two files or more spell and that is not
    `settled`, most used first: its declarations deleted and its uses, in every file,
    renamed to each stand-in in turn; only sets smaller than the current one."""
    names = {
        path: identifier_names(parsed.tree.root_node)
        for path, parsed in sorted(program.parsed.items())
    }
    merged: dict[bytes, Name] = {}
    spread: dict[bytes, int] = {}
    for found in names.values():
        for text, name in found.items():
            merged.setdefault(text, Name(text)).leaves.extend(name.leaves)
            spread[text] = spread.get(text, 0) + 1
    shared = sorted(
        (text for text, files in spread.items() if files > 1 and text not in settled),
        key=lambda text: (-len(merged[text].leaves), text),
    )
    size = sum(map(len, program.files.values()))
    plan: list[tuple[bytes, dict[str, bytes]]] = []
    for text in shared:
        changes = _changes(text, names)
        if changes is None:
            continue
        kinds = {use.type for change in changes.values() for use in change.uses}
        if not kinds:
            continue  # nothing to rename: deleting declarations is the per-file passes' job
        stand_ins = [
            other
            for other in merged.values()
            if same_kind(other, merged[text], kinds)
            and all(
                _in_scope(other.text, path, change, names)
                for path, change in changes.items()
                if change.uses
            )
        ]
        stand_ins.sort(key=stand_in_order)
        spellings = [stand_in.text for stand_in in stand_ins[:MAX_STAND_INS]]
        uses = [use for change in changes.values() for use in change.uses]
        if takes_literal(merged[text], uses):
            spellings.append(LITERAL_STAND_IN)
        for spelling in spellings:
            candidate = dict(program.files)
            for path, change in changes.items():
                candidate[path] = _renamed(program.files[path], change, spelling)
            if sum(map(len, candidate.values())) < size:
                plan.append((text, candidate))
    return plan


def _renamed(text: bytes, change: _InFile, stand_in: bytes) -> bytes:
    """`text` without the declaration `change` deletes, its uses spelling `stand_in`."""
    deletions = deletion_edits(text, change.spans)
    deleted = [(deletion.start, deletion.end) for deletion in deletions]
    renames = [
        edits.Edit(use.start_byte, use.end_byte, stand_in)
        for use in change.uses
        if not any(start <= use.start_byte < end for start, end in deleted)
    ]
    return edits.apply(text, deletions + renames)


def replace_identifiers_across(program: SetProgram) -> bool:
    """Take the first interesting replacement, plan again, until none is; True if any
    (`identifiers.take_replacements`); the session runs the pass again after the
    per-file rounds have changed the set."""
    return take_replacements(lambda settled: replacement_plan(program, settled), program.try_sets)


def shared_names(program: SetProgram) -> dict[bytes, dict[str, list[tree_sitter.Node]]]:
    """Each identifier that two files or more spell, with its leaves in each file."""
    found: dict[bytes, dict[str, list[tree_sitter.Node]]] = {}
    for path, parsed in program.parsed.items():
        pending = [parsed.tree.root_node]
        while pending:
            node = pending.pop()
            if is_identifier(node):
                found.setdefault(node.text or b"", {}).setdefault(path, []).append(node)
            else:
                pending.extend(node.children)
    return {name: by_file for name, by_file in found.items() if len(by_file) > 1}


def name_deletions_across(program: SetProgram) -> Iterator[dict[str, bytes]]:
    """Per shared name, most occurrences first: the set with every unit that mentions
    it deleted in every file (none where some occurrence has no unit around it)."""
    shared = shared_names(program)
    order = sorted(
        shared, key=lambda name: (-sum(len(leaves) for leaves in shared[name].values()), name)
    )
    for name in order:
        files = dict(program.files)
        for path, leaves in shared[name].items():
            units = [enclosing_unit(leaf) for leaf in leaves]
            present = [unit for unit in units if unit is not None]
            if len(present) < len(units):
                break
            spans = outermost_spans(unit_deletion_spans(present))
            files[path] = render_deletions(program.files[path], spans)
        else:
            yield files


def delete_names_across(program: SetProgram) -> bool:
    """Each shared name's deletion in turn, derived again after every success; True if
    any went."""
    progress = False
    while program.try_sets(name_deletions_across(program)) is not None:
        progress = True
    return progress


def small_enough(program: SetProgram) -> bool:
    """Two files with a grammar or more, none of them past the size at which the late
    single-program passes start: every candidate costs a test."""
    parsed = program.parsed.values()
    return len(parsed) > 1 and all(tree.tokens <= EXHAUSTIVE_MAX_TOKENS for tree in parsed)


ACROSS: tuple[Pass[SetProgram], ...] = (
    Pass(
        "cross-names",
        delete_names_across,
        "a name that several files spell, with every statement or list element that "
        "mentions it, in every file at once",
        applies=small_enough,
    ),
    Pass(
        "cross-identifiers",
        replace_identifiers_across,
        "a name that several files spell: its declarations deleted and its uses in every "
        "file renamed to another name of its kind in scope there",
        applies=small_enough,
    ),
)
"""The passes over the whole set, run once the per-file rounds reach their fixpoint; if
one of them shrinks the set, the rounds run again."""
