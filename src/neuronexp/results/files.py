"""Writing and checking a job's files: atomic writes, the job tables, the completion marker.

A reader sees an old file or a new one, never half of one: everything is written next to its target and
renamed into place, and `cells.*` is written last, so a job directory with `cells.parquet` is complete.
"""

from __future__ import annotations

import json
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from neuronexp.results.schema import to_arrow, usable

@contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """A temporary name next to `path` to write to; renamed onto `path` when the block succeeds, removed
    when it fails (a full or read-only disk leaves no temporary behind). A reader never sees half a file."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def write_json(path: Path, obj: Any) -> None:
    atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n")


def write_table(path: Path, table: pa.Table) -> None:
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp)


def write_csv(path: Path, table: pa.Table) -> None:
    with atomic_path(path) as tmp:
        pacsv.write_csv(table, tmp)


def write_arrow(path: Path, table: pa.Table) -> None:
    with atomic_path(path) as tmp, pa.OSFile(str(tmp), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)


def read_arrow(path: Path) -> pa.Table:
    return pa.ipc.open_file(pa.BufferReader(path.read_bytes())).read_all()


def write_job_tables(out_dir: Path, tables: dict[str, pa.Table | pd.DataFrame]) -> None:
    """ops and samples first, cells last: a job directory with cells.parquet is complete.

    Each table is also written as an Arrow IPC file (`*.arrow`): Parquet is the format to share, but
    parsing its footer costs ~1 ms a file, which dominates aggregating a sweep of thousands of cells;
    Arrow IPC reads in a few hundredths of that.
    """
    for name in ("ops", "samples", "cells"):
        table = tables[name]
        _write_job_table(out_dir, name, table if isinstance(table, pa.Table) else to_arrow(name, table))


def _write_job_table(out_dir: Path, name: str, table: pa.Table) -> None:
    write_arrow(out_dir / f"{name}.arrow", table)
    write_table(out_dir / f"{name}.parquet", table)


def reset_job_dir(job_dir: Path) -> None:
    """Before a cell (re)runs in `job_dir`: drop its completion marker and any half-written temporaries.

    Without this, a rerun killed midway would leave the old cells row beside new ops and samples.
    """
    for stale in [job_dir / "cells.parquet", job_dir / "cells.arrow", *job_dir.glob(".*.tmp-*")]:
        stale.unlink(missing_ok=True)


def foreign_cell(job_dir: Path, run_id: str) -> str | None:
    """A description of the cell whose results `job_dir` holds when that is another cell than `run_id`, else None."""
    cells_path = job_dir / "cells.parquet"
    if not cells_path.is_file():
        return None
    try:
        row = pq.read_table(cells_path).to_pylist()[0]
    except (OSError, IndexError, pa.ArrowException):
        return "an unreadable cells.parquet"
    if row.get("run_id") == run_id:
        return None
    return f"run_id {row.get('run_id')}: {row.get('module')} {row.get('shape')} {row.get('dtype')}, {row.get('status')}"


def mark_cached_if_complete(job_dir: Path, run_id: str) -> bool:
    """True when `job_dir` already holds a finished, successful cell for this exact config.

    The cell's status becomes `cached` (its measurements are kept as they are); failed or partial cells
    return False and are run again.
    """
    cells_path = job_dir / "cells.parquet"
    if not (cells_path.is_file() and (job_dir / "ops.parquet").is_file() and (job_dir / "samples.parquet").is_file()):
        return False
    try:
        cells = pq.read_table(cells_path)
    except (OSError, pa.ArrowException):
        return False
    row = cells.to_pylist()[0] if cells.num_rows == 1 else {}
    if row.get("run_id") != run_id or not usable(row.get("status")):
        return False
    if row["status"] == "ok":
        _write_job_table(job_dir, "cells", to_arrow("cells", cells.to_pandas().assign(status="cached")))
    return True
