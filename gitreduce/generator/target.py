"""Loading a generator: a Python file or an importable module, and its entry function.

A worker loads the generator once and runs it afresh for every execution;
what cannot be loaded is a GeneratorFailed with a one-line reason. The
generator's module body runs under the recorder's trace, called from
`Target.load`: this module must stay out of the recorder's own modules
(whose callees are not traced), or the loops and guards of a generator's top
level would go unrecognised.
"""

from __future__ import annotations

import importlib.util
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gitreduce.generator.recorder import GeneratorFailed, describe_exception

DEFAULT_ENTRIES = ("generate", "main", "gen")


@dataclass(frozen=True)
class TargetSpec:
    """Where the generator is: a Python file, or an importable module; and its entry function."""

    kind: str  # "file" or "module"
    location: str  # absolute path, or dotted module name
    entry: str | None = None
    cwd: str = "."


class Target:
    """A generator loaded for repeated runs: compiled once, executed afresh for every run.

    A fresh module per run means module-level state (counters, caches) starts
    over each time, so every run depends on its decisions alone; compiling once
    keeps the code objects, and with them the bytecode analysis, shared.
    """

    def __init__(self, spec: TargetSpec) -> None:
        self.spec = spec
        if spec.kind == "file":
            path = Path(spec.location)
            try:
                source = path.read_bytes()
            except OSError as error:
                raise GeneratorFailed(f"cannot read {path}: {error.strerror}") from None
            self._name = "__gitreduce_generator__"
            self._file = str(path)
            self._package: str | None = None
            self._spec = None
            directory = str(path.parent)
            if directory not in sys.path:
                sys.path.insert(0, directory)
        else:
            if spec.cwd not in sys.path:
                sys.path.insert(0, spec.cwd)
            try:
                found = importlib.util.find_spec(spec.location)
            except (ImportError, ValueError) as error:
                raise GeneratorFailed(f"cannot import {spec.location}: {error}") from None
            if found is None or found.loader is None or not hasattr(found.loader, "get_code"):
                raise GeneratorFailed(f"no module named {spec.location!r}")
            self._name = spec.location
            self._file = found.origin or spec.location
            self._package = found.parent
            self._spec = found
            source = None
        try:
            if source is not None:
                self._code = compile(source, self._file, "exec")
            else:
                self._code = found.loader.get_code(spec.location)  # type: ignore[union-attr]
        except SyntaxError as error:
            raise GeneratorFailed(
                f"{Path(self._file).name}:{error.lineno}: syntax error: {error.msg}"
            ) from None
        if self._code is None:
            raise GeneratorFailed(f"{spec.location} has no Python code to run")

    def load(self) -> Callable[..., Any]:
        """A fresh module's entry function."""
        module = types.ModuleType(self._name)
        module.__file__ = self._file
        if self._spec is not None:
            module.__spec__ = self._spec
            module.__package__ = self._package
        sys.modules[self._name] = module
        try:
            exec(self._code, module.__dict__)
        except GeneratorFailed:
            raise
        except Exception as error:
            raise GeneratorFailed(describe_exception(error)) from None
        name = self.spec.entry
        if name is None:
            name = next((n for n in DEFAULT_ENTRIES if callable(module.__dict__.get(n))), None)
            if name is None:
                raise GeneratorFailed(
                    f"{Path(self._file).name} has none of the functions "
                    f"{', '.join(DEFAULT_ENTRIES)}; name the entry function with --entry"
                )
        entry = module.__dict__.get(name)
        if not callable(entry):
            functions = sorted(
                key
                for key, value in module.__dict__.items()
                if isinstance(value, types.FunctionType) and not key.startswith("_")
            )
            raise GeneratorFailed(
                f"{Path(self._file).name} has no function {name!r}"
                + (f" (functions: {', '.join(functions[:8])})" if functions else "")
            )
        return entry
