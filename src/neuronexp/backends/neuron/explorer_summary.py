"""Neuron Explorer's `Summary` table as `neuron_*` cell columns. Names are pinned by the kind of quantity (a time is
`neuron_<field>_us`), not by the unit a schema version happens to use; units come from the profile itself, and a
unit that does not fit the field's kind leaves the column NaN and says so rather than mislabel a number."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from neuronexp.backends.neuron.explorer_tables import TO_US, Units

_ENGINES = ("tensor", "vector", "scalar", "gpsimd", "sync")
# field -> kind; the 7.4.0 unit of each kind is in DOCUMENTED_UNIT.
SUMMARY_FIELDS: dict[str, str] = {
    "total_time": "time",
    "total_exec_time": "time",
    "total_active_time": "time",
    "total_active_time_percent": "percent",
    "neuroncore_cycle_count": "cycles",
    "model_flops": "flops",
    "hardware_flops": "flops",
    "transpose_flops": "flops",
    "adjusted_hardware_flops": "flops",
    "mfu_estimated_percent": "percent",
    "mfu_max_achievable_estimated_percent": "percent",
    "mfu_hlo_estimated_percent": "percent",
    "mfu_inst_estimated_percent": "percent",
    "hfu_estimated_percent": "percent",
    "mbu_estimated_percent": "percent",
    "mbu_min_read_util_percent": "percent",
    "mm_arithmetic_intensity": "ratio",
    "peak_flops_bandwidth_ratio": "ratio",
    "hbm_read_bytes": "bytes",
    "hbm_write_bytes": "bytes",
    "sbuf_read_bytes": "bytes",
    "sbuf_write_bytes": "bytes",
    "spill_save_bytes": "bytes",
    "spill_reload_bytes": "bytes",
    "dma_active_time": "time",
    "dma_active_time_percent": "percent",
    "dma_transfer_count": "count",
    "dma_transfer_total_bytes": "bytes",
    "dma_transfer_average_bytes": "mean_bytes",
    "matmul_instruction_count": "count",
    **{
        f"{e}_engine_{k}": kind
        for e in _ENGINES
        for k, kind in (("active_time", "time"), ("active_time_percent", "percent"), ("instruction_count", "count"))
    },
}
DOCUMENTED_UNIT = {
    "time": "seconds",
    "percent": "percent",
    "bytes": "bytes",
    "mean_bytes": "bytes",
    "flops": "flops",
    "cycles": "cycles",
    "count": "",
    "ratio": "",
}
_WEIGHTED = ("percent", "ratio", "mean_bytes")  # not additive across device profiles: weighted by total_time
# The largest figure of each kind a capture can plausibly hold, in neuronexp's units (a percent's scale; four months
# in us; a zettaFLOP; else 1e18: an exabyte, 22 years of cycles); beyond it, or negative, or NaN, a Summary value is
# not stored but named in the row's warnings (a corrupt or misread table must not pass as a measurement).
PLAUSIBLE = {"percent": 100.5, "time": 1e13, "flops": 1e21}
PLAUSIBLE_ELSE = 1e18


def column_name(name: str) -> str:
    return f"neuron_{name}_us" if SUMMARY_FIELDS[name] == "time" else f"neuron_{name}"


SUMMARY_COLUMNS = [column_name(f) for f in SUMMARY_FIELDS]


@dataclass
class SummaryRead:
    """One profile's Summary in neuronexp's units, and what could not be read."""

    values: pd.DataFrame  # one row per Summary row, pinned fields only, converted
    unit_problems: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    extra_fields: list[str] = field(default_factory=list)
    implausible: list[str] = field(default_factory=list)  # "field = value (why)", left NaN


def _factor(kind: str, unit: str, maximum: float | None) -> float | None:
    """What to multiply a value by to get neuronexp's unit, or None when the unit does not fit the kind."""
    if kind == "time":
        return TO_US.get(unit)
    if unit not in (DOCUMENTED_UNIT[kind] or kind, ""):  # the documented unit (a count's: "count"), or none given
        return None
    return 100.0 if kind == "percent" and maximum == 1.0 else 1.0  # a 0-1 "percent" field (SchemaFields maximum 1)


def convert_summary(summary: pd.DataFrame, units: Units) -> SummaryRead:
    """Pinned fields of one profile's Summary, converted with the units its SchemaFields gives."""
    out = pd.DataFrame(index=summary.index)
    read = SummaryRead(out)
    read.extra_fields = sorted(c for c in summary.columns if c not in SUMMARY_FIELDS)
    for name, kind in SUMMARY_FIELDS.items():
        if name not in summary:
            read.missing.append(name)
            continue
        unit = units.units.get(("Summary", name), DOCUMENTED_UNIT[kind])  # SchemaFields' unit, else the documented one
        factor = _factor(kind, unit, units.maxima.get(("Summary", name)))
        if factor is None:
            read.unit_problems.append(f"{name} ({unit or 'no unit'})")
            continue
        out[name] = _plausible(name, kind, pd.to_numeric(summary[name], errors="coerce") * factor, read)
    return read


def _plausible(name: str, kind: str, values: pd.Series, read: SummaryRead) -> pd.Series:
    """`values` with those no capture can hold (NaN, infinite, negative, beyond PLAUSIBLE) made NaN, each named."""
    limit = PLAUSIBLE.get(kind, PLAUSIBLE_ELSE)
    for value in values:
        why = (
            "not a number"
            if math.isnan(value)
            else "infinite"
            if math.isinf(value)
            else "negative"
            if value < 0
            else f"beyond {limit:g}"
            if value > limit
            else None
        )
        if why:
            read.implausible.append(f"{name} = {value:g} ({why})")
    return values.where(values.between(0, limit))


def combine(reads: list[SummaryRead]) -> dict[str, float]:
    """The pinned columns over every Summary row: additive fields summed, the rest weighted by total_time."""
    cols: dict[str, float] = {c: math.nan for c in SUMMARY_COLUMNS}
    rows = pd.concat([r.values for r in reads], ignore_index=True) if reads else pd.DataFrame()
    cols["neuron_summary_rows"] = float(len(rows))
    if rows.empty:
        return cols
    weights = rows["total_time"] if "total_time" in rows else pd.Series(math.nan, index=rows.index)
    for name, kind in SUMMARY_FIELDS.items():
        if name not in rows or rows[name].isna().all():
            continue
        values = rows[name]
        weighed = values.notna() & weights.notna() & (weights > 0)
        if kind not in _WEIGHTED:
            value = float(values.sum())
        elif weighed.any():
            value = float((values[weighed] * weights[weighed]).sum() / weights[weighed].sum())
        else:  # no total_time to weigh by
            value = float(values.mean())
        cols[column_name(name)] = value
    return cols


def summary_notes(reads: list[SummaryRead]) -> tuple[list[str], dict[str, Any]]:
    """Warnings for fields whose unit did not fit, and the manifest's account of missing and new fields."""
    problems = sorted({p for r in reads for p in r.unit_problems})
    warnings = (
        [f"neuron-explorer Summary fields with a unit neuronexp does not convert, left NaN: {', '.join(problems)}"]
        if problems
        else []
    )
    if implausible := list(dict.fromkeys(p for r in reads for p in r.implausible)):
        warnings.append(f"neuron-explorer Summary values no capture can hold, left NaN: {', '.join(implausible)}")
    missing = sorted(set.intersection(*[set(r.missing) for r in reads])) if reads else []
    extra = sorted({f for r in reads for f in r.extra_fields})
    account = {"missing_fields": missing, "unread_fields": extra, "unit_problems": problems}
    return warnings, account | {"implausible": [p for r in reads for p in r.implausible]}
