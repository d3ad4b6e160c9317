"""Test-suite wide settings."""

import tempfile
from pathlib import Path

from hypothesis import configuration, settings

# Hypothesis keeps its example database and caches outside the repository.
configuration.set_hypothesis_home_dir(Path(tempfile.gettempdir()) / "hypothesis-gitreduce-tests")
settings.register_profile("gitreduce", database=None)
settings.load_profile("gitreduce")
