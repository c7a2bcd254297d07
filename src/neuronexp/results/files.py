"""Writing and checking a job's files: atomic writes, the job tables, the completion marker.

A reader sees an old file or a new one, never half of one: everything is written next to its target and
renamed into place, and `cells.*` is written last, so a job directory with `cells.parquet` is complete.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import stat
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from neuronexp.results.contract import OPTIONAL_TABLES, SCHEMAS, TABLES, to_arrow, usable
from neuronexp.results.regular import read_regular


def _synced(path: Path, flags: int = os.O_RDONLY | os.O_NOFOLLOW) -> None:
    """`path`'s data (a file's, or a directory's entries) on the disk before this returns: fsync."""
    fd = os.open(path, flags)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# What atomic_path syncs to the disk: `rename`, the file's data before its rename and the directory after it; `data`,
# the data only, the directory left to the caller, who syncs it once after a batch of renames (write_job_tables);
# `none`, nothing: a note whose loss in a machine's crash costs nothing (the phase). Each sync is a journal commit,
# 0.3-30 ms on this VM's disk; a near-empty cell made 35 of them before (issue 47, strace: docs/history.md).
SYNCS = ("rename", "data", "none")


@contextmanager
def atomic_path(path: Path, sync: str = "rename") -> Iterator[Path]:
    """A temporary name next to `path` to write to; renamed onto `path` when the block succeeds, removed
    when it fails (a full or read-only disk leaves no temporary behind). A reader never sees half a file, and after a
    crash of the machine (a Slurm node's) never an empty one: the file is synced before the rename and the directory
    after it, as `sync` says (SYNCS; their cost: docs/history.md)."""
    assert sync in SYNCS, sync
    # Created here, exclusively and not through a link: a name planted beforehand (a link to a file elsewhere, a
    # stale temporary) is never written through nor replaced; the random part makes that a fresh name.
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}-{os.urandom(4).hex()}")
    os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666))
    try:
        yield tmp
        if sync != "none":
            _synced(tmp)  # the data first: a rename that reaches the disk before it leaves a zero-length file
        os.replace(tmp, path)
        if sync == "rename":
            _synced(path.parent, os.O_RDONLY | os.O_DIRECTORY)  # the rename itself
    finally:
        tmp.unlink(missing_ok=True)
        # Writers that stage through a temporary of their own next to the name given them (Kineto's trace
        # export writes `<name>.tmp`) leave it behind when the disk fills; the name is ours, so is the file.
        # (Listed by prefix, not globbed: a pattern of a random name is compiled anew each time, 1 ms a file.)
        staged = tmp.name + "."
        with contextlib.suppress(OSError), os.scandir(path.parent) as entries:  # (a directory gone: nothing staged)
            for entry in entries:
                if entry.name.startswith(staged):
                    Path(entry.path).unlink(missing_ok=True)


def atomic_write_text(path: Path, text: str, sync: str = "rename") -> None:
    with atomic_path(path, sync) as tmp:
        tmp.write_bytes(text.encode("utf-8"))


def write_json(path: Path, obj: Any, sync: str = "rename") -> None:
    atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n", sync)


def write_table(path: Path, table: pa.Table, sync: str = "rename") -> None:
    with atomic_path(path, sync) as tmp:
        pq.write_table(table, tmp)


def _csv_ready(table: pa.Table) -> pa.Table:
    """List columns (`shape_dims`) as "[1,128,1024]": CSV has no lists, and that is how a shape is written."""
    for i, fld in enumerate(table.schema):
        if pa.types.is_list(fld.type):
            joined = pc.binary_join(pc.cast(table.column(i), pa.list_(pa.string())), ",")
            table = table.set_column(i, fld.name, pc.binary_join_element_wise("[", joined, "]", ""))
    return table


def write_csv(path: Path, table: pa.Table) -> None:
    with atomic_path(path) as tmp:
        pacsv.write_csv(_csv_ready(table), tmp)


def write_arrow(path: Path, table: pa.Table, sync: str = "rename") -> None:
    with atomic_path(path, sync) as tmp, pa.OSFile(str(tmp), "wb") as sink:
        with pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)


def read_arrow(path: Path) -> pa.Table:
    return pa.ipc.open_file(pa.BufferReader(read_regular(path))).read_all()


def write_job_tables(out_dir: Path, tables: dict[str, pa.Table | pd.DataFrame]) -> None:
    """ops and samples first, cells last: a job directory with cells.parquet is complete. Each table is also
    written as an Arrow IPC file (`*.arrow`): Parquet is the format to share, but parsing its footer costs ~1 ms a
    file, which dominates aggregating a sweep of thousands of cells; Arrow IPC reads in a few hundredths of that.
    Every file's data is synced before its rename; the directory once before cells.parquet's rename (every rename
    made before it, the files written earlier with sync="data" too, on the disk first) and once after it."""
    for name in ("ops", "samples", *(t for t in OPTIONAL_TABLES if t in tables), "cells"):
        table = tables[name]
        table = table if isinstance(table, pa.Table) else to_arrow(name, table)
        write_arrow(out_dir / f"{name}.arrow", table, "data")
        if name == "cells":
            _synced(out_dir, os.O_RDONLY | os.O_DIRECTORY)
        write_table(out_dir / f"{name}.parquet", table, "rename" if name == "cells" else "data")


# The cell's output, for the output check (results.outputs writes and reads it); a 16-bit cell also saves its
# module evaluated in float32 on the same inputs (cell.output), what a variant's accuracy is judged against.
OUTPUT_FILE = "output.npz"
FLOAT32_OUTPUT_FILE = "output_fp32.npz"

# A failed cell's full traceback (its row keeps the root cause in one line).
ERROR_LOG = "error.log"


def reset_job_dir(job_dir: Path) -> None:
    """Before a cell (re)runs in `job_dir`: drop its completion marker and any half-written temporaries, or a rerun
    killed midway would leave the old cells row beside new ops and samples (and one that succeeds, the old
    attempt's traceback beside its row)."""
    # The outputs too: an output left from an earlier attempt must never be checked as this one's.
    for stale in [
        job_dir / "cells.parquet",
        job_dir / "cells.arrow",
        job_dir / ERROR_LOG,
        job_dir / OUTPUT_FILE,
        job_dir / FLOAT32_OUTPUT_FILE,
        *job_dir.glob(".*.tmp-*"),
    ]:
        stale.unlink(missing_ok=True)


# What the cell is doing now ("build", "compile", "timing", ...), one line, rewritten atomically by the cell's
# process at each step: progress displays and the supervisor read it from another process (a timed-out cell's
# error row names its phase).
PHASE_FILE = ".phase"


def write_phase(job_dir: Path, phase: str) -> None:
    """Record the cell's current step; a failure to write it never fails the cell."""
    with contextlib.suppress(OSError):
        atomic_write_text(job_dir / PHASE_FILE, phase + "\n", "none")  # after a machine's crash: no phase (None)


def read_phase(job_dir: Path) -> str | None:
    """The step the cell in `job_dir` last recorded (write_phase), or None."""
    try:
        return read_regular(job_dir / PHASE_FILE).decode("utf-8", "replace").strip() or None
    except OSError:
        return None


# Written first into every job directory a cell runs in: whose directory it is, even if the cell never ends.
CELL_MARKER = "cell.json"


def complete_run_id(job_dir: Path) -> str | None:
    """The run_id of the complete, successful cell in `job_dir`, or None. Complete: every file aggregation reads is
    there, a regular file, and readable; a truncated or damaged table or output file makes the cell run again,
    never pass as reused (nor hang the sweep: a FIFO is refused before anything opens it)."""
    tables = [job_dir / f"{name}.{ext}" for name in TABLES for ext in ("arrow", "parquet")]
    outputs = [job_dir / OUTPUT_FILE, job_dir / FLOAT32_OUTPUT_FILE]
    try:
        if not all(stat.S_ISREG(os.lstat(p).st_mode) for p in tables):  # a link: run again
            return None
        for name in TABLES:  # every column of the contract: an older layout's cell runs again
            if not set(SCHEMAS[name].names) <= set(read_arrow(job_dir / f"{name}.arrow").column_names):
                return None
            pq.read_metadata(job_dir / f"{name}.parquet")  # the footer only: checked a regular file above
        rows = pq.read_table(pa.BufferReader(read_regular(job_dir / "cells.parquet"))).to_pylist()
        if len(rows) != 1 or not usable(rows[0].get("status")):
            return None
        saved = rows[0].get("output_tensors")
        for path, needed in zip(outputs, (saved is not None and saved == saved, False)):
            if needed or os.path.lexists(path):
                with zipfile.ZipFile(io.BytesIO(read_regular(path))) as npz:  # what the output check will read
                    if npz.testzip() is not None:
                        return None
    except (OSError, pa.ArrowException, zipfile.BadZipFile, EOFError, ValueError):
        return None
    return str(rows[0]["run_id"])


def read_marker(job_dir: Path) -> dict[str, Any] | None:
    """The job's `cell.json` when neuronexp wrote it (a regular file, a mapping that says so), else None."""
    try:
        info = json.loads(read_regular(job_dir / CELL_MARKER))
    except (OSError, ValueError):
        return None
    return info if isinstance(info, dict) and info.get("written_by") == "neuronexp" else None


def owner(job_dir: Path) -> str | None:
    """The run_id of the cell that has written into `job_dir` (complete, failed or cut short), None when no
    cell has, "unknown" when its files cannot be read or its `cell.json` is not one neuronexp wrote."""
    if os.path.lexists(job_dir / CELL_MARKER):
        info = read_marker(job_dir)
        return str(info["run_id"]) if info is not None and "run_id" in info else "unknown"
    if (job_dir / "cells.parquet").is_file():
        try:
            table = pq.read_table(pa.BufferReader(read_regular(job_dir / "cells.parquet")), columns=["run_id"])
            return str(table.column(0)[0])
        except (OSError, pa.ArrowException, IndexError):
            return "unknown"
    return None
