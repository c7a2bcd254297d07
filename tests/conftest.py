"""Fixtures shared by every test package; plain helpers live in tests/helpers (importable as `helpers`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import CliResult, run_process
from helpers.inproc import run_main
from helpers.neuron_standin.fixture import explorer_in_process, fake_explorer, no_explorer, standin

__all__ = ["cli", "cli_process", "explorer_in_process", "fake_explorer", "no_explorer", "standin"]


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Tests marked for hardware skip, saying why, where it is absent (pyproject.toml lists the markers)."""
    if item.get_closest_marker("cuda"):
        import torch

        if not torch.cuda.is_available():
            pytest.skip("needs a CUDA device (none here)")
    if item.get_closest_marker("neuron"):
        import importlib.util

        if importlib.util.find_spec("torch_neuronx") is None or "neuron_standin" in str(
            importlib.util.find_spec("torch_neuronx").origin
        ):
            pytest.skip("needs a Trainium instance with torch-neuronx (not installed here)")


@pytest.fixture(scope="session", autouse=True)
def probe_cache(tmp_path_factory: pytest.TempPathFactory):
    """The host probe's cache for this test session (cells the tests run, in this process or as commands):
    never the user's own, measured once per session and thread count."""
    import os

    path = tmp_path_factory.mktemp("neuronexp-cache")
    old = os.environ.get("NEURONEXP_CACHE_DIR")
    os.environ["NEURONEXP_CACHE_DIR"] = str(path)
    yield path
    if old is None:
        os.environ.pop("NEURONEXP_CACHE_DIR", None)
    else:
        os.environ["NEURONEXP_CACHE_DIR"] = old


@pytest.fixture(scope="session", autouse=True)
def fork_server():
    """One fork server for the whole session (cellprocess.forkserver): the sweeps the tests run, in this process or as
    commands, fork their cell processes from its template instead of starting one each (an `import torch`)."""
    from neuronexp.cellprocess.forkserver import ForkServer

    with ForkServer(warm=[]) as server:
        yield server


@pytest.fixture
def cli(tmp_path: Path):
    """Run a console script in an empty working directory (not the repository), in this process (helpers.inproc):
    the exit status, stdout and stderr a process would give."""

    def _run(*args: str, **kwargs) -> CliResult:
        return run_main(list(args), cwd=tmp_path, **kwargs)

    return _run


@pytest.fixture
def cli_process(tmp_path: Path):
    """Run the installed console script as a process, where only a process shows the behaviour (a signal, a killed
    cell, the interpreter's own start-up and imports)."""

    def _run(*args: str, **kwargs) -> CliResult:
        return run_process(list(args), cwd=tmp_path, **kwargs)

    return _run
