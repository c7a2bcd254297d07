"""The one reader of neuronexp's tables: a run directory, a sweep's aggregated `results/`, or a sweep's job
directories (a sweep that was never aggregated, or is being aggregated)."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from neuronexp.results.files import read_arrow
from neuronexp.results.schema import OPTIONAL_TABLES, TABLES, Results, to_arrow, whole_counts

# The sweep's planned cells, written before the first one runs: what "missing" is measured against.
JOBS_MANIFEST = "jobs.json"


def _optional(path: Path) -> pd.DataFrame | None:
    return pd.read_parquet(path) if path.is_file() else None


def read_job(job_dir: Path) -> Results:
    return Results(*(pd.read_parquet(job_dir / f"{name}.parquet") for name in TABLES), _optional(job_dir / "modules.parquet"))


class DamagedResults(ValueError):
    """A file neuronexp wrote cannot be read back as written (changed or damaged since)."""


def load(path: str | os.PathLike[str]) -> Results:
    """The three tables of a run directory, or the aggregated ones of a sweep directory, for analysis: counts
    (`calls`, `device_ops`, ...) are integers where they are whole (docs/columns.md).

    Raises:
        FileNotFoundError: `path` holds neither a finished job nor an aggregated sweep.
    """
    found = _load(Path(path))
    return Results(*(whole_counts(t) for t in found), whole_counts(found.modules))


def _load(root: Path) -> Results:
    """load() with the contract's own types (floats for every count)."""
    if (root / "results" / "cells.parquet").is_file():
        return Results(*(pd.read_parquet(root / "results" / f"{n}.parquet") for n in TABLES),
                       _optional(root / "results" / "modules.parquet"))
    if (root / "cells.parquet").is_file():
        return read_job(root)
    raise FileNotFoundError(f"{root}: no cells.parquet and no results/ here; point at a run or a sweep directory")


def job_dirs_of(sweep_dir: Path) -> list[Path]:
    """The sweep's jobs: from the sweeper's manifest, else every subdirectory holding a cell."""
    manifest = sweep_dir / JOBS_MANIFEST
    if manifest.is_file():
        try:
            return [sweep_dir / str(job["dir"]) for job in json.loads(manifest.read_text())]
        except (ValueError, TypeError, KeyError) as exc:
            raise DamagedResults(f"{manifest}: not the list of planned cells neuronexp writes ({type(exc).__name__}: "
                                 f"{exc}); rerun the sweep into this directory to rewrite it") from None
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
    """The finished jobs' tables concatenated (Arrow, not pandas: a big sweep's ops stay compact), and the
    names of the job directories that hold no finished cell."""
    done = [d for d in job_dirs if (d / "cells.parquet").is_file()]
    finished = set(done)
    missing = [d.name for d in job_dirs if d not in finished]
    tables = {}
    for name in (*TABLES, *OPTIONAL_TABLES):
        if name in OPTIONAL_TABLES:  # only the jobs that wrote one (profiler.modules=true)
            parts = [_read_job_table(d, name) for d in done if (d / f"{name}.parquet").is_file()]
            if parts:  # absent, not empty: a sweep's results/ gets the table only when some cell wrote it
                tables[name] = _concat(parts)
            continue
        # In batches: thousands of small tables cost more in per-table overhead than in data.
        batches = [_concat([_read_job_table(d, name) for d in done[i : i + 1000]]) for i in range(0, len(done), 1000)]
        tables[name] = _concat(batches or [to_arrow(name, pd.DataFrame())])
    return tables, missing


def run_dirs(run_ids: list[str], job_dirs: list[Path]) -> dict[str, Path]:
    """Each cell's job directory, for the cells read_jobs(job_dirs) returned (one row per finished job, in the
    order of `job_dirs`); each directory's own row is read again only when the counts disagree (a job finished
    in between)."""
    done = [d for d in job_dirs if (d / "cells.parquet").is_file()]
    if len(done) == len(run_ids):
        return dict(zip(map(str, run_ids), done))
    return {str(_read_job_table(d, "cells").column("run_id")[0]): d for d in done}


@dataclass
class Found:
    """What a directory holds: its tables, "sweep" or "run", each cell's job directory, and planned cells
    that never finished (a killed sweep)."""

    results: Results
    kind: str
    job_dir_of: dict[str, Path]
    missing: list[str] = field(default_factory=list)


def read_any(root: Path) -> Found:
    """A run directory, an aggregated sweep, or a sweep read from its job directories (never aggregated).

    Raises:
        FileNotFoundError: no results here.
    """
    if (root / "cells.parquet").is_file():
        results = _load(root)
        return Found(results, "run", {str(r): root for r in results.cells["run_id"]})
    planned = job_dirs_of(root) if root.is_dir() else []
    dirs = [d for d in planned if (d / "cells.parquet").is_file()]
    missing = [d.name for d in planned if not (d / "cells.parquet").is_file()]
    if (root / "results" / "cells.parquet").is_file():
        results = _load(root)
    elif dirs:
        tables, _ = read_jobs(dirs)
        results = Results(*(tables[name].to_pandas() for name in TABLES), tables["modules"].to_pandas() if "modules" in tables else None)
    else:
        raise FileNotFoundError(f"{root}: no results here (no cells.parquet, no results/, no job directories); "
                                "point at a run or a sweep directory")
    return Found(results, "sweep", {_job_run_id(d): d for d in dirs}, missing)


def _job_run_id(job_dir: Path) -> str:
    run_ids = pq.read_table(job_dir / "cells.parquet", columns=["run_id"]).column(0).to_pylist()
    if len(run_ids) != 1:
        raise DamagedResults(f"{job_dir / 'cells.parquet'}: {len(run_ids)} rows where a job's table holds one; "
                             "rerun the sweep into this directory to run that cell again")
    return str(run_ids[0])
