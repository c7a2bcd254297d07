"""Variants and baselines: how cells are named, grouped per input, and compared with their baseline."""

from __future__ import annotations

import re
from typing import Any, Mapping

import numpy as np
import pandas as pd

from neuronexp.results import USABLE

_ROW_AXES = ["backend", "dtype", "shape"]


def variant_label(cell: Mapping[str, Any]) -> str:
    name = str(cell["module"])
    return name + " +compile" if bool(cell["compiled"]) and "compile" not in name else name


def variant_labels(cells: pd.DataFrame) -> pd.Series:
    """variant_label for every row at once (sweeps can have thousands of cells)."""
    names = cells["module"].astype(str)
    tag = cells["compiled"].astype(bool) & ~names.str.contains("compile")
    return names.where(~tag, names + " +compile")


def _row_axes(cells: pd.DataFrame) -> list[str]:
    """Label columns that vary across the sweep (shape always), in a stable order."""
    return [c for c in _ROW_AXES if c == "shape" or cells[c].nunique(dropna=False) > 1]


Grid = dict[tuple, dict[str, dict[str, Any]]]


def comparison_grid(cells: pd.DataFrame, baseline: str | None = None) -> tuple[list[str], list[str], Grid]:
    """(row axes, variants, {row key: {variant: cell}}), rows ordered by input size, baseline first."""
    if cells.empty:
        return ["shape"], [], {}
    cells = cells.assign(_variant=variant_labels(cells))
    axes = _row_axes(cells)
    variants: list[str] = list(dict.fromkeys(cells["_variant"]))
    variants.sort(key=lambda v: v != baseline)
    grid: Grid = {}
    for cell in cells.sort_values(["numel", *axes], kind="stable").to_dict("records"):
        grid.setdefault(tuple(cell[a] for a in axes), {})[cell["_variant"]] = cell
    return axes, variants, grid


# Cells that differ only in these overrides are compared against each other for the speedup.
_VARIANT_KEYS = ("module", "compile.enabled")


def split_overrides(overrides: str) -> list[str]:
    """Split Hydra's comma-joined override string; commas inside values (shapes) stay put."""
    return [o for o in re.split(r",(?=[+~]?[\w.@/-]+=)", str(overrides or "")) if o]


def _comparison_key(overrides: str) -> str:
    prefixes = tuple(k + "=" for k in _VARIANT_KEYS)
    return ",".join(o for o in split_overrides(overrides) if not o.lstrip("+~").startswith(prefixes))


def add_speedups(cells: pd.DataFrame, baseline: str | None) -> pd.DataFrame:
    """speedup_vs_baseline = baseline median latency / cell median latency, on otherwise equal cells."""
    cells = cells.copy()
    cells["speedup_vs_baseline"] = np.nan
    if not baseline or cells.empty:
        return cells
    keys = cells["overrides"].map(_comparison_key)
    match = ["experiment", "backend", "device", "dtype", "shape"]
    frame = cells.assign(_key=keys.values)
    ok = frame["status"].isin(USABLE)
    base = frame[ok & (frame["module"] == baseline)].sort_values("compiled")  # eager baseline first
    base = base.drop_duplicates(match + ["_key"])[match + ["_key", "latency_median_us"]]
    joined = frame.merge(base, on=match + ["_key"], how="left", suffixes=("", "_base"))
    speedup = joined["latency_median_us_base"] / joined["latency_median_us"]
    cells["speedup_vs_baseline"] = np.where(ok.values, speedup.values, np.nan)
    return cells
