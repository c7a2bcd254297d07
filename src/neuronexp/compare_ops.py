"""Op tables of two matched cells side by side: which ops appeared, disappeared or changed most."""

from __future__ import annotations

import pandas as pd

from neuronexp.display import short_op

OP_CHANGE_COLUMNS = ["cell", "op", "change", "a_us", "b_us", "delta_us", "a_calls", "b_calls"]


def op_key(name: str, device_type: str) -> str:
    """Inductor's graph call carries a per-build hash, so two builds of one graph would never match."""
    name = short_op(str(name), width=10**6)
    return name if device_type in ("CPU", "", "None") else f"{name} [{device_type}]"


def per_op(mine: pd.DataFrame | None) -> pd.DataFrame:
    """Self device time and calls per step for one cell's op rows, averaged over profiler cycles."""
    if mine is None or mine.empty:
        return pd.DataFrame(columns=["us", "calls"])
    keys = [op_key(o, str(t)) for o, t in zip(mine["op"], mine["device_type"])]
    cycles = max(mine["cycle"].nunique(), 1)
    summed = mine.assign(_key=keys).groupby("_key")[["self_device_us", "calls"]].sum() / cycles
    return summed.rename(columns={"self_device_us": "us"})


def diff_cell(a: pd.DataFrame, b: pd.DataFrame, label: str, top: int) -> list[dict]:
    """Every op that appeared or disappeared, plus the `top` ops whose time changed most."""
    joined = a.add_suffix("_a").join(b.add_suffix("_b"), how="outer")
    rows = []
    for op, r in joined.iterrows():
        in_a, in_b = pd.notna(r["us_a"]), pd.notna(r["us_b"])
        change = "changed" if in_a and in_b else "appeared" if in_b else "disappeared"
        a_us, b_us = (r["us_a"] if in_a else 0.0), (r["us_b"] if in_b else 0.0)
        rows.append({"cell": label, "op": op, "change": change, "a_us": a_us, "b_us": b_us, "delta_us": b_us - a_us,
                     "a_calls": r["calls_a"] if in_a else 0.0, "b_calls": r["calls_b"] if in_b else 0.0})
    changed = sorted((r for r in rows if r["change"] == "changed" and r["delta_us"] != 0),
                     key=lambda r: abs(r["delta_us"]), reverse=True)[:top]
    moved = [r for r in rows if r["change"] != "changed"]
    return sorted(moved, key=lambda r: (r["change"], -abs(r["delta_us"]))) + changed


def op_changes(ops_a: pd.DataFrame, ops_b: pd.DataFrame, pairs: list[tuple[str, str, str]], top: int = 5) -> pd.DataFrame:
    """One row per notable op change, for each (run_id in A, run_id in B, cell label) pair."""
    by_a = {str(k): g for k, g in ops_a.groupby("run_id")} if not ops_a.empty else {}
    by_b = {str(k): g for k, g in ops_b.groupby("run_id")} if not ops_b.empty else {}
    rows = []
    for run_a, run_b, label in pairs:
        rows += diff_cell(per_op(by_a.get(run_a)), per_op(by_b.get(run_b)), label, top)
    return pd.DataFrame(rows, columns=OP_CHANGE_COLUMNS)
