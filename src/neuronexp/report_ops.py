"""Op-level views for the report: each cell's hotspots and the fusion view against the baseline."""

from __future__ import annotations

import pandas as pd

from neuronexp.compare_ops import op_key
from neuronexp.summary import comparison_grid

FUSION_COLUMNS = ["input", "variant", "is_baseline", "device_ops", "device_time_us", "latency_median_us", "removed", "added"]


def host_ops(ops: pd.DataFrame | None) -> pd.DataFrame:
    """One cell's operator rows, host side when the profile has both host and device rows.

    Host op names (aten::mul) are what the module called, in the study's words; device rows are
    kernels, often several per op.
    """
    if ops is None:
        return pd.DataFrame(columns=["op", "cycle", "calls", "self_device_us", "device_share"])
    host = ops[ops["device_type"] == "CPU"]
    return host if not host.empty else ops


def hotspots(ops: pd.DataFrame | None, top: int = 8) -> pd.DataFrame:
    """Top ops of one cell by self device time per step, averaged over profiler cycles, with their share."""
    rows = host_ops(ops)
    if rows.empty:
        return pd.DataFrame(columns=["op", "calls", "self_device_us", "share"])
    # Summed per op name within a cycle first: Inductor graph calls differ only by a hash (see op_key).
    named = rows.assign(op=[op_key(o, "CPU") for o in rows["op"]])
    per_cycle = named.groupby(["cycle", "op"], as_index=False)[["calls", "self_device_us", "device_share"]].sum()
    per_op = per_cycle.groupby("op", as_index=False)[["calls", "self_device_us", "device_share"]].mean()
    per_op = per_op.rename(columns={"device_share": "share"})
    return per_op.sort_values("self_device_us", ascending=False, kind="stable").head(top).reset_index(drop=True)


def op_names(ops: pd.DataFrame | None) -> set[str]:
    rows = host_ops(ops)
    return {op_key(o, "CPU") for o in rows.loc[rows["calls"] > 0, "op"]}


def fusion_table(cells: pd.DataFrame, ops_by_run: dict[str, pd.DataFrame], baseline: str | None) -> pd.DataFrame:
    """Per input and variant: device ops dispatched per step, and which ops disappeared or appeared
    compared with the baseline variant on the same input (the fusion finding, op by op)."""
    ok = cells[cells["status"].isin(["ok", "cached"])]
    _, variants, grid = comparison_grid(ok, baseline)
    rows = []
    for key, by_variant in grid.items():
        base = by_variant.get(baseline) if baseline else None
        base_ops = op_names(ops_by_run.get(str(base["run_id"]))) if base is not None else set()
        for variant in variants:
            cell = by_variant.get(variant)
            if cell is None:
                continue
            mine = op_names(ops_by_run.get(str(cell["run_id"])))
            compared = base is not None and variant != baseline
            rows.append({
                "input": " ".join(map(str, key)), "variant": variant, "is_baseline": variant == baseline,
                "device_ops": cell["device_ops"], "device_time_us": cell["device_time_us"],
                "latency_median_us": cell["latency_median_us"],
                "removed": sorted(base_ops - mine) if compared else [], "added": sorted(mine - base_ops) if compared else [],
            })
    return pd.DataFrame(rows, columns=FUSION_COLUMNS)
