"""The shape label is `input_shape`: `shape` collided with DataFrame.shape, so `cells[cells.shape == "[1,8,64]"]`
compared a tuple with a string and silently matched nothing. Results written before the rename read back under
the new name."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

import neuronexp
from neuronexp.results import SCHEMAS, frame
from neuronexp.results.read import read_jobs


def test_the_label_is_a_column_attribute_access_can_reach() -> None:
    cells = frame(
        "cells",
        [dict(run_id="a", input_shape="[1,8,64]", status="ok"), dict(run_id="b", input_shape="[1,16,64]", status="ok")],
    )
    assert "shape" not in SCHEMAS["cells"].names and "input_shape" in SCHEMAS["ops"].names
    assert cells[cells.input_shape == "[1,8,64]"]["run_id"].tolist() == ["a"]


def test_results_written_with_the_old_name_read_back_as_input_shape(tmp_path: Path) -> None:
    job = tmp_path / "0"
    job.mkdir()
    old = frame("cells", [dict(run_id="a", input_shape="[1,8,64]", status="ok")]).rename(
        columns={"input_shape": "shape"}
    )
    old.to_parquet(job / "cells.parquet")
    frame("ops", []).rename(columns={"input_shape": "shape"}).to_parquet(job / "ops.parquet")
    frame("samples", []).to_parquet(job / "samples.parquet")
    cells = neuronexp.load(job).cells
    assert cells["input_shape"].tolist() == ["[1,8,64]"] and "shape" not in cells.columns
    tables, _ = read_jobs([job])
    assert tables["cells"].column("input_shape").to_pylist() == ["[1,8,64]"]
    assert isinstance(cells, pd.DataFrame)


def test_results_written_before_a_column_was_added_read_back_with_it_null(tmp_path: Path) -> None:
    """Cells columns added on 7 December 2026 (output_nonfinite, compile_backend, and issue 47's timing_stop and
    precision columns): a file written without them reads back with them null (missing, not zero), not refused as
    another layout."""
    added = [
        "output_nonfinite",
        "compile_backend",
        "timing_stop",
        "precision_target",
        "precision_reached",
        "precision_met",
    ]
    job = tmp_path / "0"
    job.mkdir()
    rows = {"cells": [dict(run_id="a", input_shape="[1,8,64]", status="ok")], "ops": [], "samples": []}
    for name, table_rows in rows.items():
        old = frame(name, table_rows)
        old.drop(columns=added if name == "cells" else []).to_parquet(job / f"{name}.parquet")
    cells = neuronexp.load(job).cells
    assert cells["run_id"].tolist() == ["a"] and cells[added].isna().all().all()
