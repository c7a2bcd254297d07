"""When a cell's MLflow run starts and ends: the cell's own time, never the export's. The rows hold when the cell
started (`started_at`) and what its measured calls took: the first call (`first_call_s`, compile included) and every
timed call (`samples.latency_us` × `cells.sample_block`); the run lasts their sum (docs/export.md)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pandas as pd


@dataclass(frozen=True)
class Span:
    """Milliseconds since the epoch, as MLflow takes them; None where the row does not say (MLflow's default)."""

    start: int | None
    end: int | None

    @classmethod
    def around(cls, spans: list[Span]) -> Span:
        """From the first start to the last end (a sweep's parent run)."""
        starts = [s.start for s in spans if s.start is not None]
        ends = [s.end for s in spans if s.end is not None]
        return cls(min(starts, default=None), max(ends, default=None))


def _millis(started_at: Any) -> int | None:
    try:
        return int(datetime.fromisoformat(str(started_at)).timestamp() * 1000)
    except ValueError:
        return None


def _figure(value: Any, default: float) -> float:
    """A finite, non-negative number from the row, else `default` (missing, NaN, or not a measurement)."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return default
    return number if math.isfinite(number) and number >= 0 else default


def cell_spans(cells: pd.DataFrame, samples: pd.DataFrame) -> dict[str, Span]:
    """Each cell's span by run_id: from `started_at`, for its first call and its timed calls."""
    per_sample = samples.groupby(samples["run_id"].astype(str))["latency_us"].sum() if len(samples) else pd.Series()
    spans = {}
    for row in cells.to_dict("records"):
        run_id, start = str(row["run_id"]), _millis(row.get("started_at"))
        block = _figure(row.get("sample_block"), 1.0) or 1.0
        measured_ms = _figure(row.get("first_call_s"), 0.0) * 1e3 + _figure(per_sample.get(run_id), 0.0) * block / 1e3
        spans[run_id] = Span(start, None if start is None else start + round(measured_ms))
    return spans
