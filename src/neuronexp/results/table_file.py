"""One table file read back and checked against the contract before anything uses it: the regular file
neuronexp wrote, with every column of its layout (older names read back under today's)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from neuronexp.results.contract import SCHEMAS
from neuronexp.results.regular import LinkRefused, read_regular

# Renamed columns, old name → new: results written before the rename read back under today's names (`shape`
# collided with DataFrame.shape: `cells[cells.shape == "[1,8]"]` compared a tuple and matched nothing).
RENAMED = {"shape": "input_shape"}
# Columns added to a table after results had been written without them: an older file reads back with them null
# (missing, not zero: each reader says what it lacks), rather than refused as another layout.
ADDED = {
    "modules": ("cycles", "total_device_us_low", "total_device_us_median", "total_device_us_high"),
    "cells": (
        "output_nonfinite",
        "compile_backend",
        "timing_stop",
        "precision_target",
        "precision_reached",
        "precision_met",
    ),
}


class DamagedResults(ValueError):
    """A file neuronexp wrote cannot be read back as written (changed or damaged since, another tool's table, or
    one of an older layout)."""


def read_table(path: Path, name: str, root: Path | None = None) -> pa.Table:
    """The `name` table ("cells", "ops", "samples") at `path` (`.parquet` or `.arrow`), checked against the contract.

    Read from the bytes of a regular file reached from `root` (results.regular): a link on the way, a FIFO or a
    device under a table's name is refused, never followed or opened blocking. A table without every column of the
    contract (another tool's, or an older neuronexp's) is refused here in one line (DamagedResults), rather than as
    a KeyError deep in a report, but for the columns ADDED since (null); FileNotFoundError: no file there.
    """
    try:
        buffer = pa.BufferReader(read_regular(path, root))
        # One thread: a read that fails midway can leave an Arrow pool worker alive, and its destructor at exit
        # aborts the process (apache/arrow#34314: a report that printed its one-line error then died with -6).
        table = (
            pa.ipc.open_file(buffer).read_all() if path.suffix == ".arrow" else pq.read_table(buffer, use_threads=False)
        )
    except FileNotFoundError:
        raise
    except LinkRefused as exc:
        raise DamagedResults(str(exc)) from None
    except (OSError, pa.ArrowException) as exc:
        lines = str(exc).splitlines()
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else (lines[0] if lines else type(exc).__name__)
        raise DamagedResults(
            f"{path}: cannot be read as a table ({why}); neuronexp reads only the regular files it "
            "wrote: rerun the cell or sweep into this directory to write it again"
        ) from None
    names = table.column_names  # results written before a column was renamed read back under its new name
    table = table.rename_columns([RENAMED[n] if n in RENAMED and RENAMED[n] not in names else n for n in names])
    for column in (c for c in ADDED.get(name, ()) if c not in table.column_names):
        table = table.append_column(SCHEMAS[name].field(column), pa.nulls(len(table), SCHEMAS[name].field(column).type))
    if lacking := [c for c in SCHEMAS[name].names if c not in table.column_names]:
        shown = ", ".join(lacking[:5]) + (f" and {len(lacking) - 5} more" if len(lacking) > 5 else "")
        raise DamagedResults(
            f"{path}: not a {name} table of this neuronexp's layout (no column {shown}); it was "
            "written by another tool or an older neuronexp: rerun it with this version, or read it "
            "with the version that wrote it"
        )
    return table
