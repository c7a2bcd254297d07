"""`neuronexp.load`: run and sweep directories, or glob patterns, as the three tables for analysis; each directory
read once, each cell once, the cells in the order of their shapes (docs/columns.md, "What `neuronexp.load` adds")."""

from __future__ import annotations

import glob
import os
from pathlib import Path
from typing import Any

import pandas as pd

from neuronexp.results.contract import TABLES, Results, whole_counts
from neuronexp.results.read import load_root, natural_key


def load(*paths: str | os.PathLike[str]) -> Results:
    """The three tables of run directories or sweep directories (their aggregated tables), for analysis: counts
    (`calls`, `device_ops`, ...) are integers where they are whole (docs/columns.md).

    Several directories, or glob patterns (`"outputs/sweeps/rmsnorm_sweep/*"`), give their rows together; every row
    says where it came from in `source_dir` (the directory as given or matched), and which invocation measured it
    in `invocation_id`. A directory named twice (or matched by two patterns) is read once, and a cell found in two
    directories (a job directory and its sweep, a copy) is kept once, from the first: one measurement is one row.
    `cells` come ordered by shape, number by number (`[1,128,1024]` before `[1,1024,4096]`), stably.

    Raises:
        FileNotFoundError: a path holds neither a finished job nor an aggregated sweep, or a pattern matches none.
        DamagedResults: a table there cannot be read as neuronexp wrote it (a link, another tool's, damaged).
    """
    if not paths:
        raise TypeError("load() needs at least one directory or glob pattern")
    roots = [root for path in paths for root in _expand(path)]
    parts: list[Results] = []
    seen: set[tuple[str, ...]] = set()
    for root in roots:
        found = load_root(root)
        keys = _measurements(found.cells)
        repeated = {run for run, key in zip(found.cells["run_id"], keys) if key in seen}
        seen.update(keys)
        parts.append(Results.of((_from(t, root, repeated) for t in found), _from(found.modules, root, repeated)))
    tables = [pd.concat([p[i] for p in parts], ignore_index=True) for i in range(len(TABLES))]
    tables[0] = by_shape(tables[0])
    modules = pd.concat([p.modules for p in parts], ignore_index=True)
    return Results.of((whole_counts(t) for t in tables), whole_counts(modules))


def _expand(path: str | os.PathLike[str]) -> list[Path]:
    text = os.fspath(path)
    if not glob.has_magic(text):
        return [Path(text)]
    found = sorted((Path(p) for p in glob.glob(text) if Path(p).is_dir()), key=lambda p: natural_key(str(p)))
    if not found:
        raise FileNotFoundError(f"{text}: no directory matches this pattern")
    return found


def _measurements(cells: pd.DataFrame) -> list[tuple[str, ...]]:
    """Each cell as one invocation measured it: the same directory read twice, a job directory and its sweep, a
    copy, all hold the same (run_id, invocation_id, started_at)."""
    return [tuple(map(str, key)) for key in zip(cells["run_id"], cells["invocation_id"], cells["started_at"])]


def _from(table: pd.DataFrame, root: Path, repeated: set[Any]) -> pd.DataFrame:
    """`table`'s rows less those of cells already read from an earlier directory, marked with their source."""
    kept = table[~table["run_id"].isin(repeated)] if repeated and "run_id" in table else table
    return kept.assign(source_dir=str(root))


def _shape_key(dims: Any) -> tuple[int, tuple[int, ...]]:
    """A shape's sort key: its numbers compared in turn; a cell without one after every shape."""
    return (1, ()) if dims is None or (isinstance(dims, float) and dims != dims) else (0, tuple(int(d) for d in dims))


def by_shape(cells: pd.DataFrame) -> pd.DataFrame:
    """`cells` ordered by `shape_dims`, number by number, keeping their order within a shape."""
    if "shape_dims" not in cells or cells.empty:
        return cells
    order = sorted(range(len(cells)), key=lambda i: _shape_key(cells["shape_dims"].iloc[i]))
    return cells.iloc[order].reset_index(drop=True)
