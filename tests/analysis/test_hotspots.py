"""Hotspots over profiler cycles: the share shown beside an op's median time is that time's share of the median
step, so the ranking and the shares never disagree."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

from neuronexp.analysis.ops import cell_hotspot, host_ops, hotspots, leaf_ops, median_over_cycles

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
    assert cell_hotspot(rows) == ("aten::addmm", pytest.approx(5.0 / 20.0))


def _reference_median_over_cycles(rows: pd.DataFrame, cycles_of: pd.DataFrame, cols: list[str]) -> pd.DataFrame:
    """The rule as pandas says it (analysis.ops computes it in arrays): sums per cycle, a listed cycle without the op
    counting 0, the median over each run's cycles."""
    per_cycle = rows.groupby(["run_id", "cycle", "op"], as_index=False)[cols].sum()
    grid = (
        cycles_of[["run_id", "cycle"]]
        .drop_duplicates()
        .merge(per_cycle[["run_id", "op"]].drop_duplicates(), on="run_id")
    )
    full = grid.merge(per_cycle, on=["run_id", "cycle", "op"], how="left").fillna({c: 0.0 for c in cols})
    return full.groupby(["run_id", "op"], as_index=False)[cols].median()


def _random_ops(rng: np.random.Generator) -> pd.DataFrame:
    """Runs with different cycles (some never profiled twice), ops missing from cycles, ties, NaN times, device rows."""
    rows = []
    for run in range(int(rng.integers(1, 6))):
        for cycle in sorted(rng.choice(7, size=int(rng.integers(1, 6)), replace=False)):
            for op in rng.choice(8, size=int(rng.integers(1, 8)), replace=False):
                us = float(rng.integers(0, 4)) if rng.random() < 0.4 else float(rng.random() * 10)
                rows.append(
                    {
                        "run_id": f"run{run}",
                        "cycle": int(cycle),
                        "op": f"aten::op{op}",
                        "device_type": "CPU" if rng.random() < 0.9 else "neuron",
                        "calls": float(rng.integers(0, 4)),
                        "leaf": bool(rng.random() < 0.8),
                        "self_device_us": math.nan if rng.random() < 0.05 else us,
                        "device_share": float(rng.random()),
                    }
                )
    return pd.DataFrame(rows)


@pytest.mark.parametrize("seed", range(40))
def test_the_array_computation_is_the_pandas_rule(seed: int) -> None:
    rng = np.random.default_rng(seed)
    ops = _random_ops(rng)
    if seed % 3 == 0:  # the tables as read back from results/: Arrow strings
        ops = ops.astype({"run_id": "string[pyarrow]", "op": "string[pyarrow]"})
    rows = ops.sample(frac=float(rng.uniform(0.2, 1.0)), random_state=seed)  # some ops absent from some cycles
    if seed % 4 == 1:  # a row of no op, and rows of cycles that are not listed: in no sum
        rows = pd.concat([rows, rows.head(1).assign(op=None)])
        listed = ops[ops["cycle"] != ops["cycle"].iloc[0]]
    elif seed % 4 == 3:  # rows of cycles numbered past either end of those listed (never another run's cycle)
        rows = pd.concat([rows, rows.head(2).assign(cycle=[-1, 9])])
        listed = ops
    else:
        listed = ops
    cols = ["calls", "self_device_us"]
    expected = _reference_median_over_cycles(rows, listed, cols)
    pd.testing.assert_frame_equal(median_over_cycles(rows, listed, cols), expected, check_dtype=False)
    top = int(rng.integers(1, 4))
    per_op = _reference_median_over_cycles(leaf_ops(host_ops(ops)), ops, cols)
    spots = hotspots(ops, top=top)
    assert sorted(spots) == sorted(per_op["run_id"].astype(str).unique())
    for run, table in spots.items():
        mine = per_op[per_op["run_id"].astype(str) == run]
        ranked = mine.sort_values("self_device_us", ascending=False, kind="stable").head(top)
        assert list(table["op"]) == list(ranked["op"])
        assert list(table["self_device_us"]) == pytest.approx(list(ranked["self_device_us"]), nan_ok=True)


def test_a_row_without_a_cycle_number_is_in_no_cycle() -> None:
    """A table read back from someone's results/ may lack a value; the rule then leaves the row out, as a groupby
    would, instead of reading NaN as a cycle number."""
    rows = [
        {"run_id": "r", "cycle": c, "op": op, "device_type": "CPU", "calls": 1.0, "leaf": True}
        | {"self_device_us": us, "device_share": 0.5}
        for c, op, us in ((0.0, "aten::a", 1.0), (1.0, "aten::a", 2.0), (math.nan, "aten::b", 9.0))
    ]
    ops = pd.DataFrame(rows)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        spots = hotspots(ops)["r"]
        assert median_over_cycles(ops[ops["cycle"].isna()], ops[ops["cycle"].isna()], ["calls"]).empty
    assert list(spots["op"]) == ["aten::a"] and list(spots["self_device_us"]) == [1.5]


def _as_records(ops: pd.DataFrame) -> list[dict]:
    """A cell's op rows as its process has them: records, missing values None or NaN."""
    return [{k: (None if v is pd.NA else v) for k, v in row.items()} for row in ops.to_dict("records")]


@pytest.mark.parametrize("seed", range(60))
def test_a_cells_own_hotspot_is_the_tables_rule(seed: int) -> None:
    """Each cell's process names its hotspot from its records (cell.rows); a report from the whole table
    (`hotspots`): the same op and share, whatever the cell's rows hold."""
    rng = np.random.default_rng(seed)
    ops = _random_ops(rng)
    run = ops[ops["run_id"] == "run0"].sample(frac=float(rng.uniform(0.3, 1.0)), random_state=seed)
    if seed % 5 == 1:  # a row of no cycle; missing leaf flags and shares (a share of 0 or NaN gives no step)
        extra = run.head(2).assign(leaf=[None, math.nan], device_share=[0.0, math.nan], self_device_us=[5.0, 6.0])
        run = pd.concat([run, extra, run.head(1).assign(cycle=math.nan)])
    elif seed % 5 == 2:  # ties: every time the same
        run = run.assign(self_device_us=1.0)
    elif seed % 5 == 3:  # Inductor's graph counters and hashes: one keyed name for several raw ones
        names = ["graph_1_cpp_fused_mul_0", "graph_2_cpp_fused_mul_0", "aten::op1"]
        run = run.assign(op=[names[i % 3] for i in range(len(run))])
    elif seed % 5 == 4:  # device rows only: no host side to prefer
        run = run.assign(device_type="neuron")
    spots = hotspots(run, top=1) if not run.empty else {}
    table = next(iter(spots.values()), None)
    expected = (None, None)
    if table is not None and not table.empty and table["self_device_us"].iloc[0] > 0:
        expected = (table["op"].iloc[0], table["share"].iloc[0])
    op, share = cell_hotspot(_as_records(run))
    assert op == expected[0]
    if op is None:
        assert math.isnan(share)
    else:
        assert share == pytest.approx(expected[1], nan_ok=True, rel=1e-12)


def test_a_cell_with_no_time_above_zero_has_no_hotspot() -> None:
    rows = [
        {"run_id": "r", "cycle": 0, "op": "aten::a", "device_type": "CPU", "leaf": True} | t
        for t in ({"self_device_us": 0.0, "device_share": 0.0}, {"self_device_us": math.nan, "device_share": math.nan})
    ]
    op, share = cell_hotspot(rows)
    assert op is None and math.isnan(share)
    assert cell_hotspot([]) == (None, pytest.approx(math.nan, nan_ok=True))


def test_an_op_without_a_leaf_flag_counts_as_a_leaf() -> None:
    """Rows written before the `leaf` column (None, or NaN read back from a table) are ops that did work: the
    hottest op is one of them here, for a cell's own process and for the report's table alike."""
    rows = [
        {"run_id": "r", "cycle": 0, "op": op, "device_type": "CPU", "calls": 1.0, "leaf": leaf}
        | {"self_device_us": us, "device_share": us / 10.0}
        for op, leaf, us in (("aten::a", None, 6.0), ("aten::b", True, 3.0), ("aten::c", math.nan, 1.0))
    ]
    assert cell_hotspot(rows) == ("aten::a", pytest.approx(0.6))
    assert list(hotspots(pd.DataFrame(rows))["r"]["op"]) == ["aten::a", "aten::b", "aten::c"]


def test_a_cell_with_times_but_no_shares_names_its_hotspot_with_no_share() -> None:
    rows = [
        {"run_id": "r", "cycle": 0, "op": "aten::a", "device_type": "CPU", "leaf": True}
        | {"self_device_us": 4.0, "device_share": share}
        for share in (math.nan, 0.0)
    ]
    op, share = cell_hotspot(rows)  # the time is known, the step it is a share of is not: missing, not 0
    assert op == "aten::a" and math.isnan(share)


def test_each_runs_ops_come_sorted_by_run_then_op_whatever_order_the_rows_are_in() -> None:
    rows = pd.DataFrame(
        [
            {"run_id": run, "cycle": 0, "op": op, "calls": 1.0, "self_device_us": us}
            for run, op, us in (("run_b", "aten::z", 1.0), ("run_b", "aten::a", 2.0), ("run_a", "aten::m", 3.0))
        ]
    )
    table = median_over_cycles(rows, rows, ["self_device_us"])
    assert list(zip(table["run_id"], table["op"], table["self_device_us"])) == [
        ("run_a", "aten::m", 3.0), ("run_b", "aten::a", 2.0), ("run_b", "aten::z", 1.0),
    ]  # fmt: skip


def test_no_row_is_in_a_median_when_no_profiled_cycle_is_listed() -> None:
    """`cycles_of` listing no (run, cycle) (none at all, or none with a run id and a cycle number): every op row is of
    a run not listed, so the table is empty rather than an error or another run's cycle."""
    ops = _ops()
    for cycles_of in (ops.iloc[:0], ops.assign(cycle=math.nan), ops.assign(run_id=None)):
        table = median_over_cycles(ops, cycles_of, ["calls", "self_device_us"])
        assert table.empty and list(table.columns) == ["run_id", "op", "calls", "self_device_us"]


def test_a_row_of_the_cycle_just_past_a_runs_listed_ones_is_in_no_sum() -> None:
    """Run a's row of cycle 2, a cycle not listed, one past the last listed: in no median, never read as run b's
    first cycle."""
    rows = pd.DataFrame(
        [
            {"run_id": run, "cycle": cycle, "op": "aten::mm", "calls": 1.0, "self_device_us": us}
            for run, cycle, us in (("a", 0, 1.0), ("a", 1, 3.0), ("b", 0, 5.0), ("b", 1, 7.0), ("a", 2, 100.0))
        ]
    )
    table = median_over_cycles(rows, rows[rows["cycle"] < 2], ["self_device_us"])
    assert list(zip(table["run_id"], table["self_device_us"])) == [("a", 2.0), ("b", 6.0)]


def test_a_cells_table_is_its_ops_columns_numbered_from_its_hotspot() -> None:
    """What a report prints per cell: op, calls, time and share, rows numbered 0 (the hotspot) onwards, with no
    column left over from the whole table's row numbers."""
    two = pd.concat([_ops().assign(run_id="q"), _ops()])
    for run in ("q", "r"):
        table = hotspots(two, top=1)[run]
        assert list(table.columns) == ["op", "calls", "self_device_us", "share"]
        assert list(table.index) == [0] and list(table["op"]) == ["aten::b"]


def test_a_column_read_back_with_no_value_at_all_is_the_pandas_rule() -> None:
    """A column with no value in any row (None throughout: pandas keeps it as objects) is the rule's too: no time is
    0 in a cycle's sum, and no cycle number puts the row in no cycle, instead of an error."""
    ops = _ops()
    no_time = ops.assign(self_device_us=None)
    cols = ["calls", "self_device_us"]
    expected = _reference_median_over_cycles(no_time, ops, cols)
    pd.testing.assert_frame_equal(median_over_cycles(no_time, ops, cols), expected, check_dtype=False)
    no_cycle = ops.assign(cycle=None)
    assert median_over_cycles(no_cycle, no_cycle, cols).empty and hotspots(no_cycle) == {}
