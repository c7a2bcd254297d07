"""What a running sweep shows: the estimate of the time left, the running cells' phases read from their job
directories (as another process writes them), log lines cut to the terminal; and the phases a real cell writes."""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

import pytest

from helpers import FAST, run_cli, run_dirs
from neuronexp.engine.planned import PlannedCell
from neuronexp.engine.progress import SweepProgress, eta_text, fit
from neuronexp.results.files import PHASE_FILE, read_phase, write_phase


def _cells(n: int) -> list[PlannedCell]:
    return [
        PlannedCell(
            num=i,
            dir=str(i),
            overrides=[f"module=m{i}"],
            run_id=f"run{i}",
            backend="cpu",
            label=f"module=m{i} input.shape=[1,{i}]",
        )
        for i in range(n)
    ]


def test_estimate_from_the_pace_so_far() -> None:
    assert eta_text(30.0, 0, 4) == "eta —"  # nothing finished yet: no pace to go by
    assert eta_text(30.0, 3, 6) == "eta 1:00"  # 10 s a cell, 6 cells left
    assert eta_text(7200.0, 1, 1) == "eta 2:00:00"
    assert eta_text(5.0, 2, 0) == "eta 0:00"
    assert fit("abcdef", 4) == "abc…" and fit("abc", 4) == "abc"


def test_phases_of_running_cells_are_read_from_their_job_directories(tmp_path: Path) -> None:
    cells = _cells(3)
    for c in cells:
        (tmp_path / c.dir).mkdir()
    write_phase(tmp_path / "2", "timing")  # an earlier run's leftover: not this run's phase
    old = time.time() - 60
    os.utime(tmp_path / "2" / PHASE_FILE, (old, old))
    progress = SweepProgress(tmp_path, cells, reused=set())
    assert progress.running_phases() == []
    write_phase(tmp_path / "0", "compile")  # as a cell's own process writes it (atomic replace)
    write_phase(tmp_path / "1", "build")
    assert [(c.dir, p) for c, p in progress.running_phases()] == [("0", "compile"), ("1", "build")]
    write_phase(tmp_path / "1", "profiling")
    progress._report(cells[1], {"status": "ok", "latency_median_us": 12.0}, where=False)  # cell 1 finished
    assert [(c.dir, p) for c, p in progress.running_phases()] == [("0", "compile")]
    write_phase(tmp_path / "2", "timing")  # rewritten now: cell 2 runs too
    assert [(c.dir, p) for c, p in progress.running_phases()] == [("0", "compile"), ("2", "timing")]
    assert read_phase(tmp_path / "nowhere") is None


def test_a_finished_cells_line_has_the_outcome_and_estimate_and_fits_the_terminal(
    tmp_path: Path, caplog, monkeypatch
) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    cells = _cells(4)
    cells[0].label = "module=a_very_long_module_name_that_cannot_fit input.shape=[1,2048,4096]"
    progress = SweepProgress(tmp_path, cells, reused={"run3"})  # one reused: 1 of 4 done at the start
    with caplog.at_level(logging.INFO, logger="neuronexp.engine"):
        progress._report(cells[0], {"status": "ok", "latency_median_us": 2410.0})
        progress._report(cells[1], {"status": "error", "error": "RuntimeError: boom"})
    first, second = (r.getMessage() for r in caplog.records)
    assert first.startswith("cell 2/4 ok 2.41 ms · eta 0:00 · module=a_very_long") and first.endswith("…")
    assert len(first) == 100 - 11  # the terminal's width less the log prefix "[hh:mm:ss] "
    assert second.startswith("cell 3/4 error · ") and second.endswith("module=m1 input.shape=[1,1]: RuntimeError: boom")


def test_a_finished_cells_line_says_how_long_its_group_sampled_to_a_precision(tmp_path: Path, caplog) -> None:
    cells = _cells(3)
    progress = SweepProgress(tmp_path, cells, reused=set())
    met = {"status": "ok", "latency_median_us": 12.0, "timing_stop": "precision", "precision_reached": 0.0412}
    spent = {**met, "timing_stop": "max_seconds", "precision_reached": 0.083, "latency_rounds": 134}
    fixed = {"status": "ok", "latency_median_us": 12.0, "timing_stop": "count", "latency_rounds": 20}
    with caplog.at_level(logging.INFO, logger="neuronexp.engine"):
        for cell, row in zip(cells, ({**met, "latency_rounds": 12}, spent, fixed)):
            progress._report(cell, row)
    lines = [r.getMessage() for r in caplog.records]
    assert lines[0].startswith("cell 1/3 ok 12 µs · ±4.1% in 12 rounds · eta ")
    assert lines[1].startswith("cell 2/3 ok 12 µs · ±8.3% in 134 rounds (max_seconds) · eta ")
    assert lines[2].startswith("cell 3/3 ok 12 µs · eta ")  # a fixed count: nothing to say


@pytest.mark.slow  # 5 s on the 2-core VM
def test_a_cell_records_its_phases_in_its_job_directory(tmp_path: Path) -> None:
    result = run_cli(["module=rmsnorm_fused", *FAST], cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    (job,) = run_dirs(tmp_path)
    assert read_phase(job) == "limits"  # the last phase; build, first call, timing and profiling came before it
    assert ".phase" not in result.stdout  # a bookkeeping file, not listed with the results


@pytest.mark.slow
def test_a_sweep_log_line_per_cell_with_the_estimate(tmp_path: Path) -> None:
    args = ["-m", "module=rmsnorm_naive,rmsnorm_fused", *FAST, f"hydra.sweep.dir={tmp_path / 'sweep'}"]
    result = run_cli(args, cwd=tmp_path, env={"COLUMNS": "100"})
    assert result.returncode == 0, result.stderr[-2000:]
    lines = [ln for ln in (result.stdout + result.stderr).splitlines() if "] cell " in ln]
    assert len(lines) == 2 and all(len(ln) <= 100 for ln in lines), lines
    assert "cell 1/2 ok " in lines[0] and " eta " in lines[0] and "cell 2/2 ok " in lines[1] and "eta 0:00" in lines[1]


def test_the_bar_is_left_out_in_a_notebook_without_ipywidgets_and_under_quiet(monkeypatch) -> None:
    """rich draws a notebook's live bar with ipywidgets and, without them, warns and draws nothing; `neuronexp -q` (the
    neuronexp log above INFO) leaves the progress out, the bar with its lines."""
    import importlib.util
    import logging

    from rich.console import Console

    from neuronexp.engine.progress import bar_shown

    terminal, notebook = Console(force_terminal=True), Console(force_jupyter=True)
    assert bar_shown(terminal)
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "ipywidgets" else real(name, *a))
    assert not bar_shown(notebook)
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: object() if name == "ipywidgets" else real(name, *a)
    )
    assert bar_shown(notebook)
    ours = logging.getLogger("neuronexp")
    monkeypatch.setattr(ours, "level", logging.WARNING)
    assert not bar_shown(terminal)
    monkeypatch.setattr(ours, "level", logging.DEBUG)
    assert bar_shown(terminal)
