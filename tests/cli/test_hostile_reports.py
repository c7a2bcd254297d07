"""Hostile inputs to `neuronexp-report` and `neuronexp-compare` (issue 10): one line and exit 2 for what cannot be
read, never a traceback or a report of something else; what a killed sweep left out is said, not hidden."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pytest

from helpers import FAST, run_cli, small_sweep
from helpers.hostile import write_hostile_layers
from neuronexp.analysis.noise import NOISY_MARK
from neuronexp.results.files import read_arrow, write_arrow, write_table


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> Path:
    return small_sweep(tmp_path_factory.mktemp("hostile_reports"), "[1,8,64]")


@pytest.fixture(scope="module")
def failed_sweep(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("failed_sweep")
    write_hostile_layers(root)
    out = root / "sweep"
    quick = [a for a in FAST if not a.startswith("input.shape")]
    res = run_cli(["-m", "module._target_=hostile.RaisesMarkup", "input.shape=[1,8],[1,16]", *quick,
                   f"hydra.sweep.dir={out}"], cwd=root)
    assert res.returncode == 1, res.stderr
    return out


def _copy(sweep: Path, dest: Path, aggregated: bool = False) -> Path:
    shutil.copytree(sweep, dest, ignore=shutil.ignore_patterns(".neuronexp.lock"))
    if not aggregated:
        shutil.rmtree(dest / "results")
    return dest


def _report(target: Path, *args: str):
    return run_cli([str(target), *args], cwd=target.parent, script="neuronexp-report")


def _one_line(stderr: str, prefix: str) -> str:
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith(prefix) and "Traceback" not in stderr, stderr
    return lines[0]


@pytest.mark.slow  # 6 s on the 2-core VM
def test_report_on_a_file_says_it_is_a_file(sweep: Path) -> None:
    res = _report(sweep / "0" / "cells.parquet")
    assert res.returncode == 2
    assert "cells.parquet: is a file, not a directory" in _one_line(res.stderr, "neuronexp-report: error: ")


@pytest.mark.parametrize("top", ["-1", "0", "x"])
def test_report_top_must_be_positive(sweep: Path, top: str) -> None:
    res = _report(sweep, "--top", top)
    assert res.returncode == 2 and f"argument --top: '{top}': must be an integer >= 1" in res.stderr
    assert "Traceback" not in res.stderr and not (sweep / "report.html").exists()


def test_report_of_a_job_table_with_no_row_is_one_line(sweep: Path, tmp_path: Path) -> None:
    damaged = _copy(sweep, tmp_path / "damaged")
    empty = read_arrow(damaged / "1" / "cells.arrow").slice(0, 0)
    write_arrow(damaged / "1" / "cells.arrow", empty)
    write_table(damaged / "1" / "cells.parquet", empty)
    res = _report(damaged)
    assert res.returncode == 2
    assert f"{damaged / '1' / 'cells.parquet'}: 0 rows where a job's table holds one" in _one_line(res.stderr, "neuronexp-report: error: ")
    assert not list(damaged.glob("report.*"))


@pytest.mark.parametrize(("text", "expected"), [
    ("baseline: [rmsnorm_naive\n", "config.yaml, line 2, column 1: not valid YAML"),
    ("- a list\n- not a config\n", "config.yaml: not a neuronexp config"),
])
def test_report_of_a_tampered_config_yaml_is_one_line(sweep: Path, tmp_path: Path, text: str, expected: str) -> None:
    tampered = _copy(sweep, tmp_path / "tampered", aggregated=True)
    (tampered / "0" / "config.yaml").write_text(text)
    res = _report(tampered)
    assert res.returncode == 2
    assert expected in _one_line(res.stderr, "neuronexp-report: error: ")
    assert not list(tampered.glob("report.*"))


def test_report_of_a_tampered_jobs_manifest_is_one_line(sweep: Path, tmp_path: Path) -> None:
    tampered = _copy(sweep, tmp_path / "tampered")
    (tampered / "jobs.json").write_text('{"dir": ')
    res = _report(tampered)
    assert res.returncode == 2 and "jobs.json: not the list of planned cells" in _one_line(res.stderr, "neuronexp-report: error: ")


@pytest.mark.parametrize("aggregated", [False, True])
def test_report_of_a_killed_sweep_names_the_cells_that_never_finished(sweep: Path, tmp_path: Path, aggregated: bool) -> None:
    killed = _copy(sweep, tmp_path / "killed", aggregated=aggregated)
    for name in ("cells.parquet", "cells.arrow"):  # job 1 was running when the sweep was killed
        (killed / "1" / name).unlink()
    res = _report(killed)
    assert res.returncode == 0, res.stderr
    said = "1 planned cell(s) not run, interrupted or never started (job 1)"
    assert said in " ".join(res.stdout.split())
    assert said in (killed / "report.md").read_text() and said in (killed / "report.html").read_text()


@pytest.mark.slow  # 5 s on the 2-core VM
def test_compare_with_every_cell_failed_on_both_sides_lists_the_failures(failed_sweep: Path, tmp_path: Path) -> None:
    res = run_cli([str(failed_sweep), str(failed_sweep)], cwd=tmp_path, script="neuronexp-compare")
    assert res.returncode == 2
    line = _one_line(res.stderr, "neuronexp-compare: error: no cell ran in both A and B; failed in both (2): ")
    assert "RaisesMarkup · [1,8] (A: FileNotFoundError: no weights at [/data/weights/layer0.bin]" in line
    assert "RaisesMarkup · [1,16]" in line and not res.stdout.strip()


def test_compare_piped_at_80_columns_keeps_the_cell_names(sweep: Path, tmp_path: Path) -> None:
    res = run_cli([str(sweep), str(sweep)], cwd=tmp_path, script="neuronexp-compare", env={"COLUMNS": "80"})
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert max(len(ln) for ln in lines) <= 80
    header = next(ln for ln in lines if ln.lstrip().startswith("cell"))
    assert all(h in header for h in ("median", "95% CI", "verdict"))
    rows = [ln for ln in lines if "no change" in ln and "µs" in ln]
    # A cell measured while the machine was busy is marked "~" before its name (analysis.noise).
    assert len(rows) == 2 and all(ln.split()[0].lstrip(NOISY_MARK).startswith("rmsnorm_") for ln in rows), res.stdout
    # The figures are whole: each row's interval is printed in full on its line.
    assert all(ln.count("–") == 1 for ln in rows)
