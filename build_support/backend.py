"""setuptools' build backend, with the project's own dependencies in the build environment.

The build writes the manual and the bash completion from the command line's
own help (see `setup.py`), which means importing the command line: its
dependencies must be there even in pip's isolated build environment.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from setuptools import build_meta
from setuptools.build_meta import *  # noqa: F403  (the backend's hooks, as setuptools has them)


def _dependencies() -> list[str]:
    project = tomllib.loads(Path("pyproject.toml").read_text())["project"]
    return list(project["dependencies"])


def get_requires_for_build_wheel(config_settings: dict[str, str] | None = None) -> list[str]:
    return build_meta.get_requires_for_build_wheel(config_settings) + _dependencies()


def get_requires_for_build_editable(config_settings: dict[str, str] | None = None) -> list[str]:
    return build_meta.get_requires_for_build_editable(config_settings) + _dependencies()
