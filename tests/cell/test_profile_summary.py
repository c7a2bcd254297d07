"""Known answers for the profile columns: a CUDA-shaped synthetic profile (device rows) through the same
summary code as a real one, and the cell row's profile figures as medians over cycles (issues 9 and 18)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from torch.autograd import DeviceType

from neuronexp.backends.base import Backend
from neuronexp.cell.profiling import CycleProfile, ProfileResult, summarize_cycle
from neuronexp.cell.rows import Measured, measured_columns
from neuronexp.cell.timing import summarize_samples
from neuronexp.config import ProfilerConfig, ScheduleConfig


class CudaShaped(Backend):
    """A backend whose profile has device rows, like CUDA's, without needing a GPU."""

    name = "cuda"
    device_row_type = DeviceType.CUDA


def _avg(key: str, device: DeviceType, count: int, self_cpu: float, self_dev: float) -> SimpleNamespace:
    return SimpleNamespace(
        key=key,
        device_type=device,
        count=count,
        self_cpu_time_total=self_cpu,
        cpu_time_total=self_cpu,
        self_device_time_total=self_dev,
        device_time_total=self_dev,
        input_shapes=[],
        flops=0,
        self_cpu_memory_usage=0,
        self_device_memory_usage=0,
    )


def _event(name: str, parent=None) -> SimpleNamespace:
    evt = SimpleNamespace(
        name=name,
        device_type=DeviceType.CPU,
        cpu_parent=parent,
        cpu_children=[],
        is_python_function=False,
        is_user_annotation=False,
    )
    if parent is not None:
        parent.cpu_children.append(evt)
    return evt


class FakeProfile:
    """Two active steps; each calls aten::mm (1 kernel) and aten::add (1 kernel); the mm kernel takes 3x."""

    def __init__(self) -> None:
        self.evts = []
        for step in range(2):
            marker = _event(f"ProfilerStep#{step}")
            self.evts += [marker, _event("aten::mm", marker), _event("aten::add", marker)]

    def events(self):
        return self.evts

    def key_averages(self, group_by_input_shape: bool = False):
        return [
            _avg("ProfilerStep*", DeviceType.CPU, 2, 50.0, 0.0),
            _avg("aten::mm", DeviceType.CPU, 2, 20.0, 0.0),
            _avg("aten::add", DeviceType.CPU, 2, 10.0, 0.0),
            _avg("gemm_kernel", DeviceType.CUDA, 2, 0.0, 600.0),
            _avg("add_kernel", DeviceType.CUDA, 2, 0.0, 200.0),
        ]


def test_device_time_path_known_answer() -> None:
    cfg = ProfilerConfig(schedule=ScheduleConfig(wait=0, warmup=1, active=2, repeat=1))
    cycle = summarize_cycle(0, FakeProfile(), CudaShaped(), cfg, active=2)
    rows = {r["op"]: r for r in cycle.ops}
    assert "ProfilerStep*" not in rows
    # Per step: (600 + 200) µs of kernels over 2 steps; host ops are not device time.
    assert cycle.device_time_us == pytest.approx(400.0)
    assert cycle.cpu_time_us == pytest.approx(15.0)
    assert rows["gemm_kernel"]["self_device_us"] == pytest.approx(300.0)
    assert rows["gemm_kernel"]["device_share"] == pytest.approx(0.75)
    assert rows["add_kernel"]["device_share"] == pytest.approx(0.25)
    # Executed: device kernels per step; dispatched: the two host calls per step.
    assert cycle.device_ops == pytest.approx(2.0)
    assert cycle.ops_dispatched == pytest.approx(2.0)
    assert rows["gemm_kernel"]["leaf"] and rows["aten::mm"]["leaf"]


def _cycle(i: int, device_us: float, ops: float, dispatched: float) -> CycleProfile:
    row = {
        "run_id": "r",
        "op": "aten::mul",
        "device_type": "CPU",
        "calls": ops,
        "self_device_us": device_us,
        "device_share": 1.0,
        "cycle": i,
        "leaf": True,
    }
    return CycleProfile(
        cycle=i, ops=[row], device_time_us=device_us, cpu_time_us=device_us, device_ops=ops, ops_dispatched=dispatched
    )


def test_profile_columns_are_the_median_over_cycles_not_the_first_or_last() -> None:
    cycles = [
        _cycle(0, 900.0, 9, 9),
        _cycle(1, 100.0, 6, 5),
        _cycle(2, 120.0, 6, 5),
        _cycle(3, 110.0, 6, 5),
        _cycle(4, 50.0, 3, 1),
    ]
    latency = summarize_samples([100.0, 102.0, 98.0, 101.0], [0, 0, 1, 1])
    m = Measured(0.1, latency, ProfileResult(cycles, [], ScheduleConfig(1, 1, 1, 5)), threads=1)
    cols = measured_columns(m, [row for c in cycles for row in c.ops])
    assert cols["device_time_us"] == 110.0  # not 900 (first) nor 50 (last)
    assert cols["device_ops"] == cols["ops_executed"] == 6
    assert cols["ops_dispatched"] == 5
    assert cols["profile_cycles"] == 5 and cols["profile_schedule"] == "1/1/1/5"
    assert cols["profile_ratio"] == pytest.approx(110.0 / latency.median_us)
    assert cols["top_op"] == "aten::mul"
