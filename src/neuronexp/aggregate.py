"""Sweep aggregation: read every job directory from disk, join, add speedups, write `results/`.

Reads the files the jobs left, not in-memory returns, so it works the same when jobs ran in other
processes or on other hosts that share the sweep directory.
"""

from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from neuronexp.results import TABLES, Results, atomic_write_text, to_arrow, write_csv, write_table

JOBS_MANIFEST = "jobs.json"


@dataclass
class SweepOutcome:
    results: Results
    missing: list[str] = field(default_factory=list)
    baseline: str | None = None

    @property
    def failed(self) -> int:
        return int((self.results.cells["status"] == "error").sum()) + len(self.missing)


def job_dirs_of(sweep_dir: Path) -> list[Path]:
    """The sweep's jobs: from the sweeper's manifest, else every subdirectory holding a cell."""
    manifest = sweep_dir / JOBS_MANIFEST
    if manifest.is_file():
        return [sweep_dir / job["dir"] for job in json.loads(manifest.read_text())]
    return sorted((p.parent for p in sweep_dir.glob("*/cells.parquet")), key=lambda p: _natural_key(p.name))


def _natural_key(name: str) -> list[object]:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]


def _read_all(paths: list[Path]) -> pa.Table | None:
    if not paths:
        return None
    with ThreadPoolExecutor(max_workers=8) as pool:
        tables = list(pool.map(pq.read_table, paths))
    return pa.concat_tables(tables, promote_options="default")


def read_jobs(job_dirs: list[Path]) -> tuple[Results, list[str]]:
    done = [d for d in job_dirs if (d / "cells.parquet").is_file()]
    missing = [d.name for d in job_dirs if d not in set(done)]
    frames = []
    for name in TABLES:
        table = _read_all([d / f"{name}.parquet" for d in done])
        df = table.to_pandas() if table is not None else pd.DataFrame()
        frames.append(to_arrow(name, df).to_pandas())
    return Results(*frames), missing


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
    ok = frame["status"].isin(["ok", "cached"])
    base = frame[ok & (frame["module"] == baseline)].sort_values("compiled")  # eager baseline first
    base = base.drop_duplicates(match + ["_key"])[match + ["_key", "latency_median_us"]]
    joined = frame.merge(base, on=match + ["_key"], how="left", suffixes=("", "_base"))
    speedup = joined["latency_median_us_base"] / joined["latency_median_us"]
    cells["speedup_vs_baseline"] = np.where(ok.values, speedup.values, np.nan)
    return cells


def aggregate(sweep_dir: Path, baseline: str | None) -> SweepOutcome:
    """Write `results/{cells,ops,samples}.{parquet,csv}` and `results/summary.md` for a sweep."""
    from neuronexp.summary import summary_markdown

    results, missing = read_jobs(job_dirs_of(sweep_dir))
    results = results._replace(cells=add_speedups(results.cells, baseline))
    out = sweep_dir / "results"
    out.mkdir(exist_ok=True)
    for name, df in zip(TABLES, results):
        write_table(out / f"{name}.parquet", to_arrow(name, df))
        write_csv(out / f"{name}.csv", df)
    outcome = SweepOutcome(results, missing, baseline)
    atomic_write_text(out / "summary.md", summary_markdown(outcome, sweep_dir))
    return outcome
