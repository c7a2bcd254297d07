"""The real sweep the report tests read (run once per session: a sweep costs seconds)."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import small_sweep


@pytest.fixture(scope="session")
def sweep(tmp_path_factory) -> Path:
    """A real 2 × 2 sweep (naive and fused RMSNorm, two tiny shapes) through the console script."""
    return small_sweep(tmp_path_factory.mktemp("report"), "[1,8,64],[1,64,512]")
