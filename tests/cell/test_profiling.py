"""The profiled pass on a real CPU profiler: schedule, synchronization and the per-step op rows."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from neuronexp.backends.cpu.cpu_backend import CpuBackend
from neuronexp.cell.profiling import profile_callable, resolve_schedule, steps_needed
from neuronexp.config import ProfilerConfig, ScheduleConfig
from neuronexp.modules import FusedRMSNorm, NaiveRMSNorm

ONE_CYCLE = ScheduleConfig(wait=0, warmup=1, active=1, repeat=1)


class RecordingBackend(CpuBackend):
    def __init__(self, log: list[str]) -> None:
        super().__init__()
        self.log = log

    def synchronize(self) -> None:
        self.log.append("sync")


def _profile(module: torch.nn.Module, tmp_path: Path, **kwargs) -> object:
    x = torch.randn(1, 16, 128)
    kwargs.setdefault("schedule", ONE_CYCLE)
    cfg = ProfilerConfig(**kwargs)
    with torch.inference_mode():
        return profile_callable(lambda: module(x), CpuBackend(), cfg, tmp_path)


def test_synchronize_precedes_every_profiler_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log: list[str] = []
    real_step = torch.profiler.profile.step
    monkeypatch.setattr(torch.profiler.profile, "step", lambda self: (log.append("step"), real_step(self))[1])
    cfg = ProfilerConfig(schedule=ScheduleConfig(wait=1, warmup=1, active=2, repeat=2))
    profile_callable(lambda: log.append("call"), RecordingBackend(log), cfg, tmp_path)
    assert steps_needed(resolve_schedule(cfg, CpuBackend())) == 8
    assert log == ["call", "sync", "step"] * 8


def test_off_neuron_the_default_schedule_profiles_five_cycles_of_one_step(tmp_path: Path) -> None:
    cfg = ProfilerConfig()  # every schedule value null: the backend's default
    assert resolve_schedule(cfg, CpuBackend()) == ScheduleConfig(wait=1, warmup=1, active=1, repeat=5)
    result = _profile(NaiveRMSNorm(128), tmp_path, schedule=ScheduleConfig(), export_trace=False)
    assert [c.cycle for c in result.cycles] == [0, 1, 2, 3, 4]
    # A value that is set wins over the backend's default; the others still come from it.
    assert resolve_schedule(ProfilerConfig(schedule=ScheduleConfig(repeat=2)), CpuBackend()) == ScheduleConfig(
        1, 1, 1, 2
    )


def test_naive_rmsnorm_dispatches_six_calls_and_executes_seven(tmp_path: Path) -> None:
    result = _profile(NaiveRMSNorm(128), tmp_path)
    (cycle,) = result.cycles
    calls = {row["op"]: row["calls"] for row in cycle.ops}
    assert calls["aten::mul"] == 3
    assert calls["aten::mean"] == 1 and calls["aten::add"] == 1 and calls["aten::rsqrt"] == 1
    assert cycle.ops_dispatched == 6  # x*x, mean, +eps, rsqrt, x*rms, *weight
    # mean runs as sum and div_: mul, sum, div_, add, rsqrt, mul, mul
    assert cycle.device_ops == 7
    assert not any(row["op"].startswith("ProfilerStep") for row in cycle.ops)
    leaf = {row["op"]: row["leaf"] for row in cycle.ops}
    assert leaf["aten::mul"] and leaf["aten::sum"] and not leaf["aten::mean"]
    # On CPU the "device" columns are the CPU's own self time, and shares add up to one.
    assert all(row["self_device_us"] == row["self_cpu_us"] for row in cycle.ops)
    assert sum(row["device_share"] for row in cycle.ops) == pytest.approx(1.0)
    assert cycle.device_time_us == pytest.approx(sum(row["self_cpu_us"] for row in cycle.ops))
    assert (tmp_path / "trace.json").stat().st_size > 0


def test_fused_rmsnorm_is_one_dispatched_call_that_executes_the_same_work(tmp_path: Path) -> None:
    """On a CPU torch.rms_norm is a composite: one call, seven operations inside (issue 9)."""
    (cycle,) = _profile(FusedRMSNorm(128), tmp_path).cycles
    leaf = {row["op"]: row["leaf"] for row in cycle.ops}
    assert cycle.ops_dispatched == 1
    assert cycle.device_ops == 7  # pow, sum, div_, add_, rsqrt, mul, mul
    # The wrappers are never hotspot candidates; the ops doing the work are.
    assert not leaf["aten::rms_norm"] and not leaf["aten::_fused_rms_norm"] and not leaf["aten::mean"]
    assert leaf["aten::pow"] and leaf["aten::mul"]


def test_python_frames_stay_out_of_op_rows_and_counts(tmp_path: Path) -> None:
    """profiler=detailed (with_stack) records Python frames; they are not ops and must not be the hotspot."""
    (cycle,) = _profile(NaiveRMSNorm(128), tmp_path, with_stack=True, export_trace=False).cycles
    names = [row["op"] for row in cycle.ops]
    assert names and all(n.startswith("aten::") for n in names), names
    assert cycle.ops_dispatched == 6 and cycle.device_ops == 7


def test_profile_memory_fills_memory_columns(tmp_path: Path) -> None:
    (cycle,) = _profile(NaiveRMSNorm(128), tmp_path, profile_memory=True, export_trace=False).cycles
    mul = next(r for r in cycle.ops if r["op"] == "aten::mul")
    # three float32 outputs of 1x16x128 per step
    assert mul["self_cpu_memory_bytes"] == 3 * 16 * 128 * 4
    assert "[memory]" not in {r["op"] for r in cycle.ops}
    assert cycle.memory_bytes >= 3 * 16 * 128 * 4
    (plain,) = _profile(NaiveRMSNorm(128), tmp_path, export_trace=False).cycles
    assert plain.memory_bytes is None and plain.ops[0]["self_cpu_memory_bytes"] is None


def test_each_repeat_is_a_cycle_with_its_own_trace(tmp_path: Path) -> None:
    result = _profile(NaiveRMSNorm(128), tmp_path, schedule=ScheduleConfig(wait=0, warmup=1, active=2, repeat=3))
    assert [c.cycle for c in result.cycles] == [0, 1, 2]
    assert [p.name for p in result.trace_paths] == ["trace.json", "trace.1.json", "trace.2.json"]
    # Times and calls are per profiled step: two active steps, still three muls per step.
    assert all({r["op"]: r["calls"] for r in c.ops}["aten::mul"] == 3 for c in result.cycles)
    assert all(c.ops_dispatched == 6 for c in result.cycles)


def test_record_shapes_and_flops_fill_their_columns(tmp_path: Path) -> None:
    linear = torch.nn.Linear(128, 64)
    (cycle,) = _profile(linear, tmp_path, record_shapes=True, with_flops=True, export_trace=False).cycles
    mm = [r for r in cycle.ops if r["op"] == "aten::addmm"]
    assert mm and mm[0]["input_shapes"] and "128" in mm[0]["input_shapes"]
    assert mm[0]["flops"] == 2 * 16 * 128 * 64
    assert not (tmp_path / "trace.json").exists()
