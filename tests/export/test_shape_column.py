"""The exporters read the first input's shape from `input_shape` or, in results from before issue 23, `shape`."""

from __future__ import annotations

import pandas as pd

from neuronexp.export.benchmark import records
from neuronexp.export.cells import cell_exports, shape_column


def _cells(shape_col: str) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "run_id": ["a", "b"],
            "experiment": ["x", "x"],
            "module": ["m", "m"],
            "compiled": [False, True],
            "backend": ["cpu", "cpu"],
            "device": ["cpu", "cpu"],
            "dtype": ["float32", "float32"],
            shape_col: ["[1,8]", "[1,8]"],
            "overrides": ["module=m,input.shape=[1,8],timing.iters=5"] * 2,
            "status": ["ok", "error"],
            "noisy": [False, True],
            "latency_median_us": [3.0, float("nan")],
            "started_at": ["2026-12-01T10:00:00+00:00", "2026-12-01T10:00:01+00:00"],
        }
    )


def test_either_shape_column_gives_the_same_export() -> None:
    old, new = _cells("shape"), _cells("input_shape")
    assert (shape_column(old), shape_column(new)) == ("shape", "input_shape")
    assert cell_exports(old) == cell_exports(new)
    assert records(old) == records(new)
    first = cell_exports(new)[0]
    assert first.labels["input_shape"] == "[1,8]" and first.name == "m [1,8]"
    assert first.params["input.shape"] == "[1,8]" and first.params["timing.iters"] == "5"
    assert first.tags["neuronexp.noisy"] == "false"


def test_missing_figures_are_left_out_and_a_failed_cell_has_no_records() -> None:
    cells = _cells("shape")
    exports = cell_exports(cells)
    assert exports[1].metrics == {} and exports[1].name == "m +compile [1,8]"
    assert [r["model"]["name"] for r in records(cells)] == ["m [1,8]"]
