"""Latency samples grouped the way the statistics use them: per cell (run_id), with each sample's round."""

from __future__ import annotations

import pandas as pd

Samples = tuple[pd.Series, "pd.Series | None"]


def samples_by_run(samples: pd.DataFrame) -> dict[str, Samples]:
    """run_id -> (latencies, their rounds). Results from before rounds have no `round` column: one round."""
    if samples.empty:
        return {}
    has_rounds = "round" in samples.columns and bool(samples["round"].notna().all())
    # In the order taken: a one-round side's noise floor (analysis.floor) cuts its samples into time slices.
    if "sample" in samples.columns:
        samples = samples.sort_values(["run_id", "sample"], kind="stable")
    return {str(k): (g["latency_us"], g["round"] if has_rounds else None) for k, g in samples.groupby("run_id")}


NO_SAMPLES: Samples = (pd.Series([], dtype=float), None)
