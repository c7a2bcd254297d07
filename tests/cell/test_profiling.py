"""The profiled pass on a real CPU profiler: schedule, synchronization and the per-step op rows."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from neuronexp.backends.cpu import CpuBackend
from neuronexp.config import ProfilerConfig, ScheduleConfig
from neuronexp.modules import FusedRMSNorm, NaiveRMSNorm
from neuronexp.cell.profiling import profile_callable, steps_needed


class RecordingBackend(CpuBackend):
    def __init__(self, log: list[str]) -> None:
        super().__init__()
        self.log = log

    def synchronize(self) -> None:
        self.log.append("sync")


def _profile(module: torch.nn.Module, tmp_path: Path, **kwargs) -> object:
    x = torch.randn(1, 16, 128)
    cfg = ProfilerConfig(**kwargs)
    with torch.inference_mode():
        return profile_callable(lambda: module(x), CpuBackend(), cfg, tmp_path)


def test_synchronize_precedes_every_profiler_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log: list[str] = []
    real_step = torch.profiler.profile.step
    monkeypatch.setattr(torch.profiler.profile, "step", lambda self: (log.append("step"), real_step(self))[1])
    cfg = ProfilerConfig(schedule=ScheduleConfig(wait=1, warmup=1, active=2, repeat=2))
    profile_callable(lambda: log.append("call"), RecordingBackend(log), cfg, tmp_path)
    assert steps_needed(cfg) == 8
    assert log == ["call", "sync", "step"] * 8


def test_naive_rmsnorm_shows_its_six_separate_calls(tmp_path: Path) -> None:
    result = _profile(NaiveRMSNorm(128), tmp_path)
    (cycle,) = result.cycles
    calls = {row["op"]: row["calls"] for row in cycle.ops}
    assert calls["aten::mul"] == 3
    assert calls["aten::mean"] == 1 and calls["aten::add"] == 1 and calls["aten::rsqrt"] == 1
    assert cycle.device_ops == 6  # x*x, mean, +eps, rsqrt, x*rms, *weight
    assert not any(row["op"].startswith("ProfilerStep") for row in cycle.ops)
    # On CPU the "device" columns are the CPU's own self time, and shares add up to one.
    assert all(row["self_device_us"] == row["self_cpu_us"] for row in cycle.ops)
    assert sum(row["device_share"] for row in cycle.ops) == pytest.approx(1.0)
    assert cycle.device_time_us == pytest.approx(sum(row["self_cpu_us"] for row in cycle.ops))
    assert (tmp_path / "trace.json").stat().st_size > 0


def test_fused_rmsnorm_is_one_call_to_the_fused_op(tmp_path: Path) -> None:
    (cycle,) = _profile(FusedRMSNorm(128), tmp_path).cycles
    ops = {row["op"] for row in cycle.ops}
    assert "aten::_fused_rms_norm" in ops
    assert cycle.device_ops == 1


def test_each_repeat_is_a_cycle_with_its_own_trace(tmp_path: Path) -> None:
    result = _profile(NaiveRMSNorm(128), tmp_path, schedule=ScheduleConfig(wait=0, warmup=1, active=2, repeat=3))
    assert [c.cycle for c in result.cycles] == [0, 1, 2]
    assert [p.name for p in result.trace_paths] == ["trace.json", "trace.1.json", "trace.2.json"]
    # Times and calls are per profiled step: two active steps, still three muls per step.
    assert all({r["op"]: r["calls"] for r in c.ops}["aten::mul"] == 3 for c in result.cycles)


def test_record_shapes_and_flops_fill_their_columns(tmp_path: Path) -> None:
    linear = torch.nn.Linear(128, 64)
    (cycle,) = _profile(linear, tmp_path, record_shapes=True, with_flops=True, export_trace=False).cycles
    mm = [r for r in cycle.ops if r["op"] == "aten::addmm"]
    assert mm and mm[0]["input_shapes"] and "128" in mm[0]["input_shapes"]
    assert mm[0]["flops"] == 2 * 16 * 128 * 64
    assert not (tmp_path / "trace.json").exists()
