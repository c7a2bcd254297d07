"""Where a resumed sweep's cells go (sweep.resume.assign), in-process (issue 32's mutation audit): a job directory
holding a user's files is never written into, the aggregated `results/` is never taken for a cell even when it
looks like one, and `sweep.rerun=all` reuses nothing while keeping each cell's directory."""

from __future__ import annotations

from pathlib import Path

from neuronexp.engine.planned import PlannedCell
from neuronexp.engine.rerun import assign
from neuronexp.results import arrow_table
from neuronexp.results.files import write_job_tables


def _complete(job: Path, run_id: str) -> None:
    job.mkdir(parents=True)
    write_job_tables(
        job,
        {
            "cells": arrow_table("cells", [{"run_id": run_id, "status": "ok"}]),
            "ops": arrow_table("ops", []),
            "samples": arrow_table("samples", []),
        },
    )


def _cell(num: int, run_id: str) -> PlannedCell:
    return PlannedCell(num=num, dir=str(num), overrides=[], run_id=run_id, backend="cpu", label=run_id)


def test_a_job_directory_holding_a_users_files_is_never_written_into(tmp_path: Path) -> None:
    (tmp_path / "0").mkdir()
    (tmp_path / "0" / "notes.txt").write_text("mine\n")  # no cell.json, no table: not a cell's directory
    (tmp_path / "1").mkdir()  # empty: free
    cells = [_cell(0, "aaaa"), _cell(1, "bbbb")]
    assert assign(cells, tmp_path) == set()
    assert cells[0].dir not in ("0", "1") and cells[1].dir == "1"
    assert sorted(p.name for p in (tmp_path / "0").iterdir()) == ["notes.txt"]


def test_the_aggregated_results_are_never_taken_for_a_cell(tmp_path: Path) -> None:
    # A one-cell sweep's results/ holds one row: with the Arrow copies a job has, it would pass for a complete cell
    # (its job directory removed), and the cell would be "reused" from, and written into, results/.
    _complete(tmp_path / "results", "aaaa")
    cells = [_cell(0, "aaaa")]
    assert assign(cells, tmp_path) == set() and cells[0].dir == "0"


def test_rerun_all_reuses_nothing_and_reruns_each_cell_where_it_sits(tmp_path: Path) -> None:
    _complete(tmp_path / "0", "bbbb")
    cells = [_cell(0, "aaaa"), _cell(1, "bbbb")]
    assert assign(cells, tmp_path, rerun_all=True) == set()
    assert cells[1].dir == "0" and cells[0].dir == "1"  # bbbb in its own directory; aaaa in the next free name
    assert assign([_cell(0, "aaaa"), _cell(1, "bbbb")], tmp_path) == {"bbbb"}  # without it, bbbb is reused


def test_a_taken_name_sends_the_cell_to_the_next_free_one_after_every_name_in_use(tmp_path: Path) -> None:
    (tmp_path / "0").mkdir()
    (tmp_path / "0" / "notes.txt").write_text("mine\n")
    (tmp_path / "3").write_text("a file, not a directory: not free either\n")
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "notes.txt").write_text("mine\n")
    (tmp_path / "x-2").mkdir()
    (tmp_path / "x-2" / "notes.txt").write_text("mine\n")
    (tmp_path / "y").mkdir()
    (tmp_path / "y" / "notes.txt").write_text("mine\n")
    cells = [_cell(0, "aaaa"), _cell(1, "bbbb"), _cell(3, "cccc"), _cell(9, "dddd"), _cell(8, "eeee")]
    cells[3].dir, cells[4].dir = "x", "y"  # named job directories (hydra.sweep.subdir of their overrides)
    assert assign(cells, tmp_path) == set()
    # The digits after the highest one in use or given (0 and 3 taken here, 1 given to bbbb); x-3 after x-2; y-2.
    assert [c.dir for c in cells] == ["4", "1", "5", "x-3", "y-2"]
    assert (tmp_path / "3").read_text().startswith("a file")


def test_a_cell_complete_in_two_directories_keeps_the_first(tmp_path: Path) -> None:
    _complete(tmp_path / "0", "aaaa")
    _complete(tmp_path / "5", "aaaa")  # a copy: the one in 0 is the cell's
    cells = [_cell(0, "bbbb"), _cell(1, "aaaa")]
    assert assign(cells, tmp_path) == {"aaaa"}
    assert [c.dir for c in cells] == ["6", "0"]  # bbbb's planned 0 is aaaa's: the name after 5


def test_a_complete_cell_is_found_wherever_it_sits_beside_the_aggregated_results(tmp_path: Path) -> None:
    _complete(tmp_path / "results", "aaaa")  # skipped, and the directories after it still looked at
    _complete(tmp_path / "x", "bbbb")
    cells = [_cell(0, "bbbb")]
    assert assign(cells, tmp_path) == {"bbbb"} and cells[0].dir == "x"
