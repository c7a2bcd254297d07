"""Sweep aggregation: read every job directory from disk, join, add speedups, write `results/`.

Reads the files the jobs left, not in-memory returns, so it works the same when jobs ran in other
processes or on other hosts that share the sweep directory.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from neuronexp.results import TABLES, atomic_write_text, read_arrow, to_arrow, write_csv, write_table

JOBS_MANIFEST = "jobs.json"


@dataclass
class SweepOutcome:
    cells: pd.DataFrame
    missing: list[str] = field(default_factory=list)
    baseline: str | None = None
    op_rows: int = 0
    sample_rows: int = 0

    @property
    def failed(self) -> int:
        return int((self.cells["status"] == "error").sum()) + len(self.missing)


def job_dirs_of(sweep_dir: Path) -> list[Path]:
    """The sweep's jobs: from the sweeper's manifest, else every subdirectory holding a cell."""
    manifest = sweep_dir / JOBS_MANIFEST
    if manifest.is_file():
        return [sweep_dir / job["dir"] for job in json.loads(manifest.read_text())]
    return sorted((p.parent for p in sweep_dir.glob("*/cells.parquet")), key=lambda p: _natural_key(p.name))


def _natural_key(name: str) -> list[object]:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]


def _read_job_table(job_dir: Path, name: str) -> pa.Table:
    try:
        return read_arrow(job_dir / f"{name}.arrow")
    except FileNotFoundError:  # written by another tool, or before the Arrow copies existed
        return pq.read_table(job_dir / f"{name}.parquet")


def _concat(parts: list[pa.Table]) -> pa.Table:
    first = parts[0].schema
    same = all(p.schema.equals(first) for p in parts)
    # Extra columns (e.g. neuron_*) on some jobs only: unify, filling the others with nulls.
    table = pa.concat_tables(parts, promote_options="none" if same else "default")
    # One contiguous table: writers handle thousands of one-row chunks very slowly.
    return table.combine_chunks()


def read_jobs(job_dirs: list[Path]) -> tuple[dict[str, pa.Table], list[str]]:
    """The finished jobs' tables concatenated (Arrow, not pandas: a big sweep's ops stay compact)."""
    done = [d for d in job_dirs if (d / "cells.parquet").is_file()]
    finished = set(done)
    missing = [d.name for d in job_dirs if d not in finished]
    tables = {}
    for name in TABLES:
        # In batches: thousands of small tables cost more in per-table overhead than in data.
        batches = [_concat([_read_job_table(d, name) for d in done[i : i + 1000]]) for i in range(0, len(done), 1000)]
        tables[name] = _concat(batches or [to_arrow(name, pd.DataFrame())])
    return tables, missing


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

    tables, missing = read_jobs(job_dirs_of(sweep_dir))
    cells = add_speedups(tables["cells"].to_pandas(), baseline)
    tables["cells"] = to_arrow("cells", cells)
    out = sweep_dir / "results"
    out.mkdir(exist_ok=True)
    for name, table in tables.items():
        write_table(out / f"{name}.parquet", table)
        write_csv(out / f"{name}.csv", table)
    outcome = SweepOutcome(cells, missing, baseline, tables["ops"].num_rows, tables["samples"].num_rows)
    atomic_write_text(out / "summary.md", summary_markdown(outcome, sweep_dir))
    return outcome
