"""Fixtures shared by every test package; plain helpers live in tests/helpers (importable as `helpers`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import CliResult, run_cli
from helpers.neuron_standin.fixture import fake_explorer, no_explorer, standin

__all__ = ["cli", "fake_explorer", "no_explorer", "standin"]


@pytest.fixture
def cli(tmp_path: Path):
    """Run the console script in an empty working directory (not the repository)."""

    def _run(*args: str, **kwargs) -> CliResult:
        return run_cli(list(args), cwd=tmp_path, **kwargs)

    return _run
