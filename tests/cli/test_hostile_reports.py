"""Hostile inputs to `neuronexp-report` and `neuronexp-compare` (issue 10): one line and exit 2 for what cannot be
read, never a traceback or a report of something else; what a killed sweep left out is said, not hidden."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pytest

from helpers import FAST, run_cli, small_sweep, within
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
    res = run_cli(
        ["-m", "module._target_=hostile.RaisesMarkup", "input.shape=[1,8],[1,16]", *quick, f"hydra.sweep.dir={out}"],
        cwd=root,
    )
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
    assert f"{damaged / '1' / 'cells.parquet'}: 0 rows where a job's table holds one" in _one_line(
        res.stderr, "neuronexp-report: error: "
    )
    assert not list(damaged.glob("report.*"))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("baseline: [rmsnorm_naive\n", "config.yaml, line 2, column 1: not valid YAML"),
        ("- a list\n- not a config\n", "config.yaml: not a neuronexp config"),
    ],
)
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
    assert res.returncode == 2 and "jobs.json: not the list of planned cells" in _one_line(
        res.stderr, "neuronexp-report: error: "
    )


@pytest.mark.parametrize("aggregated", [False, True])
def test_report_of_a_killed_sweep_names_the_cells_that_never_finished(
    sweep: Path, tmp_path: Path, aggregated: bool
) -> None:
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
    # The same results on both sides: "no change", or "inconclusive" where the one-run noise floor is wide.
    rows = [ln for ln in lines if ("no change" in ln or "inconclusive" in ln) and "µs" in ln]
    # A cell measured while the machine was busy is marked "~" before its name (analysis.noise).
    assert len(rows) == 2 and all(ln.split()[0].lstrip(NOISY_MARK).startswith("rmsnorm_") for ln in rows), res.stdout
    # The figures are whole: each row's interval is printed in full on its line.
    assert all(ln.count("–") == 1 for ln in rows)


def _with_error(sweep: Path, dest: Path, error: str) -> Path:
    """A copy of `sweep` whose first cell failed with `error` (as a layer's exception text would read)."""
    import pyarrow.parquet as pq

    out = _copy(sweep, dest, aggregated=True)
    table = pq.read_table(out / "results" / "cells.parquet")
    cells = table.to_pandas()
    cells.loc[0, "status"], cells.loc[0, "error"] = "error", error
    write_table(
        out / "results" / "cells.parquet", pa.Table.from_pandas(cells, schema=table.schema, preserve_index=False)
    )
    return out


@pytest.mark.slow  # 5 s on the 2-core VM
def test_compare_markdown_escapes_error_text_as_report_and_summary_do(sweep: Path, tmp_path: Path) -> None:
    hostile = "<script>alert(1)</script> <img src=x onerror=alert(2)> | `x`\nsecond line"
    a, b = _with_error(sweep, tmp_path / "a", hostile), _with_error(sweep, tmp_path / "b", hostile)
    md = tmp_path / "cmp.md"
    res = run_cli([str(a), str(b), "--markdown", str(md)], cwd=tmp_path, script="neuronexp-compare")
    assert res.returncode == 0, res.stderr
    text = md.read_text()
    assert "alert(1)" in text, "the error is listed (failed in both)"
    assert "<script>" not in text and "<img" not in text and "&lt;script&gt;" in text
    assert "\\|" in text and "second line" not in text  # a pipe cannot split the line; one line of the error


def _foreign(path: Path) -> None:
    write_table(path, pa.table({"a": [1], "b": ["x"]}))


def _older(path: Path) -> None:  # the same table without a column this version writes
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    write_table(path, table.drop_columns([table.column_names[-1]]))


def _fifo(path: Path) -> None:
    import os

    path.unlink()
    os.mkfifo(path)


@pytest.mark.parametrize("table", ["cells", "ops"])
@pytest.mark.parametrize(
    ("damage", "expected"),
    [
        (_foreign, "table of this neuronexp's layout (no column run_id"),
        (_older, "table of this neuronexp's layout (no column "),
        (_fifo, "cannot be read as a table (not a regular file)"),
    ],
)
def test_report_and_compare_refuse_a_table_they_cannot_read_in_one_line(
    sweep: Path, tmp_path: Path, table: str, damage, expected: str
) -> None:
    damaged = _copy(sweep, tmp_path / "damaged", aggregated=True)
    damage(damaged / "results" / f"{table}.parquet")
    res = run_cli([str(damaged)], cwd=tmp_path, script="neuronexp-report", timeout=60)  # a FIFO must not hang it
    if damage is _fifo and table == "cells":  # no aggregated table there, so the job directories are read instead
        assert res.returncode == 0, res.stderr
        return
    assert res.returncode == 2
    assert f"results/{table}.parquet: " in _one_line(res.stderr, "neuronexp-report: error: ")
    assert expected in res.stderr and not list(damaged.glob("report.*"))
    res = run_cli([str(sweep), str(damaged)], cwd=tmp_path, script="neuronexp-compare", timeout=60)
    assert res.returncode == 2 and expected in _one_line(res.stderr, "neuronexp-compare: error: ")


def test_load_refuses_a_fifo_job_table_without_blocking(sweep: Path, tmp_path: Path) -> None:
    from neuronexp.results import DamagedResults, read_any

    damaged = _copy(sweep, tmp_path / "damaged")
    _fifo(damaged / "0" / "ops.arrow")
    with pytest.raises(DamagedResults, match="ops.arrow: cannot be read as a table"):
        within(30, lambda: read_any(damaged))


@pytest.mark.slow  # 5 s on the 2-core VM
def test_report_of_a_truncated_output_file_is_no_traceback(sweep: Path, tmp_path: Path) -> None:
    damaged = _copy(sweep, tmp_path / "damaged")
    npz = damaged / "1" / "output.npz"
    npz.write_bytes(npz.read_bytes()[:40])
    res = _report(damaged)
    assert res.returncode == 0 and "Traceback" not in res.stderr, res.stderr


def test_report_reads_config_yaml_as_data_never_resolving_it(sweep: Path, tmp_path: Path) -> None:
    planted = _copy(sweep, tmp_path / "planted", aggregated=True)
    for job in ("0", "1"):
        (planted / job / "config.yaml").write_text("baseline: ${oc.env:NEURONEXP_TEST_SECRET}\n")
    res = run_cli(
        [str(planted)], cwd=tmp_path, script="neuronexp-report", env={"NEURONEXP_TEST_SECRET": "hunter2-secret"}
    )
    assert "hunter2-secret" not in res.stdout + res.stderr
    for report in planted.glob("report.*"):
        assert "hunter2-secret" not in report.read_text()
