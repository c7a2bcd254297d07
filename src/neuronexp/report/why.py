"""Why one cell beats another, from their op profiles: each one's hotspot, the operators that disappeared and the
ones that appeared, and how much of the profiled step moved with them (the fusion view, with times)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from neuronexp.formatting import fmt_pct, fmt_us, short_op

# Operators listed by name in a sentence; more are counted ("+3 more").
_LISTED = 3


def _names(ops: list[str]) -> str:
    shown = ", ".join(short_op(o, 40) for o in ops[:_LISTED])
    return shown + (f" +{len(ops) - _LISTED} more" if len(ops) > _LISTED else "")


def _hotspot(name: str, ops: pd.DataFrame) -> str:
    top = ops.iloc[0]
    return f"{name} spends {fmt_pct(top['share'])} of its step in {short_op(str(top['op']), 40)}"


def _times(ops: pd.DataFrame) -> pd.Series:
    """Self time per step by op, ops that ran only (calls > 0)."""
    ran = ops[ops["calls"] > 0]
    return ran.groupby("op")["self_device_us"].sum()


def explain(
    winner: Mapping[str, Any], other: Mapping[str, Any], winner_ops: pd.DataFrame | None, other_ops: pd.DataFrame | None
) -> str | None:
    """One sentence: why `winner` is faster than `other` (two cells, their ops as analysis.ops.hotspots gives them:
    op, calls, self_device_us, share, largest first). None without both profiles."""
    if winner_ops is None or other_ops is None or winner_ops.empty or other_ops.empty:
        return None
    w_name, o_name = str(winner["_variant"]), str(other["_variant"])
    w_times, o_times = _times(winner_ops), _times(other_ops)
    # Largest first, ties by name: the same sentence on every run.
    gone = o_times.drop(w_times.index, errors="ignore").sort_index().sort_values(ascending=False, kind="stable")
    new = w_times.drop(o_times.index, errors="ignore").sort_index().sort_values(ascending=False, kind="stable")
    shared = o_times.index.intersection(w_times.index)
    parts = [f"{_hotspot(o_name, other_ops)}, {_hotspot(w_name, winner_ops)}"]
    o_total = float(other.get("device_time_us") or o_times.sum())
    if len(gone):
        share = f", {fmt_pct(gone.sum() / o_total)} of its step" if o_total > 0 else ""
        parts.append(f"gone in {w_name}: {_names(list(gone.index))} ({fmt_us(gone.sum())} in {o_name}{share})")
    if len(new):
        parts.append(f"new: {_names(list(new.index))} ({fmt_us(new.sum())})")
    if len(shared):
        parts.append(
            f"the {len(shared)} op(s) both run: {fmt_us(o_times[shared].sum())} → {fmt_us(w_times[shared].sum())}"
        )
    parts.append(f"profiled step {fmt_us(other.get('device_time_us'))} → {fmt_us(winner.get('device_time_us'))}")
    return "why: " + "; ".join(parts)
