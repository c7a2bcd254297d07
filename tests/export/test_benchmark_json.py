"""`neuronexp-export DIR --pytorch-benchmark FILE` on a real run of the main study: the records have the shape that
PyTorch's own benchmark scripts write, one per cell and metric, with the labels and overrides in extra_info."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

import neuronexp
from helpers import run_cli
from neuronexp.analysis.variants import cell_labels
from neuronexp.export.cells import METRICS

# The record as pytorch/pytorch benchmarks/gpt_fast/benchmark.py `output_json` writes it (values elided): the one
# PyTorch script that fills every field the format names, `model.backend` among them. metric.extra_info is the format's
# own field for more about a metric (the PyTorch OSS benchmark database wiki; vLLM's benchmarks write it): neuronexp
# puts the unit there. benchmark.extra_info.arch: the hardware, as PyTorch's scripts name it (get_arch_name).
REFERENCE = {
    "benchmark": {"name": str, "mode": str, "dtype": str, "extra_info": dict},
    "model": {"name": str, "type": str, "backend": str, "origins": list},
    "metric": {"name": str, "benchmark_values": list, "target_value": (float, type(None))},
}
EXTRA = {"metric": {"extra_info"}}


def _records(study: Path, tmp_path: Path) -> list[dict]:
    out = tmp_path / "bench.json"
    res = run_cli([str(study), "--pytorch-benchmark", str(out)], cwd=tmp_path, script="neuronexp-export")
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("pytorch benchmark: ")
    return json.loads(out.read_text())


@pytest.mark.slow  # the main study, compiles included (session fixture)
def test_every_record_has_the_fields_pytorch_benchmarks_write(study: Path, tmp_path: Path) -> None:
    records = _records(study, tmp_path)
    assert records
    for rec in records:
        assert set(rec) == set(REFERENCE)
        for part, fields in REFERENCE.items():
            assert set(rec[part]) == set(fields) | EXTRA.get(part, set()), (part, rec[part])
            for name, kind in fields.items():
                assert isinstance(rec[part][name], kind), (part, name, rec[part][name])
        assert rec["benchmark"]["mode"] == "inference" and rec["model"]["origins"] == ["neuronexp"]
        values = rec["metric"]["benchmark_values"]
        assert len(values) == 1 and isinstance(values[0], float) and math.isfinite(values[0])
        assert rec["metric"]["extra_info"]["unit"]
        assert rec["benchmark"]["extra_info"]["arch"] == rec["benchmark"]["extra_info"]["device_name"] != ""
    # How each cell ran: eager, or under the compile backend its row records (inductor here: the study's compiled cell).
    by_cell = {r["model"]["name"]: r["model"]["backend"] for r in records}
    cells = neuronexp.load(study).cells
    compiled = dict(zip(cell_labels(cells), cells["compiled"]))
    assert sorted(set(by_cell.values())) == ["eager", "inductor"]
    assert all((backend == "inductor") == compiled[name] for name, backend in by_cell.items())
    assert (
        set(cells["compile_backend"].dropna()) == {"inductor"}
        and cells.loc[~cells["compiled"], "compile_backend"].isna().all()
    )


@pytest.mark.slow
def test_one_record_per_cell_and_metric_with_labels_and_overrides(study: Path, tmp_path: Path) -> None:
    records = _records(study, tmp_path)
    cells = neuronexp.load(study).cells
    shape = "input_shape"
    expected = sum(int(pd.notna(row.get(col))) for _, row in cells.iterrows() for col, _ in METRICS if col in cells)
    assert len(records) == expected
    # Cell × metric is unique: model name, metric, dtype and device tell every record apart.
    keys = [
        (r["model"]["name"], r["metric"]["name"], r["benchmark"]["dtype"], r["benchmark"]["extra_info"]["device"])
        for r in records
    ]
    assert len(set(keys)) == len(keys)
    names = dict(zip(cells["run_id"], cell_labels(cells)))  # as the terminal names the cells
    assert {r["model"]["name"] for r in records} == set(names.values())
    median = {r["model"]["name"]: r for r in records if r["metric"]["name"] == "latency_median_us"}
    row = cells[cells["module"] == "rmsnorm_fused"].iloc[0]
    rec = median[names[row["run_id"]]]
    assert rec["metric"]["benchmark_values"] == [pytest.approx(row["latency_median_us"])]
    assert rec["benchmark"]["dtype"] == row["dtype"]
    info = rec["benchmark"]["extra_info"]
    assert info["module"] == "rmsnorm_fused" and info["input_shape"] == row[shape] and info["run_id"] == row["run_id"]
    assert info["override.module"] == "rmsnorm_fused" and info["override.input.shape"] == row[shape]
    assert info["override.timing.iters"] == "5" and info["status"] == "ok" and info["noisy"] in ("true", "false")
    speedups = {r["model"]["name"] for r in records if r["metric"]["name"] == "speedup_vs_baseline"}
    assert len(speedups) == len(cells)  # the study has a baseline: every cell has its speedup


def test_a_directory_without_results_is_one_line_and_exit_2(tmp_path: Path) -> None:
    out = tmp_path / "b.json"
    res = run_cli([str(tmp_path), "--pytorch-benchmark", str(out)], cwd=tmp_path, script="neuronexp-export")
    assert res.returncode == 2 and res.stderr.startswith("neuronexp-export: error: ") and res.stderr.count("\n") == 1
    assert "no results here" in res.stderr and not out.exists()


@pytest.mark.slow
def test_an_unwritable_file_is_one_line_and_exit_2(study: Path, tmp_path: Path) -> None:
    res = run_cli(
        [str(study), "--pytorch-benchmark", str(tmp_path / "no" / "b.json")], cwd=tmp_path, script="neuronexp-export"
    )
    assert res.returncode == 2 and res.stderr.startswith("neuronexp-export: error: ") and res.stderr.count("\n") == 1
