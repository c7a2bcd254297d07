"""The "Time an NKI kernel" recipe (conf/experiment/nki_add.yaml, neuronexp.modules.nki_kernels), wired up over the
torch-neuronx STAND-IN and a stand-in `nki` package that runs the kernel's own body with the torch operations its NKI
calls stand for. What this shows: the recipe's module, inputs, experiment and every figure neuronexp gives a layer
reach the kernel and come back. What it cannot show: that the kernel compiles and runs on a NeuronCore (UNVERIFIED on
hardware; smoke check N1). Planted device time (3 us for the kernel, 4 for aten::add), not Trainium's."""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

import pytest
import torch

import neuronexp
from helpers import FAST
from helpers.layers import handed
from helpers.neuron_standin.fixture import STANDIN_DIR
from neuronexp.cell.group import run_cell
from neuronexp.config import (
    BackendName,
    CellSpec,
    DType,
    InputConfig,
    ProfilerConfig,
    RunConfig,
    ScheduleConfig,
    TimingConfig,
)


@pytest.fixture
def nki_kernels(standin):
    """neuronexp.modules.nki_kernels imported against the stand-in `nki` (its folder is on the path with the
    stand-in's), and forgotten afterwards, as a process without `nki` would have it."""
    yield importlib.import_module("neuronexp.modules.nki_kernels")
    for name in [m for m in sys.modules if m == "nki" or m.startswith("nki.") or m.endswith(".nki_kernels")]:
        del sys.modules[name]


def test_the_recipes_kernel_runs_its_own_body(nki_kernels) -> None:
    from neuronexp.modules import NkiKernel, TorchAdd

    x, y = torch.randn(128, 512), torch.randn(128, 512)
    assert torch.equal(NkiKernel()(x, y), TorchAdd()(x, y))
    with pytest.raises(AssertionError, match="the first dimension must fit the partitions"):
        NkiKernel()(torch.randn(129, 4), torch.randn(129, 4))  # 129 rows: more than the SBUF's 128 partitions


def test_an_nki_cell_gets_the_figures_of_any_layer(nki_kernels, explorer_in_process: Path, tmp_path: Path) -> None:
    from neuronexp.modules import NkiKernel

    cfg = RunConfig(
        module=handed(NkiKernel()),
        input=InputConfig(shape=[128, 512], dtype=DType.float32, args=[{"shape": [128, 512]}]),
        backend=BackendName.neuron,
        profiler=ProfilerConfig(schedule=ScheduleConfig(wait=1, warmup=1, active=1, repeat=1)),
        timing=TimingConfig(min_seconds=0, warmup=0, iters=3, min_iters=3, max_seconds=2.0, rounds=1),
    )
    results = run_cell(CellSpec(config=cfg, run_id="nki", experiment="t", module_name="nki_add"), tmp_path)
    cell = results.cells.iloc[0]
    assert cell["status"] == "ok", cell["error"]
    assert cell["first_call_s"] > 0 and cell["latency_median_us"] > 0 and cell["timing_method"] == "wallclock+sync"
    assert cell["device_time_source"] == "profiler_device_events" and cell["device_time_us"] == pytest.approx(3.0)
    kernel = results.ops[(results.ops["op"] == "nki::tensor_add") & (results.ops["device_type"] == "CPU")]
    assert kernel["self_device_us"].sum() == pytest.approx(3.0) and kernel["calls"].sum() == 1
    assert cell["device_time_check"] == "agree"  # key_averages() and the runtime trace: one NEFF of 3 us


def test_the_experiment_plans_its_four_cells(cli, standin, tmp_path: Path) -> None:
    res = cli("+experiment=nki_add", "backend=neuron", "sweep.dry_run=true")
    assert res.returncode == 0, res.stderr
    assert "4 cells" in res.stdout or "4 cell" in res.stdout, res.stdout


@pytest.mark.slow  # a sweep of four cells through the fork server, two of them compiled: about a minute
def test_the_recipe_runs_as_a_user_runs_it(cli_process, fake_explorer: Path, tmp_path: Path) -> None:
    env = {"PYTHONPATH": os.pathsep.join([str(STANDIN_DIR), os.environ.get("PYTHONPATH", "")])}
    res = cli_process("+experiment=nki_add", "backend=neuron", *FAST, "hydra.sweep.dir=s", env=env)
    assert res.returncode == 0, res.stderr[-3000:]
    cells = neuronexp.load(tmp_path / "s").cells
    assert (cells["status"] == "ok").all(), cells["error"].tolist()
    eager = cells[~cells["compiled"]].set_index("module")
    assert eager.loc["nki_add", "device_time_us"] == pytest.approx(3.0)
    assert eager.loc["torch_add", "device_time_us"] == pytest.approx(4.0)
    assert eager.loc["nki_add", "output_check"] == "pass" and eager.loc["torch_add", "output_check"] == "baseline"
    # Neuron cells are timed apart (their capture is set up once per process): the speedup is unpaired, and says so.
    assert eager.loc["nki_add", "speedup_method"] == "unpaired" and eager.loc["nki_add", "speedup_vs_baseline"] > 0
    assert (cells.loc[cells["compiled"], "output_check"] == "pass").all()
