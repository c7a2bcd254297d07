"""Hotspots over profiler cycles: the share shown beside an op's median time is that time's share of the median
step, so the ranking and the shares never disagree."""

from __future__ import annotations

import pandas as pd
import pytest

from neuronexp.analysis.ops import hotspots

# Two ops over three cycles whose steps differ (3, 19 and 12 µs). Median times: a 3, b 9; a median of each
# cycle's share instead would give a 0.526 and b 0.474, ranking b first with the smaller share.
CYCLES = {
    0: {"aten::a": 2.0, "aten::b": 1.0},
    1: {"aten::a": 10.0, "aten::b": 9.0},
    2: {"aten::a": 3.0, "aten::b": 9.0},
}


def _ops() -> pd.DataFrame:
    rows = []
    for cycle, times in CYCLES.items():
        step = sum(times.values())
        rows += [
            {
                "run_id": "r",
                "cycle": cycle,
                "op": op,
                "device_type": "CPU",
                "calls": 1.0,
                "leaf": True,
                "self_device_us": us,
                "device_share": us / step,
            }
            for op, us in times.items()
        ]
    return pd.DataFrame(rows)


def test_shares_are_of_the_median_step_and_follow_the_ranking() -> None:
    spots = hotspots(_ops())["r"]
    assert list(spots["op"]) == ["aten::b", "aten::a"]
    assert list(spots["self_device_us"]) == [9.0, 3.0]
    assert list(spots["share"]) == pytest.approx([9.0 / 12.0, 3.0 / 12.0])


def test_the_hotspot_is_a_leaf_op_never_the_wrapper_that_dispatched_it() -> None:
    """aten::linear's self time (dispatch) exceeds any leaf's here, yet the work is its leaves' (cell.optree)."""
    from neuronexp.cell.rows import hotspot

    rows = [
        {
            "run_id": "r",
            "cycle": 0,
            "op": op,
            "device_type": "CPU",
            "calls": 1.0,
            "leaf": leaf,
            "self_device_us": us,
            "device_share": us / 20.0,
        }
        for op, leaf, us in (("aten::linear", False, 12.0), ("aten::addmm", True, 5.0), ("aten::t", True, 3.0))
    ]
    spots = hotspots(pd.DataFrame(rows))["r"]
    assert list(spots["op"]) == ["aten::addmm", "aten::t"]
    assert hotspot(rows) == ("aten::addmm", pytest.approx(5.0 / 20.0))
