"""Resume matches a cell by its configuration (run_id), never by its place in the grid: reordered or grown
grids reuse each complete cell where it sits, and a directory of another configuration is never written to."""

from __future__ import annotations

from pathlib import Path

from neuronexp.engine.planned import PlannedCell
from neuronexp.engine.rerun import assign
from neuronexp.results import arrow_table
from neuronexp.results.files import write_job_tables


def _complete(job: Path, run_id: str, status: str = "ok") -> None:
    job.mkdir(parents=True)
    write_job_tables(
        job,
        {
            "cells": arrow_table("cells", [{"run_id": run_id, "status": status}]),
            "ops": arrow_table("ops", []),
            "samples": arrow_table("samples", []),
        },
    )


def _cell(num: int, run_id: str) -> PlannedCell:
    return PlannedCell(num=num, dir=str(num), overrides=[], run_id=run_id, backend="cpu", label=run_id)


def test_a_reordered_grid_reuses_each_cell_where_it_sits(tmp_path: Path) -> None:
    _complete(tmp_path / "0", "aaaa")
    _complete(tmp_path / "1", "bbbb")
    cells = [_cell(0, "bbbb"), _cell(1, "cccc"), _cell(2, "aaaa")]
    reused = assign(cells, tmp_path)
    assert reused == {"aaaa", "bbbb"}
    assert {c.run_id: c.dir for c in cells} == {"bbbb": "1", "aaaa": "0", "cccc": "2"}


def test_a_new_cell_never_lands_in_another_configurations_directory(tmp_path: Path) -> None:
    _complete(tmp_path / "0", "aaaa")
    _complete(tmp_path / "1", "bbbb", status="error")  # failed: rerun, but it is bbbb's directory
    cells = [_cell(0, "cccc"), _cell(1, "bbbb")]
    reused = assign(cells, tmp_path)
    assert reused == set()
    assert cells[1].dir == "1"  # its own failed directory, rerun in place
    assert cells[0].dir not in ("0", "1")
