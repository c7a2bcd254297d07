"""The results the export tests read: one real run of the main study (`+experiment=rmsnorm_sweep`: naive, fused and
compiled RMSNorm, the naive module the baseline; the slow tests), and a small sweep without compiles (the others)."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import FAST, run_cli, small_sweep

# Two shapes, so that "the best variant per shape" has two answers.
SHAPES = "input.shape=[1,8,64],[1,16,64]"


@pytest.fixture(scope="session")
def study(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("study")
    out = root / "rmsnorm_sweep"
    args = [
        "+experiment=rmsnorm_sweep",
        SHAPES,
        *[a for a in FAST if not a.startswith("input.shape=")],
        f"hydra.sweep.dir={out}",
    ]
    result = run_cli(args, cwd=root)
    assert result.returncode == 0, result.stderr[-2000:]
    return out


@pytest.fixture(scope="session")
def single_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("single")
    result = run_cli([*FAST, "hydra.run.dir=run"], cwd=root)
    assert result.returncode == 0, result.stderr[-2000:]
    return root / "run"


@pytest.fixture(scope="session")
def small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real naive × fused sweep over two shapes, the larger first (4 cells, no compile): what the export rules and the
    analyst path are tested on."""
    return small_sweep(tmp_path_factory.mktemp("small"), "[1,16,64],[1,8,64]")
