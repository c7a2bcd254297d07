"""One suite, run against every backend present: the CPU always, Trainium through the torch-neuronx STAND-IN
(tensors on the CPU, clearly not Trainium), CUDA when a GPU is there, the real torch-neuronx on a Trainium
instance. What every backend must do for a cell to be a valid row of the results contract, in the manner of
Hydra's shared launcher test suites."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from neuronexp.backends import resolve_backend
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
from neuronexp.results import CELL_SCHEMA, OP_SCHEMA, SAMPLE_SCHEMA, read_job


# cuda and neuron (a real torch-neuronx on Trainium) skip where their hardware is absent (tests/conftest.py).
@pytest.fixture(
    params=[
        "cpu",
        "neuron-standin",
        pytest.param("cuda", marks=pytest.mark.cuda),
        pytest.param("neuron", marks=pytest.mark.neuron),
    ]
)
def backend_name(request: pytest.FixtureRequest) -> str:
    if request.param == "neuron-standin":
        request.getfixturevalue("standin")
        request.getfixturevalue("no_explorer")
        return "neuron"
    return request.param


def _spec(backend: str) -> CellSpec:
    cfg = RunConfig(
        module={"_target_": "neuronexp.modules.NaiveRMSNorm", "hidden_size": 64},
        input=InputConfig(shape=[1, 8, 64], dtype=DType.float32),
        backend=BackendName(backend),
        profiler=ProfilerConfig(schedule=ScheduleConfig(wait=0, warmup=1, active=1, repeat=2)),
        timing=TimingConfig(min_seconds=0, warmup=1, iters=5, min_iters=5, max_seconds=5.0),
    )
    return CellSpec(config=cfg, run_id=f"suite-{backend}", experiment="suite", module_name="rmsnorm_naive")


def test_the_backend_names_its_device_and_profiles_the_host(backend_name: str) -> None:
    backend = resolve_backend(backend_name)
    assert backend.name == backend_name and isinstance(backend.device_name(), str) and backend.device_name()
    assert "CPU" in {a.name for a in backend.activities()}  # host ops are always recorded
    backend.synchronize()  # callable with nothing queued
    assert backend.time_call(lambda: torch.ones(4).sum()) > 0


def test_a_cell_on_the_backend_is_a_complete_row_of_the_contract(backend_name: str, tmp_path: Path) -> None:
    results = run_cell(_spec(backend_name), tmp_path)
    cell = results.cells.iloc[0]
    assert cell["status"] == "ok", cell["error"]
    assert cell["backend"] == backend_name and str(cell["placement"]).startswith(backend_name)
    assert list(results.cells.columns[: len(CELL_SCHEMA.names)]) == CELL_SCHEMA.names
    assert list(results.ops.columns[: len(OP_SCHEMA.names)]) == OP_SCHEMA.names
    assert list(results.samples.columns) == SAMPLE_SCHEMA.names
    assert cell["latency_samples"] == len(results.samples) == 5
    assert 0 < cell["latency_p10_us"] <= cell["latency_median_us"] <= cell["latency_p90_us"]
    assert cell["timing_method"] == resolve_backend(backend_name).timing_method
    assert set(results.ops["cycle"]) == {0, 1}  # repeat=2: one set of op rows per profiler cycle
    assert "aten::mul" in set(results.ops["op"])  # the naive module's host ops, on every backend
    # Device time is either measured or said to be missing, never a silent zero.
    assert cell["device_time_us"] > 0 or (math.isnan(cell["device_time_us"]) and cell["device_time_source"] == "none")
    on_disk = read_job(tmp_path).cells.iloc[0]
    assert on_disk["run_id"] == cell["run_id"] and on_disk["status"] == "ok"
