"""The files an MLflow export uploads: listed and checked before anything is logged (a link anywhere is refused in one
line), then each copied through results.regular's open (no link followed) and the copy uploaded, so the bytes logged
are the results file's own, whatever is swapped in after the check."""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from neuronexp.export.cells import ExportError
from neuronexp.results import Found, LinkRefused, open_regular

# A job directory's tables and the files that say how it was measured; traces are optional (--no-traces).
TABLE_FILES = (
    "cells.parquet",
    "ops.parquet",
    "samples.parquet",
    "modules.parquet",
    "config.yaml",
    "env.json",
    "cell.json",
    "error.log",
)
SWEEP_FILES = ("summary.md", "cells.parquet", "ops.parquet", "samples.parquet")


@dataclass(frozen=True)
class Artifact:
    path: Path
    folder: str  # the artifact path in the run: "tables", "traces" or "results"


def _there(path: Path) -> bool:
    """A file to upload (a link too, so that it is refused rather than skipped)."""
    return path.is_file() or path.is_symlink()


def _listed(directory: Path, names: tuple[str, ...], folder: str) -> list[Artifact]:
    return [Artifact(directory / n, folder) for n in names if _there(directory / n)]


def _linked(path: Path, root: Path) -> Path | None:
    """The first link on the way from `root` to `path` (`path` included), or None."""
    try:
        parts = path.relative_to(root).parts
    except ValueError:
        root, parts = path.parent, (path.name,)
    ways = (root.joinpath(*parts[:i]) for i in range(1, len(parts) + 1))
    return next((way for way in ways if way.is_symlink()), None)


def artifact_plan(found: Found, root: Path, traces: bool) -> dict[str | None, list[Artifact]]:
    """What each run gets, by the cell's run_id (None: the sweep's parent run).

    Raises:
        ExportError: a file to upload, or a directory on the way to it, is a symbolic link (named).
    """
    plan: dict[str | None, list[Artifact]] = {}
    if found.kind == "sweep":
        plan[None] = _listed(root / "results", SWEEP_FILES, "results")
    for run_id, job_dir in found.job_dir_of.items():
        plan[run_id] = _listed(job_dir, TABLE_FILES, "tables")
        if traces:
            plan[run_id] += [Artifact(p, "traces") for p in sorted(job_dir.glob("trace*.json")) if _there(p)]
    for artifact in (a for files in plan.values() for a in files):
        link = _linked(artifact.path, root)
        if link is not None:
            raise ExportError(f"--mlflow: {LinkRefused(link)}")
    return plan


def log_files(client: Any, run_id: str, files: list[Artifact], root: Path) -> None:
    """Upload `files` to the run, each from a copy read without following a link (results.regular)."""
    with tempfile.TemporaryDirectory(prefix="neuronexp-export-") as staging:
        for artifact in files:
            copy = Path(staging) / artifact.folder / artifact.path.name
            copy.parent.mkdir(exist_ok=True)
            with open_regular(artifact.path, root) as src, open(copy, "xb") as dst:
                shutil.copyfileobj(src, dst)
            client.log_artifact(run_id, str(copy), artifact_path=artifact.folder)
