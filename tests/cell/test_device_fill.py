"""A backend's device time (backends.DeviceFill) put into the op rows and steps: known answers. Where no source split
the time per op, the host op rows say NaN, never 0."""

from __future__ import annotations

import math

import pytest

from neuronexp.backends import DeviceFill
from neuronexp.cell.profiling import CycleProfile, ProfileResult, fill_device_times


def _row(op: str, calls: float, device_type: str = "CPU", us: float = 0.0) -> dict:
    return {
        "op": op,
        "op_raw": op,
        "device_type": device_type,
        "calls": calls,
        "self_cpu_us": 5.0,
        "cpu_total_us": 5.0,
        "self_device_us": us,
        "device_total_us": us,
        "device_share": math.nan,
    }


def _cycle(*ops: dict, device_us: float = 0.0) -> CycleProfile:
    return CycleProfile(cycle=0, ops=list(ops), device_time_us=device_us, cpu_time_us=20.0, device_ops=0.0)


def test_host_rows_get_the_time_shared_by_calls_and_ops_no_source_split_are_nan() -> None:
    # record_shapes splits aten::mul over two rows (1 and 2 calls per step); aten::sum has no Explorer time.
    cycle = _cycle(_row("aten::mul", 1), _row("aten::mul", 2), _row("aten::mean", 1), _row("aten::sum", 1))
    fill_device_times(ProfileResult([cycle]), DeviceFill([{"aten::mul": 90.0, "aten::mean": 12.0, "aten::gone": 5.0}]))
    assert [r["self_device_us"] for r in cycle.ops] == pytest.approx([30.0, 60.0, 12.0, math.nan], nan_ok=True)
    assert [r["device_total_us"] for r in cycle.ops] == pytest.approx([30.0, 60.0, 12.0, math.nan], nan_ok=True)
    assert cycle.device_time_us == pytest.approx(102.0) and cycle.device_ops == 4
    shares = [r["device_share"] for r in cycle.ops]
    assert shares == pytest.approx([30 / 102, 60 / 102, 12 / 102, math.nan], nan_ok=True)


def test_a_whole_step_source_sets_the_step_and_the_shares_leave_room_for_the_rest() -> None:
    cycle = _cycle(_row("aten::mul", 3), _row("aten::add", 1))
    fill_device_times(ProfileResult([cycle]), DeviceFill([{"aten::mul": 90.0}], [(112.0, 6.0)]))
    assert (cycle.device_time_us, cycle.device_ops) == (112.0, 6.0)
    assert cycle.ops[0]["device_share"] == pytest.approx(90 / 112) and math.isnan(cycle.ops[1]["device_share"])
    # Executions unknown (Explorer's total): the matched rows' calls; nothing matched: NaN, not 0.
    for per_op, executed in (({"aten::mul": 90.0}, 3.0), ({}, math.nan)):
        cycle = _cycle(_row("aten::mul", 3), _row("aten::add", 1))
        fill_device_times(ProfileResult([cycle]), DeviceFill([per_op], [(94.0, math.nan)]))
        assert cycle.device_time_us == 94.0 and cycle.device_ops == pytest.approx(executed, nan_ok=True)


def test_no_source_at_all_leaves_nothing_that_reads_as_zero() -> None:
    cycle = _cycle(_row("aten::mul", 3), _row("aten::add", 1))
    fill_device_times(ProfileResult([cycle]), DeviceFill([{}], [(math.nan, math.nan)]))
    assert math.isnan(cycle.device_time_us) and math.isnan(cycle.device_ops)
    assert all(math.isnan(r[k]) for r in cycle.ops for k in ("self_device_us", "device_total_us", "device_share"))


def test_rows_that_hold_their_own_time_keep_it_and_each_cycle_gets_its_own_step() -> None:
    first, second = _cycle(_row("aten::mul", 1, us=7.0)), _cycle(_row("aten::mul", 1, us=9.0))
    fill_device_times(ProfileResult([first, second]), DeviceFill(None, [(7.0, 1.0), (9.0, 1.0)]))  # host rows
    assert [c.device_time_us for c in (first, second)] == [7.0, 9.0]
    assert first.ops[0]["self_device_us"] == 7.0 and first.ops[0]["device_share"] == 1.0
    own = _cycle(_row("aten::mul", 1, us=7.0), _row("k", 1, "PrivateUse1", 7.0), device_us=7.0)
    fill_device_times(ProfileResult([own]), None)  # key_averages()' own device rows: left as they are
    assert own.ops[0]["self_device_us"] == 7.0 and own.device_time_us == 7.0 and math.isnan(own.ops[0]["device_share"])
