"""One cell's row as the names other tools want: labels and overrides (params), figures (metrics) and what
describes the measurement (tags), and the key that says "this cell of this invocation" (export_key).

Both exporters read these, so an MLflow run and a benchmark record of the same cell agree on every name.
"""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from neuronexp.analysis.overrides import override_values
from neuronexp.analysis.variants import cell_labels

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
    "compile_backend",
    "timing_method",
    "torch_version",
    "neuronx_version",
    "run_id",
    "started_at",
    "baseline_run_id",
    "error",
)
LABEL_KEYS = ("experiment", "module", "compiled", "backend", "device", "dtype", "input_shape")
# MLflow caps a param's value (6,000 characters in 3.x) and a tag's (8,000): longer text is cut to MAX_TEXT, marked
# CUT at its end, and named with its full length in the tag CUT_TAG (what was cut is never silent).
MAX_TEXT = 5000
CUT = " … (cut)"
CUT_TAG = "neuronexp.cut"
# What MLflow accepts in a param or metric name; anything else (e.g. Hydra's `@package` syntax) becomes "_".
_NAME_BAD = re.compile(r"[^\w./ -]")


def present(value: Any) -> bool:
    """A value that is there: not None, not NaN or pandas' NA."""
    if value is None or value is pd.NA:
        return False
    return not (isinstance(value, float) and math.isnan(value))


def _texts(values: dict[str, Any], kind: str, cut: list[str]) -> dict[str, str]:
    """Each value as a tag or param string (booleans as YAML writes them); text longer than MAX_TEXT cut, and
    `kind name (N characters)` added to `cut`."""
    out = {}
    for name, value in values.items():
        text = str(bool(value)).lower() if isinstance(value, (bool, np.bool_)) else str(value)
        if len(text) > MAX_TEXT:
            cut.append(f"{kind} {name} ({len(text):,} characters)")
            text = text[: MAX_TEXT - len(CUT)] + CUT
        out[name] = text
    return out


@dataclass(frozen=True, kw_only=True)
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


def export_key(row: pd.Series) -> str:
    """This cell as measured by one invocation: its configuration (run_id) and when it started. Exporting the same
    results again finds the same key; the same configuration measured again is a new key (a new run)."""
    ident = f"{row.get('run_id')}|{row.get('started_at')}"
    return hashlib.sha256(ident.encode()).hexdigest()[:24]


def _metrics(row: pd.Series) -> dict[str, float]:
    metrics = {}
    for col, _unit in METRICS:
        value = row.get(col)
        if present(value):
            try:
                metrics[col] = float(value)
            except (TypeError, ValueError):
                continue
    return metrics


def cell_export(row: pd.Series, name: str) -> CellExport:
    """`row` as the exporters name it; `name` is the cell's name as the terminal prints it (cell_exports)."""
    cut: list[str] = []
    overrides = _texts(
        {_NAME_BAD.sub("_", k): v for k, v in override_values(row.get("overrides")).items()}, "param", cut
    )
    labels = _texts({k: row[k] for k in LABEL_KEYS if k in row and present(row[k])}, "param", cut)
    tags = _texts({f"neuronexp.{c}": row[c] for c in TAG_COLUMNS if c in row and present(row[c])}, "tag", cut)
    if cut:
        tags[CUT_TAG] = "; ".join(cut)
    return CellExport(
        name=name, labels=labels, overrides=overrides, metrics=_metrics(row), tags=tags, key=export_key(row)
    )


def cell_exports(cells: pd.DataFrame) -> list[CellExport]:
    """Every row's export, named as the terminal and the report name the cell ("variant · input",
    analysis.variants.cell_labels: the module, +compile, the swept keys that tell the cells apart, the input)."""
    names = cell_labels(cells) if len(cells) else pd.Series([], dtype=str)
    return [cell_export(row, str(name)) for (_, row), name in zip(cells.iterrows(), names)]


class ExportError(ValueError):
    """A reason an export cannot start or go on, as one line for the command line."""
