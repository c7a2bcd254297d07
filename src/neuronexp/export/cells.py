"""One cell's row as the names other tools want: labels and overrides (params), figures (metrics) and what
describes the measurement (tags), and the key that says "this cell of this invocation" (export_key).

Both exporters read these, so an MLflow run and a benchmark record of the same cell agree on every name.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Set
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from neuronexp.analysis.overrides import override_values

# The cells table calls the first input's shape `shape` today; issue 23 renames it `input_shape` (it collides
# with DataFrame.shape). Whichever the results hold is read, so results from before and after both export.
SHAPE_COLUMNS = ("input_shape", "shape")

# (column, unit): the cell's figures, exported under their column names (the unit is already in each name, as
# docs/columns.md spells it). speedup_ci_low/high are written by newer neuronexp versions: exported when present.
METRICS = (
    ("latency_median_us", "us"),
    ("latency_p10_us", "us"),
    ("latency_p90_us", "us"),
    ("speedup_vs_baseline", "x"),
    ("speedup_ci_low", "x"),
    ("speedup_ci_high", "x"),
    ("pct_peak_bw", "%"),
    ("pct_peak_flops", "%"),
    ("achieved_gbs", "GB/s"),
    ("achieved_tflops", "TFLOP/s"),
    ("peak_memory_bytes", "bytes"),
    ("device_time_us", "us"),
    ("cpu_time_us", "us"),
    ("device_ops", "count"),
    ("first_call_s", "s"),
)
UNITS = dict(METRICS)
# Tags: what the measurement was (status, noise) and where it ran; strings, as MLflow tags are.
TAG_COLUMNS = (
    "status",
    "noisy",
    "noise",
    "backend",
    "device",
    "device_name",
    "timing_method",
    "torch_version",
    "neuronx_version",
    "run_id",
    "started_at",
    "baseline_run_id",
    "error",
)
# MLflow caps a tag's value (8,000 characters in 3.x) and a param's (6,000): an error message is cut, said so.
MAX_TEXT = 5000
# What MLflow accepts in a param or metric name; anything else (e.g. Hydra's `@package` syntax) becomes "_".
_NAME_BAD = re.compile(r"[^\w./ -]")


def shape_column(cells: pd.DataFrame) -> str:
    """The column holding the first input's shape label, `input_shape` or (older results) `shape`."""
    return next((c for c in SHAPE_COLUMNS if c in cells.columns), "shape")


def present(value: Any) -> bool:
    """A value that is there: not None, not NaN or pandas' NA."""
    if value is None or value is pd.NA:
        return False
    return not (isinstance(value, float) and math.isnan(value))


def _text(value: Any) -> str:
    """A value as a tag or param string: booleans as YAML writes them, long text cut (and said so)."""
    text = str(bool(value)).lower() if isinstance(value, (bool, np.bool_)) else str(value)
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 12] + " … (cut)"


@dataclass(frozen=True)
class CellExport:
    """What every exporter says about one cell."""

    name: str
    labels: dict[str, str]
    overrides: dict[str, str]
    metrics: dict[str, float]
    tags: dict[str, str]
    key: str

    @property
    def params(self) -> dict[str, str]:
        """The names users typed (override keys, flattened: `input.shape`, `module.config.hidden_size`), then the
        labels no override already names (`module`, `dtype`, ...)."""
        return {**{k: v for k, v in self.labels.items() if k not in self.overrides}, **self.overrides}


def labels_of(row: pd.Series, shape_col: str) -> dict[str, str]:
    keys = ["experiment", "module", "compiled", "backend", "device", "dtype", shape_col]
    out = {k: _text(row[k]) for k in keys if k in row and present(row[k])}
    if shape_col in out and shape_col != "input_shape":
        out["input_shape"] = out.pop(shape_col)  # one name whatever the column is called
    return out


def cell_name(row: pd.Series, overrides: dict[str, str], shape_col: str, swept: Set[str]) -> str:
    """`rmsnorm_fused [1,8,64] dims.seq=128`: the module (+compile), the shape, then any other key the sweep varied
    (keys every cell shares, such as timing.iters, name no cell apart and are left to the params)."""
    parts = [str(row.get("module", "?")) + (" +compile" if bool(row.get("compiled", False)) else "")]
    if present(row.get(shape_col)):
        parts.append(str(row[shape_col]))
    parts += [
        f"{k}={v}" for k, v in overrides.items() if k in swept and k not in ("module", "input.shape", "compile.enabled")
    ]
    return " ".join(parts)


def export_key(row: pd.Series) -> str:
    """This cell as measured by one invocation: its configuration (run_id) and when it started. Exporting the same
    results again finds the same key; the same configuration measured again is a new key (a new run)."""
    ident = f"{row.get('run_id')}|{row.get('started_at')}"
    return hashlib.sha256(ident.encode()).hexdigest()[:24]


def safe_name(key: str) -> str:
    return _NAME_BAD.sub("_", key)


def _overrides(row: pd.Series) -> dict[str, str]:
    return {safe_name(k): _text(v) for k, v in override_values(row.get("overrides")).items()}


def cell_export(row: pd.Series, shape_col: str, swept: Set[str] = frozenset()) -> CellExport:
    overrides = _overrides(row)
    metrics = {}
    for col, _unit in METRICS:
        value = row.get(col)
        if present(value):
            try:
                metrics[col] = float(value)
            except (TypeError, ValueError):
                continue
    tags = {f"neuronexp.{c}": _text(row[c]) for c in TAG_COLUMNS if c in row and present(row[c])}
    return CellExport(
        cell_name(row, overrides, shape_col, swept),
        labels_of(row, shape_col),
        overrides,
        metrics,
        tags,
        export_key(row),
    )


def cell_exports(cells: pd.DataFrame) -> list[CellExport]:
    """Every row's export; a cell is named by the override keys whose values differ between the cells."""
    col = shape_column(cells)
    per_cell = [_overrides(row) for _, row in cells.iterrows()]
    keys = {k for o in per_cell for k in o}
    swept = {k for k in keys if len({o.get(k) for o in per_cell}) > 1}
    return [cell_export(row, col, swept) for _, row in cells.iterrows()]


class ExportError(ValueError):
    """A reason an export cannot start or go on, as one line for the command line."""
