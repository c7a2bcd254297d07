"""A device runtime's host-typed activity in the profile (Kineto privateuse1_runtime, which PyTorch types CPU), through
the same summary code as a real profile, known answers: set apart from the operators, its time nested in an op given
back to that op, and none of it counted as an operator call."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from torch.autograd import DeviceType

from neuronexp.backends.base import Backend
from neuronexp.cell.profiling import summarize_cycle
from neuronexp.config import ProfilerConfig, ScheduleConfig


class WithRuntime(Backend):
    """A backend with device rows whose runtime's activity PyTorch types CPU, as the Neuron backend's."""

    name = "neuron"
    device_row_type = DeviceType.PrivateUse1
    runtime_activities = ("privateuse1_runtime", "privateuse1_driver")


def _event(name: str, cpu: float, parent=None, activity: str = "cpu_op") -> SimpleNamespace:
    evt = SimpleNamespace(
        name=name,
        key=name,
        device_type=DeviceType.CPU,
        is_async=False,
        is_legacy=False,
        is_user_annotation=False,
        is_python_function=False,
        input_shapes=[],
        activity_type=activity,
        cpu_time_total=cpu,
        cpu_parent=parent,
        cpu_children=[],
        kernels=[],
    )
    if parent is not None:
        parent.cpu_children.append(evt)
    return evt


def _avg(key: str, count: int, self_cpu: float, total: float) -> SimpleNamespace:
    return SimpleNamespace(
        key=key,
        device_type=DeviceType.CPU,
        count=count,
        self_cpu_time_total=self_cpu,
        cpu_time_total=total,
        self_device_time_total=0.0,
        device_time_total=0.0,
        input_shapes=[],
        flops=0,
        is_legacy=False,
        is_user_annotation=False,
        self_cpu_memory_usage=0,
        self_device_memory_usage=0,
    )


class FakeProfile:
    """Two profiled steps; in each, aten::mul (10 us) makes a 4 us runtime call inside itself."""

    def __init__(self) -> None:
        self.evts = []
        for step in range(2):
            marker = _event(f"ProfilerStep#{step}", 20.0)
            mul = _event("aten::mul", 10.0, marker)
            call = _event("NeuronRuntime::execute", 4.0, mul, activity="privateuse1_runtime")
            self.evts += [marker, mul, call]

    def events(self):
        return self.evts

    def key_averages(self, group_by_input_shape: bool = False):
        # PyTorch's own figures: the runtime call's 4 us taken out of aten::mul's self time.
        return [
            _avg("ProfilerStep*", 2, 20.0, 40.0),
            _avg("aten::mul", 2, 12.0, 20.0),
            _avg("NeuronRuntime::execute", 2, 8.0, 8.0),
        ]


def test_runtime_activity_is_no_operator_and_its_time_is_its_ops() -> None:
    cfg = ProfilerConfig(schedule=ScheduleConfig(wait=0, warmup=1, active=2, repeat=1))
    cycle = summarize_cycle(0, FakeProfile(), WithRuntime(), cfg, active=2)
    rows = {r["op"]: r for r in cycle.ops}
    assert rows["aten::mul"]["self_cpu_us"] == pytest.approx(10.0)  # 6 own + 4 of the runtime call it made
    assert rows["aten::mul"]["leaf"] and rows["aten::mul"]["device_type"] == "CPU"
    runtime = rows["NeuronRuntime::execute"]
    assert runtime["device_type"] == "runtime" and not runtime["leaf"]
    assert cycle.cpu_time_us == pytest.approx(10.0)  # not 14: the call is in aten::mul's time, not beside it
    assert cycle.ops_dispatched == pytest.approx(1.0)  # the module made one call a step, not two
    plain = summarize_cycle(0, FakeProfile(), Backend(), cfg, active=2)  # a backend without such activities
    assert {r["op"]: r["device_type"] for r in plain.ops}["NeuronRuntime::execute"] == "CPU"
