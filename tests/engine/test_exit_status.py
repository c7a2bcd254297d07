"""A sweep's outcome reaches its exit status: any error row makes it Stopped(1) (the command's exit code 1),
after `results/` is written; every cell ok ends normally. The sweep driver runs for real on a real directory; the
launcher is a stand-in that writes each job's row as a cell process would."""

from __future__ import annotations

from pathlib import Path

import neuronexp
from helpers.row_writer import RowWriter
from neuronexp.engine.context import Outcome
from neuronexp.engine.grouping import Unit
from neuronexp.engine.launched import HydraLauncher
from neuronexp.engine.planned import PlannedCell
from neuronexp.engine.planned_invocation import Invocation
from neuronexp.engine.sweeper import _run
from neuronexp.engine.user_callbacks import UserCallbacks


def _sweep(tmp_path: Path, fail: set[str]) -> Outcome:
    sweep_dir = tmp_path / "sweep"
    cells = [
        PlannedCell(num=i, dir=str(i), overrides=[f"module={m}"], run_id=f"run{i}", backend="cpu", label=m)
        for i, m in enumerate(("naive", "fused"))
    ]
    writer = RowWriter(sweep_dir, cells, fail)
    with HydraLauncher(lambda: writer) as executor:
        units = tuple(Unit((c,)) for c in cells)
        return _run(Invocation("sweep", sweep_dir, tuple(cells), units, (), None, executor), UserCallbacks(None))


def test_a_sweep_with_an_error_row_stops_with_exit_status_1_after_writing_results(tmp_path: Path) -> None:
    stopped = _sweep(tmp_path, fail={"run1"}).stopped
    assert stopped is not None and stopped.code == 1
    cells = neuronexp.load(tmp_path / "sweep").cells
    assert sorted(cells["status"]) == ["error", "ok"]
    assert (tmp_path / "sweep" / "results" / "summary.md").is_file()


def test_a_sweep_whose_cells_all_ran_ends_normally(tmp_path: Path) -> None:
    assert _sweep(tmp_path, fail=set()).stopped is None
    assert sorted(neuronexp.load(tmp_path / "sweep").cells["status"]) == ["ok", "ok"]


def test_each_exit_status_has_one_meaning_and_the_docs_say_it() -> None:
    """engine.stopped's codes are distinct, and docs/guarantees.md's table gives each one row (with compare's)."""
    import re

    from helpers import REPO
    from neuronexp.compare.render import REGRESSION_EXIT, UNDECIDED_EXIT
    from neuronexp.engine import stopped

    codes = [stopped.CELL_FAILED, stopped.MISTAKE, stopped.UNFINISHED, stopped.INTERRUPTED]
    assert len(set(codes)) == len(codes) and (stopped.CELL_FAILED, stopped.UNFINISHED) == (
        REGRESSION_EXIT,
        UNDECIDED_EXIT,
    )
    table = (REPO / "docs" / "guarantees.md").read_text().split("## Exit status", 1)[1].split("\n## ", 1)[0]
    rows = [int(m) for m in re.findall(r"^\| (\d+) \|", table, re.M)]
    assert rows == sorted(set(rows)) and set(codes) | {0, 141} == set(rows)
