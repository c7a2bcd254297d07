"""Time per module on Neuron, through the torch-neuronx STAND-IN: the module spans are profiler ranges around the
ops a module dispatches, so device time reaches each module by the op table's own correlation — device events
attached to their launching op (correlate_device_time), or Neuron Explorer's per-op time shared by calls."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from torch import nn

from helpers.layers import handed
from neuronexp.cell.group import run_cell
from neuronexp.config import (
    BackendName,
    CellSpec,
    DType,
    InputConfig,
    NeuronDeviceConfig,
    NeuronProfilerConfig,
    ProfilerConfig,
    RunConfig,
    ScheduleConfig,
    TimingConfig,
)
from neuronexp.modules import NaiveRMSNorm


class TwoNorms(nn.Module):
    """Two naive RMSNorms, one after the other: six op calls each (three of them aten::mul)."""

    def __init__(self) -> None:
        super().__init__()
        self.first, self.second = NaiveRMSNorm(64), NaiveRMSNorm(64)

    def forward(self, x):  # noqa: ANN001
        return self.second(self.first(x))


def _spec(active: int, debug_info: bool = False, **neuron: object) -> CellSpec:
    cfg = RunConfig(
        module=handed(TwoNorms()),
        input=InputConfig(shape=[1, 8, 64], dtype=DType.float32),
        backend=BackendName.neuron,
        profiler=ProfilerConfig(
            schedule=ScheduleConfig(wait=0, warmup=1, active=active, repeat=1),
            modules=True,
            neuron=NeuronProfilerConfig(**neuron),
        ),  # type: ignore[arg-type]
        timing=TimingConfig(min_seconds=0, warmup=0, iters=1, min_iters=1, max_seconds=1.0, rounds=1),
        neuron=NeuronDeviceConfig(debug_info=debug_info),
    )
    return CellSpec(config=cfg, run_id="standin", experiment="test", module_name="two_norms")


def _by_path(results) -> dict:  # noqa: ANN001
    return results.modules.set_index("module_path").to_dict("index")


def test_device_events_reach_each_module_through_its_ops(standin, no_explorer: None, tmp_path: Path) -> None:
    standin.STATE.device_us = {"aten::mul": 40.0, "aten::mean": 10.0, "aten::add": 5.0, "aten::rsqrt": 5.0}
    results = run_cell(_spec(active=2, correlate_device_time=True), tmp_path)
    cell = results.cells.iloc[0]
    assert cell["status"] == "ok", cell["error"]
    assert cell["device_time_source"] == "profiler_device_events" and cell["device_time_us"] == pytest.approx(280)
    rows = _by_path(results)
    assert rows["first"]["self_device_us"] == pytest.approx(140) and rows["second"]["total_device_us"] == pytest.approx(
        140
    )
    assert rows[""]["total_device_us"] == pytest.approx(280) and rows["first"]["share"] == pytest.approx(0.5)
    assert rows["first"]["self_cpu_us"] > 0 and rows["first"]["calls"] == 1


def test_neuron_explorer_per_op_time_is_shared_by_each_module_s_calls(
    standin, fake_explorer: Path, tmp_path: Path
) -> None:
    standin.STATE.switches.key_averages = "none"  # the runtime gives the step's total, Explorer the ops
    results = run_cell(_spec(active=1, debug_info=True), tmp_path)
    cell = results.cells.iloc[0]
    assert cell["status"] == "ok", cell["error"]
    assert cell["device_time_source"] == "neuron_runtime" and cell["device_time_us"] == pytest.approx(224)
    # planted: mul 30 us x3 and mean 12 per norm are named (aten::add_ and rsqrt's unnamed NEFF reach no op row).
    rows = _by_path(results)
    assert rows["first"]["self_device_us"] == pytest.approx(102) and rows["second"]["self_device_us"] == pytest.approx(
        102
    )
    assert rows[""]["total_device_us"] == pytest.approx(204)
    assert rows["second"]["share"] == pytest.approx(102 / 224)  # of the runtime's whole step


def test_without_a_per_op_split_no_module_has_a_device_time(
    standin, fake_explorer: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The runtime's trace gives the step's device time but names no op (issue 42: the likely case on TorchNeuron):
    # a module's share of it is unknown, so its device time is NaN, never the 0.0 a host op's empty device field
    # holds, and the module block says why instead of ranking modules by zeros.
    from neuronexp.moduletime.terminal_lines import module_lines

    standin.STATE.switches.__dict__.update(key_averages="none", runtime_events=True)
    monkeypatch.setenv("FAKE_EXPLORER_FRAMEWORK", "off")  # Explorer's tables name no framework op
    results = run_cell(_spec(active=1, debug_info=True), tmp_path)
    cell = results.cells.iloc[0]
    assert cell["status"] == "ok", cell["error"]
    assert cell["device_time_source"] == "neuron_runtime" and cell["device_time_us"] > 0
    rows = _by_path(results)
    for path in ("", "first", "second"):
        assert math.isnan(rows[path]["total_device_us"]) and math.isnan(rows[path]["share"]), rows[path]
        assert math.isnan(rows[path]["total_device_us_median"])
    assert rows["first"]["self_cpu_us"] > 0 and rows["first"]["calls"] == 1  # the host side is still measured
    lines = module_lines(results.modules, "neuron")
    assert any("no source split the device time per op" in line for line in lines), lines
    assert not any(line.startswith("Hotspots") for line in lines)
    _ranked_by_extract_refused(results, tmp_path)


def _ranked_by_extract_refused(results, run: Path) -> None:  # noqa: ANN001
    from omegaconf import OmegaConf

    from neuronexp.cli.extract import ExtractError, extract
    from neuronexp.engine.ownership import mark

    (run / "config.yaml").write_text(OmegaConf.to_yaml(OmegaConf.create({"module": {"_target_": "x.Y"}})))
    mark(run, "run")
    with pytest.raises(ExtractError, match="no module has a device time"):
        extract(run, 3, run.parent / "studies")
    assert not (run.parent / "studies").exists()
