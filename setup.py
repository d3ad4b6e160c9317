"""The build step beyond pyproject.toml: the manual (`git-reduce.1`) and the bash completion
(`git-reduce`), written from the command line's own help into the wheel's data, so that with
the environment's bin/ on PATH, `man git-reduce`, `git help reduce` and `git reduce <TAB>`
find them (man and bash-completion look beside each bin/ in PATH, under share/)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from setuptools import Command, setup
from setuptools.command.build import build

ROOT = Path(__file__).resolve().parent
GENERATED = Path("build", "generated")  # relative, as data_files wants its sources
OUTPUTS = {
    "man": ("share/man/man1", GENERATED / "git-reduce.1"),
    "bash": ("share/bash-completion/completions", GENERATED / "git-reduce"),
}


class BuildManual(Command):
    """Write the generated data files (`python -m gitreduce.cli.manual`) before they are
    installed."""

    description = "write git-reduce.1 and the bash completion from the command line's help"
    user_options: list[tuple[str, str | None, str]] = []  # noqa: RUF012 (distutils' interface)

    def initialize_options(self) -> None:
        self.editable_mode = False  # set by setuptools' editable_wheel

    def finalize_options(self) -> None:
        pass

    def run(self) -> None:
        # the sources first, then whatever this build sees (pip's isolated environment)
        search = os.pathsep.join([str(ROOT), *(entry for entry in sys.path if entry)])
        environment = {**os.environ, "PYTHONPATH": search}
        for what, (_, path) in OUTPUTS.items():
            command = [sys.executable, "-m", "gitreduce.cli.manual", what, "-o", str(ROOT / path)]
            subprocess.run(command, cwd=ROOT, env=environment, check=True)
        if self.editable_mode:
            # editable_wheel means to install data files into the wheel but looks for
            # `has_data` where distutils says `has_data_files`, so they would be left out
            self.run_command("install_data")


class Build(build):
    sub_commands = [("build_manual", None), *build.sub_commands]  # noqa: RUF012


setup(
    cmdclass={"build": Build, "build_manual": BuildManual},
    data_files=[(target, [str(path)]) for target, path in OUTPUTS.values()],
)
