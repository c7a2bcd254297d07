"""The one reader of neuronexp's tables: a run directory, a sweep's aggregated `results/`, or a sweep's job
directories (a sweep that was never aggregated, or is being aggregated)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pyarrow as pa

from neuronexp.results.contract import OPTIONAL_TABLES, SCHEMAS, TABLES, Results, to_arrow
from neuronexp.results.regular import LinkRefused, read_regular
from neuronexp.results.table_file import DamagedResults, read_table

# The sweep's planned cells, written before the first one runs: what "missing" is measured against.
JOBS_MANIFEST = "jobs.json"


def read_job(job_dir: Path, root: Path | None = None) -> Results:
    """A job directory's tables (modules where written), each a regular file reached from `root` (default: the job
    directory) without a link."""
    modules = job_dir / "modules.parquet"  # a link there is refused, not taken for no table
    return Results.of(
        (read_table(job_dir / f"{name}.parquet", name, root).to_pandas() for name in TABLES),
        read_table(modules, "modules", root).to_pandas() if modules.is_file() or modules.is_symlink() else None,
    )


def load_root(root: Path) -> Results:
    """A run directory's or an aggregated sweep's tables with the contract's own types (floats for every count)."""
    for tables in (root / "results", root):
        if (tables / "cells.parquet").is_file():
            return read_job(tables, root)
    raise FileNotFoundError(f"{root}: no cells.parquet and no results/ here; point at a run or a sweep directory")


def job_dirs_of(sweep_dir: Path) -> list[Path]:
    """The sweep's jobs: from the sweeper's manifest, else every subdirectory holding a cell."""
    manifest = sweep_dir / JOBS_MANIFEST
    if manifest.is_file() or manifest.is_symlink():
        try:
            return [sweep_dir / _job_name(job["dir"]) for job in json.loads(read_regular(manifest))]
        except LinkRefused as exc:
            raise DamagedResults(str(exc)) from None
        except (ValueError, TypeError, KeyError) as exc:
            raise DamagedResults(
                f"{manifest}: not the list of planned cells neuronexp writes ({type(exc).__name__}: "
                f"{exc}); rerun the sweep into this directory to rewrite it"
            ) from None
    return sorted((p.parent for p in sweep_dir.glob("*/cells.parquet")), key=lambda p: natural_key(p.name))


def _job_name(name: object) -> str:
    """A job directory's name as the manifest gives it: relative, and never climbing out of the sweep directory."""
    text = str(name)
    if not text or Path(text).is_absolute() or ".." in Path(text).parts:
        raise ValueError(f"job directory {text!r} is not a name inside the sweep directory")
    return text


def natural_key(name: str) -> list[object]:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]


def _read_job_table(job_dir: Path, name: str, root: Path | None) -> pa.Table:
    try:
        return read_table(job_dir / f"{name}.arrow", name, root)
    except FileNotFoundError:  # written by another tool, or before the Arrow copies existed
        return read_table(job_dir / f"{name}.parquet", name, root)


def _concat(parts: list[pa.Table]) -> pa.Table:
    same = all(p.schema.equals(parts[0].schema) for p in parts)
    # Extra columns (e.g. neuron_*, a swept argument) on some jobs only: unify, filling the others with nulls; a
    # swept argument typed int in one cell and float in another (`module.scale=1,0.5`) widens to float.
    try:
        table = pa.concat_tables(parts, promote_options="none" if same else "permissive")
    except (pa.ArrowTypeError, pa.ArrowInvalid):  # one extra column typed apart (4 here, "wide" there): as text
        table = pa.concat_tables([_extras_as_text(p) for p in parts], promote_options="permissive")
    # One contiguous table: writers handle thousands of one-row chunks very slowly.
    return table.combine_chunks()


def _extras_as_text(table: pa.Table) -> pa.Table:
    """The columns beyond the contract's as strings (the contract's keep their types)."""
    contract = {name for schema in SCHEMAS.values() for name in schema.names}
    for i, name in enumerate(table.column_names):
        if name not in contract and not pa.types.is_string(table.schema.field(i).type):
            table = table.set_column(i, name, table.column(i).cast(pa.string()))
    return table


def read_jobs(job_dirs: list[Path], root: Path | None = None) -> tuple[dict[str, pa.Table], list[str]]:
    """The finished jobs' tables concatenated (Arrow, not pandas: a big sweep's ops stay compact), and the
    names of the job directories that hold no finished cell; read from `root` (the sweep directory) on, no link
    followed."""
    done = [d for d in job_dirs if (d / "cells.parquet").is_file()]
    finished = set(done)
    missing = [d.name for d in job_dirs if d not in finished]
    tables = {}
    for name in OPTIONAL_TABLES:  # only the jobs that wrote one (profiler.modules=true)
        parts = [_read_job_table(d, name, root) for d in done if (d / f"{name}.parquet").is_file()]
        if parts:  # absent, not empty: a sweep's results/ gets the table only when some cell wrote it
            tables[name] = _concat(parts)
    for name in TABLES:
        # In batches: thousands of small tables cost more in per-table overhead than in data.
        batches = [
            _concat([_read_job_table(d, name, root) for d in done[i : i + 1000]]) for i in range(0, len(done), 1000)
        ]
        tables[name] = _concat(batches or [to_arrow(name, pd.DataFrame())])
    return tables, missing


def run_dirs(run_ids: list[str], job_dirs: list[Path]) -> dict[str, Path]:
    """Each cell's job directory, for the cells read_jobs(job_dirs) returned (one row per finished job, in the
    order of `job_dirs`); each directory's own row is read again only when the counts disagree (a job finished
    in between)."""
    done = [d for d in job_dirs if (d / "cells.parquet").is_file()]
    if len(done) == len(run_ids):
        return dict(zip(map(str, run_ids), done))
    return {str(_read_job_table(d, "cells", None).column("run_id")[0]): d for d in done}


@dataclass
class Found:
    """What a directory holds: its tables, "sweep" or "run", each cell's job directory, and planned cells
    that never finished (a killed sweep)."""

    results: Results
    kind: str
    job_dir_of: dict[str, Path]
    missing: list[str] = field(default_factory=list)


def read_any(root: Path) -> Found:
    """A run directory, an aggregated sweep, or a sweep read from its job directories (never aggregated);
    FileNotFoundError: no results here."""
    if (root / "cells.parquet").is_file():
        results = load_root(root)
        return Found(results, "run", {str(r): root for r in results.cells["run_id"]})
    planned = job_dirs_of(root) if root.is_dir() else []
    dirs = [d for d in planned if (d / "cells.parquet").is_file()]
    missing = [d.name for d in planned if not (d / "cells.parquet").is_file()]
    if (root / "results" / "cells.parquet").is_file():
        results = load_root(root)
    elif dirs:
        results = Results.from_arrow(read_jobs(dirs, root)[0])
    else:
        raise FileNotFoundError(
            f"{root}: no results here (no cells.parquet, no results/, no job directories); "
            "point at a run or a sweep directory"
        )
    return Found(results, "sweep", {_job_run_id(d, root): d for d in dirs}, missing)


def _job_run_id(job_dir: Path, root: Path) -> str:
    run_ids = read_table(job_dir / "cells.parquet", "cells", root).column("run_id").to_pylist()
    if len(run_ids) != 1:
        raise DamagedResults(
            f"{job_dir / 'cells.parquet'}: {len(run_ids)} rows where a job's table holds one; "
            "rerun the sweep into this directory to run that cell again"
        )
    return str(run_ids[0])
