"""Device time per op from a source other than key_averages() (Neuron Explorer), put where key_averages() left
none: into the host op rows, so device sums, shares, op counts and the hotspot follow the usual rules."""

from __future__ import annotations

import math

from neuronexp.cell.profiling import ProfileResult


def fill_device_times(
    profile: ProfileResult, per_op_us: dict[str, float], step: tuple[float, float] | None = None
) -> None:
    """Give each host op row its share of `per_op_us[op]` (device us per step) in cycles without device time, and
    take the step's device time and executions from `step` when the source covers the whole step (then the rows'
    shares leave room for the time no op row holds).

    An op split over several rows (record_shapes groups by input shape) is shared by calls. The same per-step
    figures go into every cycle: the source covers the whole capture, not one cycle.
    """
    if not per_op_us and step is None:
        return
    for cycle in profile.cycles:
        if cycle.device_time_us > 0:
            continue
        rows = [r for r in cycle.ops if r["device_type"] == "CPU" and r["op"] in per_op_us]
        calls: dict[str, float] = {}
        for r in rows:
            calls[r["op"]] = calls.get(r["op"], 0.0) + r["calls"]
        for r in rows:
            share = r["calls"] / calls[r["op"]] if calls[r["op"]] > 0 else 1.0 / sum(x["op"] == r["op"] for x in rows)
            r["self_device_us"] = r["device_total_us"] = per_op_us[r["op"]] * share
        cycle.device_time_us = sum(r["self_device_us"] for r in rows)
        cycle.device_ops = sum(r["calls"] for r in rows)
        if step is not None:
            cycle.device_time_us = step[0]
            cycle.device_ops = step[1] if math.isfinite(step[1]) else cycle.device_ops
        for r in cycle.ops:
            r["device_share"] = r["self_device_us"] / cycle.device_time_us if cycle.device_time_us > 0 else math.nan
