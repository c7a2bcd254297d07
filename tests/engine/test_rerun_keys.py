"""A rerun into the same sweep directory with a measurement key changed measures again (`ok`), never reuses
the cell measured the other way (`cached`); unchanged, it reuses it. The fast check of every key's effect on the
run_id is tests/config/test_run_id.py."""

from __future__ import annotations

from pathlib import Path

import pytest

import neuronexp
from helpers import FAST


@pytest.mark.slow  # three one-cell sweeps (a minute on the 2-core VM while other jobs ran)
def test_a_rerun_with_a_measurement_key_changed_runs_again(cli, tmp_path: Path) -> None:
    changed = "timing.iters=6"
    sweep = tmp_path / "sweep"
    args = ["-m", "module=rmsnorm_fused", *FAST, "roofline.probe=off", f"hydra.sweep.dir={sweep}"]
    assert cli(*args).returncode == 0
    again = cli(*args)
    assert again.returncode == 0 and neuronexp.load(sweep).cells["status"].tolist() == ["cached"]
    rerun = cli(*args, changed)
    assert rerun.returncode == 0, rerun.stderr
    cells = neuronexp.load(sweep).cells
    fresh = cells[cells["overrides"].str.contains(changed, regex=False)]
    assert fresh["status"].tolist() == ["ok"], cells[["overrides", "status"]]
