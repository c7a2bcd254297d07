"""The Summary Viewer's documented recommendations ("Performance Insights"), evaluated on a cell's profile.

The Viewer page lists its conditions (Low Model FLOPS relative to Active FLOPS < 50%; NKI instruction coverage < 50% on
the tensor, vector or scalar engine; active FLOPS throttling; transpose FLOPS > 10% of hardware FLOPS; spill reload
bytes > 25% of HBM reads; collective outliers) but not its formulas. Each rule below uses the closest quantities the
profile schema documents; docs/neuron.md says how each one differs from the Viewer."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from neuronexp.backends.neuron.explorer_tables import Profile

_ENGINE_FAMILY = {
    "tensor": "tensor",
    "pe": "tensor",
    "vector": "vector",
    "dve": "vector",
    "scalar": "scalar",
    "act": "scalar",
}


def _family(engines: pd.Series) -> pd.Series:
    """Each engine's family (tensor, vector or scalar), None for an engine of none of them."""
    return engines.astype(str).str.lower().map(lambda e: next((f for k, f in _ENGINE_FAMILY.items() if k in e), None))


def _num(cols: dict[str, Any], name: str) -> float:
    value = cols.get(name)
    return float(value) if isinstance(value, (int, float)) and not math.isnan(value) else math.nan


def _ratio_rules(cols: dict[str, Any]) -> tuple[list[str], list[str]]:
    fired, checked = [], []
    te_active = _num(cols, "neuron_tensor_engine_active_time_percent")
    mfu = _num(cols, "neuron_mfu_estimated_percent")
    if te_active > 0 and not math.isnan(mfu):
        # mfu% / tensor-engine active% = model FLOPs / (peak FLOP/s x tensor-engine active time): both are
        # normalised by total_time in the schema's definitions.
        checked.append("low_model_flops")
        if mfu / te_active < 0.5:
            fired.append(
                f"model FLOPS {mfu / te_active:.0%} of active tensor-engine FLOPS (< 50%): make instructions "
                "use the entire tensor engine and pipeline them"
            )
    hw, tr = _num(cols, "neuron_hardware_flops"), _num(cols, "neuron_transpose_flops")
    if hw > 0 and not math.isnan(tr):
        checked.append("transpose_flops")
        if tr / hw > 0.10:
            fired.append(
                f"transpose FLOPS {tr / hw:.0%} of hardware FLOPS (> 10%): improve the memory layout to "
                "reduce transposes"
            )
    reads, reload = _num(cols, "neuron_hbm_read_bytes"), _num(cols, "neuron_spill_reload_bytes")
    if reads > 0 and not math.isnan(reload):
        checked.append("spill_reload")
        if reload / reads > 0.25:
            fired.append(
                f"spill reload bytes {reload / reads:.0%} of HBM reads (> 25%): look for data dependencies "
                "that cause spill/reload"
            )
    return fired, checked


def _nki_rule(profiles: list[Profile]) -> tuple[list[str], bool]:
    """Per engine family, the share of instructions with an NKI source location; only for NKI workloads."""
    frames = [p.read("Instruction", ["engine", "nki_source_location"]) for p in profiles if p.has("Instruction")]
    frames = [f for f in frames if not f.empty]
    df = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    if df.empty or not {"engine", "nki_source_location"} <= set(df.columns):
        return [], False
    nki = ~df["nki_source_location"].fillna("").astype(str).str.strip().isin(["", "[]", "None"])
    if not nki.any():
        return [], True  # no NKI in this workload: the advice to write NKI kernels is not about it
    family = _family(df["engine"])
    fired = []
    for name in ("tensor", "vector", "scalar"):
        mine = family == name
        if mine.any() and nki[mine].mean() < 0.5:
            fired.append(
                f"NKI instruction coverage {nki[mine].mean():.0%} on the {name} engine (< 50%): write NKI "
                "kernel code for the operations in this profile"
            )
    return fired, True


def _union(spans: list[tuple[float, float]]) -> list[tuple[float, float]]:
    out: list[tuple[float, float]] = []
    for s, e in sorted(spans):
        if out and s <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((s, e))
    return out


def _throttle_rule(profiles: list[Profile]) -> tuple[list[str], bool]:
    """Throttling while the tensor engine was active: the Viewer's "active throttled FLOPs", not throttling while it
    idled. Throttle events (the utilization limited to k/n for `duration`) cut with the tensor engine's ActiveTime
    intervals, both on the device clock; evaluated where a profile has both tables."""
    throttles = [p.read("Throttle", ["timestamp", "duration", "k", "n"]) for p in profiles if p.has("Throttle")]
    active = [p.read("ActiveTime", ["start_ts", "end_ts", "engine"]) for p in profiles if p.has("ActiveTime")]
    frames = [f for f in throttles if not f.empty], [f for f in active if not f.empty]
    if not all(frames):
        return [], False
    t, a = pd.concat(frames[0], ignore_index=True), pd.concat(frames[1], ignore_index=True)
    tensor = a[_family(a["engine"]) == "tensor"]
    busy = _union(list(zip(tensor["start_ts"].astype(float), tensor["end_ts"].astype(float))))
    if not busy:
        return [], True
    lost = 0.0  # throttled time while active, weighted by the share of the engine the limit took away
    for row in t.itertuples(index=False):
        limit = 1.0 - float(row.k) / float(row.n) if float(row.n) > 0 else 0.0
        start, end = float(row.timestamp), float(row.timestamp) + float(row.duration)
        lost += limit * sum(max(0.0, min(end, e) - max(start, s)) for s, e in busy)
    if lost <= 0:
        return [], True
    share = lost / sum(e - s for s, e in busy)
    return [
        f"active FLOPS throttling: {share:.1%} of the tensor engine's active time lost to throttling: investigate "
        "what throttles it"
    ], True


def insights(profiles: list[Profile], cols: dict[str, Any]) -> dict[str, str | None]:
    """`neuron_insights` (the rules that fired, "; "-joined, "" for none) and `neuron_insights_checked`."""
    if not profiles:
        return {"neuron_insights": None, "neuron_insights_checked": None}
    fired, checked = _ratio_rules(cols)
    nki, nki_checked = _nki_rule(profiles)
    throttle, throttle_checked = _throttle_rule(profiles)
    checked += ["nki_coverage"] * nki_checked + ["throttling"] * throttle_checked
    return {"neuron_insights": "; ".join(fired + nki + throttle), "neuron_insights_checked": ",".join(checked)}
