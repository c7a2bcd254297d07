"""`neuronexp.load(pattern)` takes the matched directories in natural order (run2 before run10), as a person numbers
them, not in the plain order of their names (issue 32's mutation audit). Run directories written with the job
tables' own writer."""

from __future__ import annotations

from pathlib import Path

import neuronexp
from neuronexp.results import arrow_table
from neuronexp.results.files import write_job_tables


def _run(path: Path, run_id: str) -> None:
    path.mkdir(parents=True)
    write_job_tables(
        path,
        {
            "cells": arrow_table("cells", [{"run_id": run_id, "status": "ok"}]),
            "ops": arrow_table("ops", []),
            "samples": arrow_table("samples", []),
        },
    )


def test_a_glob_gives_its_directories_in_natural_order(tmp_path: Path) -> None:
    for n in (10, 2, 1):
        _run(tmp_path / f"run{n}", f"id{n}")
    cells = neuronexp.load(str(tmp_path / "run*")).cells
    assert list(cells["run_id"]) == ["id1", "id2", "id10"]
    assert [Path(p).name for p in cells["source_dir"]] == ["run1", "run2", "run10"]
