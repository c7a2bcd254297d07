"""An interrupted sweep is told as interrupted, not failed: planned cells without a row are "not run" in the
terminal's last line and in summary.md, which stays whole when no cell finished; the results path is printed
unwrapped, to be pasted back."""

from __future__ import annotations

import io
from pathlib import Path
from types import SimpleNamespace

from rich.console import Console

from neuronexp.report.summary import summary_markdown
from neuronexp.report.tables import summary_table
from neuronexp.report.terminal import print_sweep
from neuronexp.results import frame

LONG = Path("/tmp/" + "a-rather-long-directory-name/" * 4 + "sweeps/2026-12-01_21-30-00")


def _ok_cell() -> dict:
    return dict(
        run_id="r0",
        experiment="rmsnorm_sweep",
        module="rmsnorm_naive",
        compiled=False,
        backend="cpu",
        device="cpu",
        device_name="cpu",
        dtype="float32",
        input_shape="[1,8]",
        numel=8,
        status="ok",
        latency_median_us=10.0,
        device_time_us=9.0,
        device_ops=6.0,
        device_time_source="cpu_self_time",
        timing_method="wallclock",
        torch_version="2.13.0",
        overrides="module=rmsnorm_naive",
    )


def test_summary_of_a_sweep_interrupted_before_any_cell_is_whole() -> None:
    text = summary_markdown(frame("cells", []), ["0", "1", "2"], None, LONG)
    assert text.startswith("# Sweep summary: no cell finished\n")
    assert "Cells: 3 not run\n" in text and "?" not in text and ": ," not in text
    assert "## Cells not run" in text and f"`hydra.sweep.dir={LONG}`" in text
    assert "Failed" not in text and "failed" not in text


def test_summary_tells_failed_from_not_run() -> None:
    failed = dict(
        _ok_cell(),
        run_id="r1",
        module="rmsnorm_fused",
        status="error",
        error="RuntimeError: boom",
        latency_median_us=None,
        overrides="module=rmsnorm_fused",
    )
    text = summary_markdown(frame("cells", [_ok_cell(), failed]), ["2"], None, LONG)
    assert "Cells: 1 error, 1 ok, 1 not run" in text
    failed_part = text.split("## Failed cells", 1)[1].split("## Cells not run", 1)[0]
    assert "boom" in failed_part and "job 2" not in failed_part
    assert "- job 2" in text.split("## Cells not run", 1)[1]


def test_a_failed_cell_is_a_dash_in_every_figure_of_the_reports_cells_table() -> None:
    failed = dict(_ok_cell(), run_id="r1", module="rmsnorm_fused", status="error", latency_median_us=None)
    cells = frame("cells", [_ok_cell(), failed]).assign(variant=["naive", "fused"], input="[1,8]")
    table = summary_table(SimpleNamespace(cells=cells, baseline="naive"))
    (row,) = [r for r in table.rows if r[0] == "fused"]
    assert len(row) == len(table.headers) and table.headers[4] == "p10–p90" and row[2] == "error"
    assert row[3:-1] == ["—"] * (len(table.headers) - 4) and row[-1] == ""


def test_the_last_line_says_not_run_and_keeps_the_path_whole() -> None:
    out = io.StringIO()
    print_sweep(
        frame("cells", [_ok_cell()]),
        None,
        LONG,
        Console(file=out, width=80, highlight=False, color_system=None),
        not_run=4,
    )
    said, last = out.getvalue().rstrip("\n").splitlines()[-2:]
    assert said.startswith("4 not run · results (summary.md") and "failed" not in said
    assert last == str(LONG / "results")  # whole on its line, not folded at 80 columns
