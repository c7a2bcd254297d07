"""Device time per op from outside key_averages() (Neuron Explorer) put into the op rows: known answers."""

from __future__ import annotations

import math

import pytest

from neuronexp.cell.profiling import CycleProfile, ProfileResult, fill_device_times


def _row(op: str, calls: float, device_type: str = "CPU", us: float = 0.0) -> dict:
    return {
        "op": op,
        "device_type": device_type,
        "calls": calls,
        "self_cpu_us": 5.0,
        "cpu_total_us": 5.0,
        "self_device_us": us,
        "device_total_us": us,
        "device_share": math.nan,
    }


def test_host_rows_get_the_time_shared_by_calls_and_the_cycle_sums_follow() -> None:
    # record_shapes splits aten::mul over two rows (1 and 2 calls per step); aten::sum has no Explorer time.
    ops = [_row("aten::mul", 1), _row("aten::mul", 2), _row("aten::mean", 1), _row("aten::sum", 1)]
    cycle = CycleProfile(cycle=0, ops=ops, device_time_us=0.0, cpu_time_us=20.0, device_ops=0.0)
    result = ProfileResult([cycle])
    fill_device_times(result, {"aten::mul": 90.0, "aten::mean": 12.0, "aten::gone": 5.0})
    assert [r["self_device_us"] for r in cycle.ops] == pytest.approx([30.0, 60.0, 12.0, 0.0])
    assert [r["device_total_us"] for r in cycle.ops] == pytest.approx([30.0, 60.0, 12.0, 0.0])
    assert cycle.device_time_us == pytest.approx(102.0) and cycle.device_ops == 4
    assert [r["device_share"] for r in cycle.ops] == pytest.approx([30 / 102, 60 / 102, 12 / 102, 0.0])


def test_cycles_with_their_own_device_time_and_empty_inputs_are_left_alone() -> None:
    ops = [_row("aten::mul", 1, us=7.0), _row("k", 1, "PrivateUse1", 7.0)]
    own = CycleProfile(cycle=0, ops=ops, device_time_us=7.0, cpu_time_us=5.0, device_ops=1.0)
    fill_device_times(ProfileResult([own]), {"aten::mul": 90.0})
    assert own.ops[0]["self_device_us"] == 7.0 and own.device_time_us == 7.0
    empty = CycleProfile(cycle=0, ops=[_row("aten::mul", 1)], device_time_us=0.0, cpu_time_us=5.0, device_ops=0.0)
    fill_device_times(ProfileResult([empty]), {})
    assert empty.ops[0]["self_device_us"] == 0.0 and empty.device_ops == 0.0
