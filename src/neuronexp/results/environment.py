"""The env.json records behind a table's cells (versions, host, its CPU settings), found from the directories the
cells were loaded from (`source_dir`): what compare reads to name how A's machine differs from B's. Each file is read
as data, a regular file reached without a link (results.regular)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from neuronexp.results.read import job_dirs_of
from neuronexp.results.regular import LinkRefused, read_regular
from neuronexp.results.table_file import DamagedResults

ENV_FILE = "env.json"


def job_environment(job_dir: Path) -> dict[str, Any] | None:
    """A job directory's env.json as data; None where there is none."""
    return _record(job_dir / ENV_FILE)


def _record(path: Path) -> dict[str, Any] | None:
    if not (path.is_file() or path.is_symlink()):
        return None  # a run from before env.json, or a cell that never started
    try:
        value = json.loads(read_regular(path))
    except (LinkRefused, ValueError) as exc:
        raise DamagedResults(f"{path}: not the environment record neuronexp writes ({exc})") from None
    if not isinstance(value, dict):
        raise DamagedResults(f"{path}: not the environment record neuronexp writes (a JSON object)")
    return value


def environments(cells: pd.DataFrame) -> list[dict[str, Any]]:
    """The env.json of every job the cells were loaded from: a run directory's own, a sweep's job directories'; []
    for tables that were not read from a directory (no `source_dir`)."""
    if "source_dir" not in cells:
        return []
    records = []
    for source in dict.fromkeys(cells["source_dir"].dropna().astype(str)):
        root = Path(source)
        dirs = [root] if (root / "cells.parquet").is_file() else job_dirs_of(root) if root.is_dir() else []
        records += [r for d in dirs if (r := _record(d / ENV_FILE)) is not None]
    return records
