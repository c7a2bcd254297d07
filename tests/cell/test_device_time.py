"""The device-time path on a CUDA-shaped SYNTHETIC profile (no GPU here): real torch.profiler on the CPU, with
CUDA kernel events of known length attached to the CPU ops that would launch them, exactly as torch attaches a
correlated kernel. The per-step device sums, device shares, device-op counts and the cell's median over cycles
must then come out as computed by hand. (The Neuron stand-in's PrivateUse1 rows are checked the same way in
tests/backends/neuron/test_run_cell.py.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
import torch.autograd.profiler as autograd_profiler
from torch.autograd import DeviceType
from torch.autograd.profiler_util import FunctionEvent

from helpers.neuron_standin.synthetic_kernels import attach_kernels
from neuronexp.backends.cpu.cpu_backend import CpuBackend
from neuronexp.cell import run as cell_run
from neuronexp.cell.group import run_cell
from neuronexp.cell.profiling import profile_callable
from neuronexp.config import (
    CellSpec,
    DType,
    InputConfig,
    ProbeMode,
    ProfilerConfig,
    RooflineConfig,
    RunConfig,
    ScheduleConfig,
    TimingConfig,
)
from neuronexp.modules import NaiveRMSNorm

KERNEL = "cuda_kernel::"
# Microseconds of device time per call, per profiler cycle. NaiveRMSNorm calls, per step: mul ×3, mean, add, rsqrt.
KERNEL_US = {
    "aten::mul": [4.0, 8.0, 100.0],
    "aten::mean": [3.0, 3.0, 3.0],
    "aten::add": [1.0, 1.0, 1.0],
    "aten::rsqrt": [1.0, 1.0, 1.0],
}
CALLS = {"aten::mul": 3, "aten::mean": 1, "aten::add": 1, "aten::rsqrt": 1}
PER_STEP = [sum(CALLS[op] * us[c] for op, us in KERNEL_US.items()) for c in range(3)]  # 17, 29, 305


class CudaShapedBackend(CpuBackend):
    """Runs on the CPU, but reads its profiles as the CUDA backend does: device rows are CUDA kernels."""

    device_row_type = DeviceType.CUDA
    device_time_source = "profiler_device_events"


@pytest.fixture
def cuda_kernels(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Attach a CUDA kernel to every call of the ops in KERNEL_US, its length that of the current cycle."""
    original = autograd_profiler.profile._parse_kineto_results
    cycles: list[int] = []

    def parse(self: Any, result: Any, timeout_s: float | None = None) -> list[FunctionEvent]:
        events = original(self, result, timeout_s=timeout_s)
        cycle = len(cycles)
        cycles.append(cycle)
        us = lambda name: KERNEL_US[name][cycle] if name in KERNEL_US else None  # noqa: E731
        return attach_kernels(events, us, DeviceType.CUDA, "cuda", KERNEL)

    monkeypatch.setattr(autograd_profiler.profile, "_parse_kineto_results", parse)
    return cycles


@pytest.mark.parametrize("active", [1, 2])
def test_per_step_device_sums_shares_and_op_counts(cuda_kernels, tmp_path: Path, active: int) -> None:
    module, x = NaiveRMSNorm(64), torch.randn(1, 8, 64)
    cfg = ProfilerConfig(schedule=ScheduleConfig(wait=0, warmup=1, active=active, repeat=1), export_trace=False)
    with torch.inference_mode():
        (cycle,) = profile_callable(lambda: module(x), CudaShapedBackend(), cfg, tmp_path).cycles
    # Per profiled step, whatever the number of active steps: the kernels' time and count, not the host's.
    assert cycle.device_time_us == pytest.approx(PER_STEP[0]) and cycle.device_ops == 6
    kernels = {r["op_raw"]: r for r in cycle.ops if r["device_type"] == "CUDA"}
    assert set(kernels) == {KERNEL + op for op in KERNEL_US}
    for op, us in KERNEL_US.items():
        row = kernels[KERNEL + op]
        assert row["calls"] == CALLS[op] and row["self_device_us"] == pytest.approx(CALLS[op] * us[0])
        assert row["device_share"] == pytest.approx(CALLS[op] * us[0] / PER_STEP[0])
    # The host rows keep their own CPU time, and carry the device time of the kernels they launched.
    host = {r["op"]: r for r in cycle.ops if r["device_type"] == "CPU"}
    assert host["aten::mul"]["calls"] == 3 and host["aten::mul"]["self_cpu_us"] > 0
    assert host["aten::mul"]["self_device_us"] == pytest.approx(3 * KERNEL_US["aten::mul"][0])
    assert cycle.cpu_time_us == pytest.approx(sum(r["self_cpu_us"] for r in cycle.ops))


def test_the_cell_reports_the_median_cycle_not_the_first_or_last(
    cuda_kernels, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cell_run, "resolve_backend", lambda *args, **kwargs: CudaShapedBackend())
    cfg = RunConfig(
        module={"_target_": "neuronexp.modules.NaiveRMSNorm", "hidden_size": 64},
        input=InputConfig(shape=[1, 8, 64], dtype=DType.float32),
        profiler=ProfilerConfig(schedule=ScheduleConfig(wait=0, warmup=1, active=1, repeat=3)),
        timing=TimingConfig(min_seconds=0, warmup=1, iters=3, min_iters=3, max_seconds=5.0),
        roofline=RooflineConfig(probe=ProbeMode.off),
    )
    spec = CellSpec(config=cfg, run_id="cuda-shaped", experiment="synthetic", module_name="rmsnorm_naive")
    results = run_cell(spec, tmp_path)
    cell = results.cells.iloc[0]
    assert cell["status"] == "ok", cell["error"]
    assert len(cuda_kernels) >= 3  # one parse per profiler cycle (and any other profile the cell takes)
    ops = results.ops[results.ops["device_type"] == "CUDA"]
    per_cycle = ops.groupby("cycle")["self_device_us"].sum()
    assert list(per_cycle) == pytest.approx(PER_STEP)
    # 17, 29 and 305 µs per step: the median is the middle cycle, neither the first nor the last.
    assert cell["device_time_us"] == pytest.approx(29.0)
    assert cell["device_ops"] == 6 and cell["device_time_source"] == "profiler_device_events"
    # The host's time per step too: the median of the three cycles' own sums (three different measured figures).
    cpu = results.ops.groupby("cycle")["self_cpu_us"].sum()
    assert len(set(cpu)) == 3 and cell["cpu_time_us"] == pytest.approx(sorted(cpu)[1])
    # The hotspot is named by the host op that launched the kernels (analysis.ops.host_ops), its share of the
    # device time the median over the cycles: of 12/17, 24/29 and 300/305, 24/29.
    shares = [CALLS["aten::mul"] * KERNEL_US["aten::mul"][c] / PER_STEP[c] for c in range(3)]
    assert cell["top_op"] == "aten::mul" and cell["top_op_share"] == pytest.approx(sorted(shares)[1])
