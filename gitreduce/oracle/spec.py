"""The test spec: what decides how a candidate is tested, and hence keys cached verdicts.

Job: `TestSpec` with its fingerprint (the cache key of every verdict, which
follows the bytes of the test scripts the command names) and the helpers that
read the command's words: its first word, the files it names, and the command
with a relative test script made absolute for running in a scratch directory.
"""

import hashlib
import json
import os
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from gitreduce.core.outcome import Outcome, Verdict
from gitreduce.oracle.signature import SIGNATURE_VERSION, signature_matches

_ASSIGNMENT = re.compile(r"[A-Za-z_]\w*=")
_PLAIN_WORD = re.compile(r"[\w./+@%,:-]+")
_INTERPRETER = re.compile(r"(?:ba|da|k|z)?sh|python[\d.]*|perl|ruby|node")


@dataclass(frozen=True)
class TestSpec:
    """Everything that decides how a candidate is tested, and hence keys cached verdicts.

    `command` runs under `/bin/sh -c` with the scratch dir as cwd; `{}` (bare
    or quoted) becomes the quoted candidate path. Because the scratch dir is
    not where the user typed the command, a relative test script path such as
    `./test.sh` (the first word, or the script argument of an interpreter like
    `python3 check.py`) is resolved against the directory gitreduce runs in.

    `repeat` > 1 judges every candidate by the majority of that many runs
    (`gitreduce.oracle.repeat`), for tests that fail only sometimes.

    `file_set`: candidates are packed file sets (`gitreduce.core.fileset`),
    written at their relative paths into the scratch dir, which is then what
    `{}` names; `relative_path` is only the set's name then.
    """

    __test__ = False  # not a pytest test class, despite the name

    command: str
    relative_path: str
    polarity: Literal["bisect", "interesting"] = "bisect"
    timeout: float | None = None
    signature_regex: str | None = None
    any_failure: bool = False
    env: Mapping[str, str] | None = None
    repeat: int = 1
    file_set: bool = False

    def with_file_argument(self) -> "TestSpec | None":
        """This test with the candidate's path as its last argument; None if the command
        already places it with `{}`."""
        if "{}" in self.command:
            return None
        return replace(self, command=f"{self.command} {{}}")

    def fingerprint(self) -> str:
        """Hex sha1 of all that can change a verdict, including the test scripts' bytes.

        Editing the test script must invalidate cached verdicts even when the
        command line stays the same. A timeout derived by `calibrate` varies
        from run to run, so a cache that must survive reruns keys on the spec
        as the user gave it.
        """
        digest = hashlib.sha1()
        record = {
            "command": self.command,
            "relative_path": self.relative_path,
            "polarity": self.polarity,
            "timeout": self.timeout,
            "signature_regex": self.signature_regex,
            "any_failure": self.any_failure,
            "env": sorted((self.env or {}).items()),
            "signature_version": SIGNATURE_VERSION,
        }
        if self.repeat != 1:  # a majority verdict is not a single run's: a cache of its own
            record["repeat"] = self.repeat
        if self.file_set:  # a set's verdicts never meet a single file's: a cache of its own
            record["file_set"] = True
        digest.update(json.dumps(record, sort_keys=True).encode())
        for path in _named_files(self.command, self.relative_path):
            with open(path, "rb") as script:
                digest.update(b"\0" + hashlib.file_digest(script, "sha1").digest())
        return digest.hexdigest()

    def is_interesting(self, original: Outcome, outcome: Outcome) -> bool:
        """Whether `outcome` shows the same failure as `original` (no slippage)."""
        return outcome.verdict is Verdict.BAD and (
            self.any_failure or signature_matches(original.signature, outcome.signature)
        )


def _words(command: str) -> list[str]:
    try:
        return shlex.split(command)
    except ValueError:  # unbalanced quotes: sh will complain, we only look
        return command.split()


def first_word(command: str) -> str | None:
    """The program the command runs: its first word that is not a variable assignment."""
    return next((word for word in _words(command) if not _ASSIGNMENT.match(word)), None)


def _named_files(command: str, relative_path: str) -> list[Path]:
    """Existing files the command names, except the candidate (which lives in the scratch dir)."""
    files: dict[Path, None] = {}
    for word in _words(command):
        if "{}" in word or word == relative_path:
            continue
        path = Path(word).expanduser()
        if path.is_file():
            files[path.resolve()] = None
    return list(files)


def anchored(command: str, relative_path: str, base: Path) -> str:
    """The command with a relative test script path made absolute.

    Only the script word is touched: other relative words may well name files
    the test creates in the scratch dir (`./a.out`), or the candidate itself.
    """
    words = list(re.finditer(r"\S+", command))
    index = next((i for i, m in enumerate(words) if not _ASSIGNMENT.match(m.group())), None)
    if index is None:
        return command
    targets = [words[index]] if "/" in words[index].group() else []
    if _INTERPRETER.fullmatch(os.path.basename(words[index].group())):
        script = next((m for m in words[index + 1 :] if not m.group().startswith("-")), None)
        if script is not None:
            targets.append(script)
    for match in reversed(targets):
        word = match.group()
        if (
            _PLAIN_WORD.fullmatch(word)
            and not os.path.isabs(word)
            and word != relative_path
            and (base / word).is_file()
        ):
            absolute = shlex.quote(os.path.normpath(base / word))
            command = command[: match.start()] + absolute + command[match.end() :]
    return command
