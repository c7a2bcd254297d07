"""Device time per op from Neuron Explorer's op-level tables, for when key_averages() carries none: an op's device
time is the union of its FrameworkInstruction rows' intervals (HloInstruction and OpcodeSummary are kept as
breakdowns; their names cannot be matched to PyTorch ops). Matching `aten.add` to `aten::add` is neuronexp's
reading of the documented example, not a documented rule (docs/neuron.md)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from neuronexp.backends.neuron.explorer_tables import TO_US, Profile, read_units
from neuronexp.backends.neuron.runtime import busy_us

_OP = re.compile(r"^(?P<ns>aten|prims|torch|_?c10d|nki)\.(?P<op>[A-Za-z0-9_]+)")
TOP = 20  # entries per breakdown kept in the manifest


def framework_op(name: str) -> str:
    """The PyTorch op a framework name ends in: '.../function[2]/aten.add' -> 'aten::add'; else the last part."""
    last = re.sub(r"\[\d+\]$", "", str(name).rsplit("/", 1)[-1])
    m = _OP.match(last)
    return f"{m['ns']}::{m['op']}" if m else last


def _intervals(row: Any) -> list[tuple[float, float]]:
    text = getattr(row, "time_intervals", None)
    if isinstance(text, str) and text.strip():
        try:
            return [(float(s), float(e)) for s, e in json.loads(text)]
        except (ValueError, TypeError):
            pass
    start, end = getattr(row, "start_ts", None), getattr(row, "end_ts", None)
    return [(float(start), float(end))] if start is not None and end is not None and end == end else []


def _union_by(df: pd.DataFrame, key: pd.Series, factor: float) -> dict[str, float]:
    spans: dict[str, list[tuple[float, float]]] = {}
    for name, row in zip(key, df.itertuples(index=False)):
        spans.setdefault(str(name), []).extend(_intervals(row))
    return {name: busy_us(iv) * factor for name, iv in spans.items()}


def _add(into: dict[str, float], more: dict[str, float]) -> None:
    for k, v in more.items():
        into[k] = into.get(k, 0.0) + v


@dataclass
class Breakdown:
    """Device microseconds over the whole capture: per PyTorch op, per HLO op kind, per engine:opcode."""

    framework_us: dict[str, float] = field(default_factory=dict)
    unnamed_us: float = 0.0  # FrameworkInstruction time without a framework name (a NEFF without debug names)
    hlo_us: dict[str, float] = field(default_factory=dict)
    opcode_us: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        def top(d: dict[str, float]) -> dict[str, float]:
            return dict(sorted(d.items(), key=lambda kv: -kv[1])[:TOP])

        return {
            "framework_us": top(self.framework_us),
            "framework_unnamed_us": self.unnamed_us,
            "hlo_us": top(self.hlo_us),
            "opcode_active_us": top(self.opcode_us),
        }


def breakdown(profiles: list[Profile]) -> Breakdown:
    out = Breakdown()
    cols = ["framework_name", "hlo_name", "time_intervals", "start_ts", "end_ts"]
    for profile in profiles:
        units = read_units(profile)
        for table, name_col, key in (
            ("FrameworkInstruction", "framework_name", framework_op),
            ("HloInstruction", "hlo_name", lambda n: re.sub(r"\.\d+$", "", str(n))),
        ):
            df = profile.read(table, cols)
            unit = units.unit(table, "start_ts")
            factor = TO_US.get("nanoseconds" if unit is None else unit)
            if df.empty or name_col not in df:
                continue
            if factor is None:
                out.notes.append(f"{table}.start_ts has unit {unit!r}: not read")
                continue
            if table == "FrameworkInstruction":
                unnamed = df[df[name_col].isna()]
                out.unnamed_us += sum(_union_by(unnamed, unnamed[name_col].fillna(""), factor).values())
            df = df[df[name_col].notna()]
            _add(
                out.framework_us if table == "FrameworkInstruction" else out.hlo_us,
                _union_by(df, df[name_col].map(key), factor),
            )
        ops = profile.read("OpcodeSummary", ["engine", "opcode", "active_time_ns"])
        if not ops.empty and {"engine", "opcode", "active_time_ns"} <= set(ops.columns):
            factor = TO_US.get(units.unit("OpcodeSummary", "active_time_ns") or "nanoseconds", 1e-3)
            keys = ops["engine"].astype(str) + ":" + ops["opcode"].astype(str)
            _add(
                out.opcode_us,
                (pd.to_numeric(ops["active_time_ns"], errors="coerce") * factor).groupby(keys).sum().to_dict(),
            )
    return out
