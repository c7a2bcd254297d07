"""The study on Trainium as a user starts it, `neuronexp +experiment=rmsnorm_sweep backend=neuron`, through the
console script (cells in the fork server's processes) over the torch-neuronx STAND-IN, loaded as an outside check
loads it (its folder on PYTHONPATH, nothing else: its tensors stay on the CPU), with the fake neuron-explorer: every
cell has its device time, the naive module's hotspot is the planted aten::mul, correlate_device_time was passed, and
every cell's NeuronConfig got the NEFF cache pinned in its process. Planted figures, not Trainium's."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import neuronexp
from helpers import FAST
from helpers.neuron_standin.fixture import STANDIN_DIR


@pytest.mark.slow  # a fork server and three cells, one of them compiled: about 30 s
def test_the_study_on_the_stand_in_gives_device_time_on_every_cell(
    cli_process, fake_explorer: Path, tmp_path: Path
) -> None:
    env = {
        "PYTHONPATH": os.pathsep.join([str(STANDIN_DIR), os.environ.get("PYTHONPATH", "")]),
        "NEURONEXP_CACHE_DIR": str(tmp_path / "cache"),
    }
    res = cli_process("+experiment=rmsnorm_sweep", "backend=neuron", *FAST, "hydra.sweep.dir=s", env=env)
    assert res.returncode == 0, res.stderr[-3000:]
    cells = neuronexp.load(tmp_path / "s").cells.set_index("module")
    assert sorted(cells.index) == ["rmsnorm_compiled", "rmsnorm_fused", "rmsnorm_naive"]
    assert (cells["status"] == "ok").all(), cells["error"].to_dict()
    assert (cells["neuron_correlate_device_time"] == "taken").all()
    # planted: naive 112 us per step (three aten::mul of 30), fused 20, the compiled graph one NEFF of 18.
    planted = {"rmsnorm_naive": 112, "rmsnorm_fused": 20, "rmsnorm_compiled": 18}
    assert cells["device_time_us"].to_dict() == pytest.approx(planted)
    assert (cells["device_time_check"] == "agree").all()  # key_averages() and the runtime trace
    assert cells.loc["rmsnorm_naive", "top_op"] == "aten::mul"
    (cache,) = set(cells["neuron_neff_cache_dir"])  # one per-user cache shared by the sweep's cells, for this SDK
    assert Path(cache).parent == tmp_path / "cache" / "neff" and Path(cache).name.startswith("torch-neuronx-")
    for job in (tmp_path / "s").glob("[0-9]*"):  # ... pinned in each cell's own process
        assert json.loads((job / "env.json").read_text())["neuron_env"]["TORCH_NEURONX_NEFF_CACHE_DIR"] == cache
    assert "Trainium first contact" in res.stdout and "3 cell(s)" in res.stdout
