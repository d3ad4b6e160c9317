"""Test-suite wide settings."""

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import configuration, settings

# Hypothesis keeps its example database and caches outside the repository.
configuration.set_hypothesis_home_dir(Path(tempfile.gettempdir()) / "hypothesis-gitreduce-tests")
settings.register_profile("gitreduce", database=None)
settings.load_profile("gitreduce")


@pytest.fixture(scope="session")
def dask_address(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`dask://127.0.0.1:PORT` of a `dask scheduler` with two single-threaded `dask worker`s,
    started once for the whole run by the tests that ask for it, stopped at its end."""
    from dask_support import dask_cluster  # imports distributed: only for the tests that ask

    with dask_cluster(tmp_path_factory.mktemp("dask")) as address:
        yield address
