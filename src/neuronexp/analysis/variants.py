"""Cells named, laid out per input, and compared with their baseline: the one place that names variants.

A name is read from the cells themselves (label columns and `overrides`), never from a config file: the variant
(the module, "+compile", other swept keys) and the input (shape, then what else varies), made unique. A baseline
(analysis.baseline) picks one reference per group of cells equal in all but its keys; speedups and findings
compare within a group only."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from neuronexp.analysis.baseline import Baseline
from neuronexp.analysis.overrides import normalize, override_values
from neuronexp.results import USABLE

# Config keys that label columns carry (the column is the truth: `module` is the option's name).
_COLUMN_KEYS = {
    "module": "module",
    "compile.enabled": "compiled",
    "input.shape": "input_shape",
    "input.dtype": "dtype",
    "backend": "backend",
    "experiment": "experiment",
}
_INPUT_KEYS = ("input.", "dims.", "shapes")
_ROW_AXES = ["backend", "dtype", "input_shape"]
_RESERVED = {"module", "backend", "dtype", "input_shape", "experiment", "device", "variant"}


def _overrides(cells: pd.DataFrame) -> pd.DataFrame:
    """One column per override key ("" where a cell lacks it), less the keys a label column carries
    (compile.enabled stays: the `compiled` column also turns on for a module option that compiles itself)."""
    column = cells["overrides"] if "overrides" in cells else pd.Series("", index=cells.index)
    frame = pd.DataFrame([override_values(o) for o in column], index=cells.index)
    frame = frame.drop(columns=[k for k in _COLUMN_KEYS if k in frame.columns and k != "compile.enabled"])
    return frame.fillna("").astype(str)


def _varies(values: pd.Series) -> bool:
    return values.nunique(dropna=False) > 1


def _short_names(keys: list[str]) -> dict[str, str]:
    """`intermediate_size` for module.config.intermediate_size, unless two shown keys (or a column) share it."""
    last = [k.rsplit(".", 1)[-1] for k in keys]
    return {k: s if last.count(s) == 1 and s not in _RESERVED else k for k, s in zip(keys, last)}


def _base_names(cells: pd.DataFrame) -> pd.Series:
    names = cells["module"].astype(str)
    tag = cells["compiled"].astype(bool) & ~names.str.contains("compile")
    return names.where(~tag, names + " +compile")


def variant_label(cell: Mapping[str, Any]) -> str:
    """A single cell's module name, "+compile" when compiled (no sweep around it to tell apart from)."""
    name = str(cell["module"])
    return name + " +compile" if bool(cell["compiled"]) and "compile" not in name else name


def names(cells: pd.DataFrame) -> tuple[pd.Series, list[str], pd.DataFrame]:
    """(variant per cell, input axes, input values per cell with one column per axis): docs/layers.md says how."""
    if cells.empty:
        return pd.Series([], dtype=str), ["input_shape"], pd.DataFrame(columns=["input_shape"])
    ov = _overrides(cells)
    varying = [k for k in ov.columns if _varies(ov[k])]
    variant_keys = [k for k in varying if not k.startswith(_INPUT_KEYS) and k != "compile.enabled"]
    if _varies(cells["experiment"]):
        ov, variant_keys = ov.assign(experiment=cells["experiment"].astype(str)), ["experiment", *variant_keys]
    axes = [c for c in _ROW_AXES if c == "input_shape" or _varies(cells[c])]
    rows = cells[axes].astype(str)
    for key in (k for k in varying if k.startswith(_INPUT_KEYS)):
        if rows.assign(_k=ov[key]).groupby(list(rows.columns))["_k"].nunique().max() > 1:  # not told by the shape
            rows[key] = ov[key]
    short = _short_names(variant_keys + [c for c in rows.columns if c not in _ROW_AXES])
    variant = _base_names(cells)
    for key in variant_keys:
        variant = variant + ov[key].map(lambda v, k=key: f" {short[k]}={v}" if v else "")
    rows = rows.rename(columns=short)
    full = variant + " · " + rows.agg(" ".join, axis=1)
    dup = full.duplicated(keep=False)
    if dup.any():  # alike so far: every other differing key, then the run id
        for key in (k for k in varying if k not in variant_keys and k not in rows.columns):
            variant = variant.where(~dup, variant + ov[key].map(lambda v, k=key: f" {k}={v}" if v else ""))
        dup = (variant + " · " + rows.agg(" ".join, axis=1)).duplicated(keep=False)
        variant = variant.where(~dup, variant + " #" + cells["run_id"].astype(str).str[:8])
    return variant, list(rows.columns), rows


def cell_labels(cells: pd.DataFrame) -> pd.Series:
    """Every cell's full name, "variant · input": unique within `cells`."""
    variant, _, rows = names(cells)
    return variant + " · " + rows.agg(" ".join, axis=1) if len(cells) else variant


Grid = dict[tuple, dict[str, dict[str, Any]]]


def comparison_grid(cells: pd.DataFrame, baseline: Baseline | None = None) -> tuple[list[str], list[str], Grid]:
    """(input axes, variants, {input: {variant: cell}}), inputs by size, reference variants first. Reference cells are
    those that are their own `baseline_run_id` (computed from `baseline` when the cells do not carry the column)."""
    if cells.empty:
        return ["input_shape"], [], {}
    if "baseline_run_id" not in cells and baseline is not None:
        cells = cells.assign(baseline_run_id=baseline_run_ids(cells, baseline))
    variant, axes, rows = names(cells)
    cells = cells.assign(_variant=variant, **{f"_axis{i}": rows[a] for i, a in enumerate(axes)})
    refs = set(
        cells.loc[cells.get("baseline_run_id", pd.Series(None, index=cells.index)) == cells["run_id"], "_variant"]
    )
    variants = sorted(dict.fromkeys(cells["_variant"]), key=lambda v: v not in refs)
    grid: Grid = {}
    keys = [f"_axis{i}" for i in range(len(axes))]
    for cell in cells.sort_values(["numel", *keys], kind="stable").to_dict("records"):
        grid.setdefault(tuple(cell[k] for k in keys), {})[cell["_variant"]] = cell
    return axes, variants, grid


def baseline_run_ids(cells: pd.DataFrame, baseline: Baseline | None) -> pd.Series:
    """Each cell's reference: the run_id of the cell of its group that matches `baseline` (None where the group has
    none, or there is no baseline). A usable reference is preferred over a failed one. A group: cells equal in
    experiment, backend, device, dtype, shape, module and every override, the baseline's own keys left out. The basis
    for speedups, findings, the fusion view, and checks against the reference."""
    out = pd.Series([None] * len(cells), index=cells.index, dtype=object)
    if not baseline or cells.empty:
        return out
    ov = _overrides(cells)
    identity = ov.drop(columns=[k for k in baseline if k in ov.columns])
    for key, col in {**_COLUMN_KEYS, "device": "device"}.items():  # (compile.enabled: an override column already)
        if key != "compile.enabled" and key not in baseline and col in cells:
            identity[f"_{key}"] = cells[col].astype(str)
    group = identity.astype(str).agg("\x1f".join, axis=1)
    match = pd.Series(True, index=cells.index)
    for key, want in baseline.items():
        if key in _COLUMN_KEYS:
            have = cells[_COLUMN_KEYS[key]].map(normalize)
        else:
            have = ov[key] if key in ov.columns else pd.Series("", index=cells.index)
        match &= have == want
    failed = ~cells["status"].isin(USABLE) if "status" in cells else pd.Series(False, index=cells.index)
    candidates = pd.DataFrame({"g": group[match], "failed": failed[match], "run_id": cells.loc[match, "run_id"]})
    refs = candidates.sort_values("failed", kind="stable").drop_duplicates("g").set_index("g")["run_id"]
    found = group.map(refs)
    return found.astype(object).where(found.notna(), None)


def add_speedups(cells: pd.DataFrame, baseline: Baseline | None, samples: pd.DataFrame | None = None) -> pd.DataFrame:
    """`baseline_run_id`, `speedup_vs_baseline` with `speedup_ci_low`/`_high` and `speedup_method` (analysis.paired:
    the median per-pair ratio where the cell and its reference were timed together, else the reference's median
    latency ÷ the cell's); the reference cell itself is ×1 with no method. Without samples, no intervals."""
    from neuronexp.analysis.paired import UNPAIRED_NOTE, speedup_table

    cells = cells.copy()
    cells["baseline_run_id"] = baseline_run_ids(cells, baseline)
    ok = cells["status"].isin(USABLE)
    latency = dict(zip(cells.loc[ok, "run_id"], cells.loc[ok, "latency_median_us"]))
    base = cells["baseline_run_id"].map(latency).astype(float)
    cells["speedup_vs_baseline"] = np.where(ok, base / cells["latency_median_us"].astype(float), np.nan)
    cells["speedup_ci_low"] = cells["speedup_ci_high"] = np.nan
    cells["speedup_method"] = None
    if samples is None:
        return cells
    table = speedup_table(cells, samples).set_index("run_id")
    at = cells["run_id"].astype(str).isin(table.index)  # boolean whatever the rows (a map over none gives str)
    runs = cells.loc[at, "run_id"].astype(str)
    cells.loc[at, "speedup_vs_baseline"] = runs.map(table["speedup"]).to_numpy(float)
    cells.loc[at, "speedup_ci_low"] = runs.map(table["ci_low"]).to_numpy(float)
    cells.loc[at, "speedup_ci_high"] = runs.map(table["ci_high"]).to_numpy(float)
    cells.loc[at, "speedup_method"] = runs.map(table["method"]).to_numpy(object)
    unpaired = at & (cells["speedup_method"] == "unpaired")
    if unpaired.any() and "warnings" in cells:
        cells.loc[unpaired, "warnings"] = [
            UNPAIRED_NOTE
            if not isinstance(w, str) or not w
            else (w if UNPAIRED_NOTE in w else f"{w} | {UNPAIRED_NOTE}")
            for w in cells.loc[unpaired, "warnings"]
        ]
    return cells
