"""The results contract: the three tidy tables, their column types, atomic writes and `load()`."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, NamedTuple

import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

# Labels every op row repeats, so an op table can be grouped without a join.
LABEL_COLUMNS = ["run_id", "experiment", "module", "compiled", "backend", "device", "dtype", "shape"]

_STR, _F64, _I64, _BOOL = pa.string(), pa.float64(), pa.int64(), pa.bool_()

CELL_SCHEMA = pa.schema(
    [
        ("run_id", _STR), ("experiment", _STR), ("module", _STR), ("compiled", _BOOL), ("backend", _STR),
        ("device", _STR), ("device_name", _STR), ("dtype", _STR), ("shape", _STR), ("numel", _I64),
        ("overrides", _STR), ("status", _STR), ("error", _STR),
        ("latency_median_us", _F64), ("latency_p10_us", _F64), ("latency_p90_us", _F64),
        ("latency_samples", _I64), ("timing_method", _STR), ("first_call_s", _F64),
        ("device_time_us", _F64), ("cpu_time_us", _F64), ("device_ops", _F64), ("device_time_source", _STR),
        ("top_op", _STR), ("top_op_share", _F64), ("speedup_vs_baseline", _F64),
        ("trace_path", _STR), ("warnings", _STR), ("torch_version", _STR), ("neuronx_version", _STR),
        ("started_at", _STR),
        # Where the cell ran (neuronexp.placement.describe): "cpu:0-1", "cuda:3", "neuron:4-5"; the host cores
        # its process was pinned to, that process's id and its host.
        ("placement", _STR), ("placement_cpus", _STR), ("worker_pid", _I64), ("host", _STR),
    ]
)

OP_SCHEMA = pa.schema(
    [(c, _BOOL if c == "compiled" else _STR) for c in LABEL_COLUMNS]
    + [
        ("cycle", _I64), ("op", _STR), ("device_type", _STR), ("calls", _F64), ("self_cpu_us", _F64),
        ("cpu_total_us", _F64), ("self_device_us", _F64), ("device_total_us", _F64), ("device_share", _F64),
        ("input_shapes", _STR), ("flops", _F64),
    ]
)

SAMPLE_SCHEMA = pa.schema([("run_id", _STR), ("sample", _I64), ("latency_us", _F64)])

SCHEMAS = {"cells": CELL_SCHEMA, "ops": OP_SCHEMA, "samples": SAMPLE_SCHEMA}
TABLES = ("cells", "ops", "samples")


class Results(NamedTuple):
    cells: pd.DataFrame
    ops: pd.DataFrame
    samples: pd.DataFrame


def to_arrow(name: str, df: pd.DataFrame) -> pa.Table:
    """Cast to the contract's types; extra columns (e.g. `neuron_*`) follow with inferred types."""
    schema = SCHEMAS[name]
    for col in schema.names:
        if col not in df.columns:
            df = df.assign(**{col: None})
    extras = [c for c in df.columns if c not in schema.names]
    core = pa.Table.from_pandas(df[schema.names], schema=schema, preserve_index=False)
    for col in extras:
        core = core.append_column(col, pa.Array.from_pandas(df[col]))
    return core


def arrow_table(name: str, rows: list[dict[str, Any]]) -> pa.Table:
    """Rows → an Arrow table with the contract's columns and types, extra columns after them.

    Built straight from the rows (no pandas on the way): this runs once per table of every cell.
    """
    schema = SCHEMAS[name]
    table = pa.Table.from_pylist([{k: r.get(k) for k in schema.names} for r in rows], schema=schema)
    extras = dict.fromkeys(k for r in rows for k in r if k not in schema.names)
    for col in extras:
        table = table.append_column(col, pa.array([r.get(col) for r in rows]))
    return table


def frame(name: str, rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Rows → DataFrame with the contract's columns in order and its dtypes."""
    return arrow_table(name, rows).to_pandas()


def _tmp(path: Path) -> Path:
    return path.with_name(f".{path.name}.tmp-{os.getpid()}")


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write next to the target, then rename: a reader sees the old file or the new one, never half."""
    tmp = _tmp(path)
    tmp.write_bytes(data)
    os.replace(tmp, path)


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def write_json(path: Path, obj: Any) -> None:
    atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n")


def write_table(path: Path, table: pa.Table) -> None:
    tmp = _tmp(path)
    pq.write_table(table, tmp)
    os.replace(tmp, path)


def write_csv(path: Path, table: pa.Table) -> None:
    tmp = _tmp(path)
    pacsv.write_csv(table, tmp)
    os.replace(tmp, path)


def write_arrow(path: Path, table: pa.Table) -> None:
    tmp = _tmp(path)
    with pa.OSFile(str(tmp), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    os.replace(tmp, path)


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


def read_job(job_dir: Path) -> Results:
    return Results(*(pd.read_parquet(job_dir / f"{name}.parquet") for name in TABLES))


def load(path: str | os.PathLike[str]) -> Results:
    """The three tables of a run directory, or the aggregated ones of a sweep directory.

    Raises:
        FileNotFoundError: `path` holds neither a finished job nor an aggregated sweep.
    """
    root = Path(path)
    if (root / "results" / "cells.parquet").is_file():
        return Results(*(pd.read_parquet(root / "results" / f"{n}.parquet") for n in TABLES))
    if (root / "cells.parquet").is_file():
        return read_job(root)
    raise FileNotFoundError(f"{root}: no cells.parquet and no results/ here; point at a run or a sweep directory")


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
    if row.get("run_id") != run_id or row.get("status") not in ("ok", "cached"):
        return False
    if row["status"] == "ok":
        _write_job_table(job_dir, "cells", to_arrow("cells", cells.to_pandas().assign(status="cached")))
    return True
