"""Where people look: the sweep table's cell, the findings and the roofline figures, from rows with known values."""

from __future__ import annotations

import numpy as np
import pandas as pd

from neuronexp.report.cell_text import OUTPUT_FLAG, cell_lines
from neuronexp.report.findings import findings
from neuronexp.report.roofplots import bandwidth_plot, roofline_plot
from neuronexp.results import frame


def _cell(run_id: str, module: str, latency: float, **extra) -> dict:
    base = {
        "run_id": run_id,
        "experiment": "e",
        "module": module,
        "compiled": False,
        "backend": "cpu",
        "device": "cpu",
        "device_name": "cpu",
        "dtype": "bfloat16",
        "input_shape": "[1,64,512]",
        "numel": 32768,
        "overrides": f"module={module}",
        "status": "ok",
        "latency_median_us": latency,
        "latency_p10_us": latency,
        "latency_p90_us": latency,
        "device_time_us": latency,
        "device_ops": 1.0,
        "device_time_source": "cpu_self_time",
        "top_op": None,
        "top_op_share": np.nan,
        "speedup_vs_baseline": np.nan,
        "baseline_run_id": "ref",
        "bytes_min": 66560,
        "flops": 0.0,
        "intensity": 0.0,
        "achieved_gbs": 66560 / latency / 1e3,
        "pct_peak_bw": 41.2,
        "peak_bw_gbs": 33.1,
        "peak_tflops": 0.44,
        "bound": "memory",
        "output_check": "pass",
        "output_match": True,
        "max_rel_err": 0.004,
    }
    return {**base, **extra}


def _samples(cells: pd.DataFrame) -> pd.DataFrame:
    rows = [
        {"run_id": r, "sample": i, "latency_us": lat * (1 + 0.001 * i)}
        for r, lat in zip(cells["run_id"], cells["latency_median_us"])
        for i in range(20)
    ]
    return frame("samples", rows)


def test_the_table_cell_shows_the_share_of_the_roof_and_a_failed_check() -> None:
    good = _cell("a", "fused", 10.0)
    bad = _cell("b", "wrong", 5.0, output_check="FAIL", output_match=False, max_rel_err=0.5, pct_peak_bw=82.0)
    compute = _cell("c", "mlp", 5.0, bound="compute", pct_peak_flops=12.4)
    assert "41% BW" in cell_lines(good) and OUTPUT_FLAG not in " ".join(cell_lines(good))
    assert "82% BW · " + OUTPUT_FLAG in cell_lines(bad)
    assert "12% FLOP/s" in cell_lines(compute)


def test_a_fastest_variant_whose_output_differs_is_never_named_without_its_flag() -> None:
    cells = frame(
        "cells",
        [
            _cell("ref", "naive", 100.0, output_check="baseline", output_match=None),
            _cell("f", "fused", 50.0),
            _cell("w", "wrong", 10.0, output_check="FAIL", output_match=False, max_rel_err=0.5),
        ],
    )
    (line,) = findings(cells, _samples(cells), {})
    assert line.startswith("[1,64,512]: wrong fastest")
    assert "✗ output differs from the baseline's beyond tolerance: wrong (max rel err 0.5)" in line
    ok = cells[cells["run_id"] != "w"]
    (clean,) = findings(ok, _samples(ok), {})
    assert "fused fastest" in clean and "✗" not in clean


def test_roofline_figures_place_counted_work_and_skip_what_has_none() -> None:
    elementwise = frame("cells", [_cell("a", "naive", 10.0), _cell("b", "fused", 5.0)])
    elementwise["variant"] = elementwise["module"]
    assert roofline_plot(elementwise) is None  # no counted FLOPs: no point to place
    assert bandwidth_plot(elementwise).startswith("<svg")
    mlp = frame("cells", [_cell("m", "mlp", 100.0, flops=3.1e6, intensity=46.6, achieved_tflops=0.031, bound="memory")])
    mlp["variant"] = mlp["module"]
    assert roofline_plot(mlp).startswith("<svg")
    assert bandwidth_plot(mlp.assign(achieved_gbs=np.nan)) is None
