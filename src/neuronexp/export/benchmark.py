"""The PyTorch OSS benchmark database's JSON records: one per cell and metric, in the shape PyTorch's own benchmark
scripts write (`output_json` in benchmarks/gpt_fast/benchmark.py), so the dashboards that read that format
(PyTorch's HUD, vLLM's, TorchAO's) read neuronexp's cells. The mapping: docs/columns.md."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from neuronexp.export.cells import UNITS, CellExport, cell_exports
from neuronexp.results.files import atomic_write_text

BENCHMARK_NAME = "neuronexp"
# The format's `model.type` for a single layer rather than a whole model (gpt-fast's own word for its layers).
MODEL_TYPE = "micro-benchmark"


def _extra_info(cell: CellExport) -> dict[str, Any]:
    """Everything that tells two records of the same metric apart: labels, the overrides as typed, the tags."""
    info: dict[str, Any] = {**cell.labels, **{f"override.{k}": v for k, v in cell.overrides.items()}}
    info.update({k.removeprefix("neuronexp."): v for k, v in cell.tags.items()})
    return info


def records(cells: pd.DataFrame) -> list[dict[str, Any]]:
    """One record per cell and metric the cell has (a failed cell has no figures, so no records)."""
    out = []
    for cell in cell_exports(cells):
        for metric, value in cell.metrics.items():
            out.append(
                {
                    "benchmark": {
                        "name": BENCHMARK_NAME,
                        "mode": "inference",  # neuronexp times forward passes only
                        "dtype": cell.labels.get("dtype", ""),
                        "extra_info": _extra_info(cell),
                    },
                    "model": {"name": cell.name, "type": MODEL_TYPE, "origins": [BENCHMARK_NAME]},
                    "metric": {
                        "name": metric,
                        "benchmark_values": [value],
                        "target_value": None,  # neuronexp sets no target; a baseline's figure is its own record
                        "extra_info": {"unit": UNITS[metric]},
                    },
                }
            )
    return out


def write_benchmark_json(cells: pd.DataFrame, path: Path) -> int:
    """Write the records as one JSON list (replacing `path` atomically); how many were written."""
    recs = records(cells)
    # allow_nan=False: NaN is not JSON; cells.METRICS leaves missing figures out, so none can reach here.
    atomic_write_text(path, json.dumps(recs, indent=1, allow_nan=False) + "\n")
    return len(recs)
