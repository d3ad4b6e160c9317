"""Which tree-sitter grammar parses a file, and what the grammar knows about node kinds.

Official grammar wheels come first: they are ABI-15 grammars that expose
supertypes, which hoisting needs to know which kinds may stand in for each
other. tree-sitter-languages' bundled library is the broad fallback (ABI 14,
no supertypes); its own loader only works with the old tree-sitter API, so its
`tree_sitter_<lang>` symbols are wrapped into capsules here.
"""

from __future__ import annotations

import ctypes
import importlib
import importlib.util
import os
from dataclasses import dataclass, field
from functools import cache
from pathlib import PurePath

import tree_sitter

OFFICIAL_WHEELS = {
    "c": ("tree_sitter_c", "language"),
    "cpp": ("tree_sitter_cpp", "language"),
    "rust": ("tree_sitter_rust", "language"),
    "javascript": ("tree_sitter_javascript", "language"),
    "python": ("tree_sitter_python", "language"),
    "go": ("tree_sitter_go", "language"),
    "java": ("tree_sitter_java", "language"),
}

# The languages bundled in tree-sitter-languages 1.10.2 that are worth offering.
FALLBACK_LANGUAGES = frozenset(
    [
        "bash",
        "c_sharp",
        "commonlisp",
        "css",
        "dockerfile",
        "dot",
        "elisp",
        "elixir",
        "elm",
        "erlang",
        "fortran",
        "gomod",
        "hack",
        "haskell",
        "hcl",
        "html",
        "json",
        "julia",
        "kotlin",
        "lua",
        "make",
        "markdown",
        "objc",
        "ocaml",
        "perl",
        "php",
        "r",
        "regex",
        "rst",
        "ruby",
        "scala",
        "sql",
        "sqlite",
        "toml",
        "tsx",
        "typescript",
        "yaml",
    ]
)

EXTENSIONS = {
    ".c": "c",
    ".h": "c",
    ".i": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".c++": "cpp",
    ".hpp": "cpp",
    ".hh": "cpp",
    ".hxx": "cpp",
    ".ii": "cpp",
    ".h++": "cpp",
    ".cu": "cpp",
    ".cuh": "cpp",
    ".C": "cpp",
    ".H": "cpp",
    ".rs": "rust",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".py": "python",
    ".pyi": "python",
    ".go": "go",
    ".java": "java",
    ".sh": "bash",
    ".bash": "bash",
    ".cs": "c_sharp",
    ".lisp": "commonlisp",
    ".css": "css",
    ".dot": "dot",
    ".el": "elisp",
    ".ex": "elixir",
    ".exs": "elixir",
    ".elm": "elm",
    ".erl": "erlang",
    ".f90": "fortran",
    ".f95": "fortran",
    ".f03": "fortran",
    ".hs": "haskell",
    ".hcl": "hcl",
    ".tf": "hcl",
    ".html": "html",
    ".htm": "html",
    ".json": "json",
    ".jl": "julia",
    ".kt": "kotlin",
    ".kts": "kotlin",
    ".lua": "lua",
    ".mk": "make",
    ".md": "markdown",
    ".m": "objc",
    ".ml": "ocaml",
    ".pl": "perl",
    ".php": "php",
    ".r": "r",
    ".R": "r",
    ".rb": "ruby",
    ".scala": "scala",
    ".sql": "sql",
    ".toml": "toml",
    ".tsx": "tsx",
    ".ts": "typescript",
    ".yaml": "yaml",
    ".yml": "yaml",
}
FILE_NAMES = {
    "Makefile": "make",
    "makefile": "make",
    "GNUmakefile": "make",
    "Dockerfile": "dockerfile",
}

ALIASES = {
    "c++": "cpp",
    "cxx": "cpp",
    "js": "javascript",
    "py": "python",
    "rs": "rust",
    "ts": "typescript",
    "sh": "bash",
    "csharp": "c_sharp",
    "c#": "c_sharp",
}


@dataclass(frozen=True)
class Grammar:
    """A loaded grammar plus the kind-compatibility facts hoisting relies on."""

    name: str
    language: tree_sitter.Language
    # kind -> the supertypes it belongs to (empty for ABI-14 grammars)
    supertypes_of: dict[str, frozenset[str]] = field(default_factory=dict)

    def parser(self) -> tree_sitter.Parser:
        return tree_sitter.Parser(self.language)

    def compatible(self, kind: str, replacement_kind: str) -> bool:
        """Whether a node of `replacement_kind` may plausibly stand where `kind` stood."""
        if kind == replacement_kind:
            return True
        mine = self.supertypes_of.get(kind)
        return bool(mine and mine & self.supertypes_of.get(replacement_kind, frozenset()))


def _supertype_table(language: tree_sitter.Language) -> dict[str, frozenset[str]]:
    table: dict[str, set[str]] = {}
    supertypes = getattr(language, "supertypes", ())
    for supertype in supertypes:
        name = language.node_kind_for_id(supertype)
        if name is None:
            continue
        pending = list(language.subtypes(supertype))
        seen: set[int] = set()
        while pending:  # supertypes nest (e.g. expression > primary_expression)
            kind_id = pending.pop()
            if kind_id in seen:
                continue
            seen.add(kind_id)
            kind = language.node_kind_for_id(kind_id)
            if kind is not None:
                table.setdefault(kind, set()).add(name)
            if kind_id in supertypes:
                pending.extend(language.subtypes(kind_id))
    return {kind: frozenset(names) for kind, names in table.items()}


def _fallback_language(name: str) -> tree_sitter.Language | None:
    spec = importlib.util.find_spec("tree_sitter_languages")
    if spec is None or spec.origin is None:
        return None
    library_path = os.path.join(os.path.dirname(spec.origin), "languages.so")
    if not os.path.exists(library_path):
        return None
    library = ctypes.cdll.LoadLibrary(library_path)
    try:
        constructor = getattr(library, f"tree_sitter_{name}")
    except AttributeError:
        return None
    constructor.restype = ctypes.c_void_p
    capsule_new = ctypes.pythonapi.PyCapsule_New
    capsule_new.restype = ctypes.py_object
    capsule_new.argtypes = (ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)
    return tree_sitter.Language(capsule_new(constructor(), b"tree_sitter.Language", None))


@cache
def load(name: str) -> Grammar | None:
    """The grammar called `name`, or None when neither source has it."""
    name = ALIASES.get(name.lower(), name.lower())
    wheel = OFFICIAL_WHEELS.get(name)
    if wheel is not None:
        try:
            module = importlib.import_module(wheel[0])
        except ImportError:
            module = None
        if module is not None:
            language = tree_sitter.Language(getattr(module, wheel[1])())
            return Grammar(name, language, _supertype_table(language))
    if name in FALLBACK_LANGUAGES or name in OFFICIAL_WHEELS:
        fallback = _fallback_language(name)
        if fallback is not None:
            return Grammar(name, fallback, _supertype_table(fallback))
    return None


def is_known(name: str) -> bool:
    """Whether `load` would look for `name` (an alias counts): no grammar is loaded."""
    name = ALIASES.get(name.lower(), name.lower())
    return name in OFFICIAL_WHEELS or name in FALLBACK_LANGUAGES


def known_languages() -> list[str]:
    return sorted(set(OFFICIAL_WHEELS) | FALLBACK_LANGUAGES)


def detect(path: str) -> str | None:
    """The language name a path's extension or file name implies, if any."""
    pure = PurePath(path)
    if pure.name in FILE_NAMES:
        return FILE_NAMES[pure.name]
    return EXTENSIONS.get(pure.suffix) or EXTENSIONS.get(pure.suffix.lower())
