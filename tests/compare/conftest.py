"""The real sweep the compare CLI tests read (run once per session: a sweep costs seconds)."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import small_sweep


@pytest.fixture(scope="session")
def sweep(tmp_path_factory) -> Path:
    """A real naive × fused sweep over two shapes (4 cells, 20 samples each) through the console script."""
    return small_sweep(tmp_path_factory.mktemp("compare"), "[1,8,64],[1,16,128]", "timing.iters=20")
