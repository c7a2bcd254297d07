"""What an analyst gets from neuronexp.load: shape dimensions as integers, counts as integers where whole, and
CSV copies that write a list the way the command line does."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow as pa

import neuronexp
from neuronexp.results import frame
from neuronexp.results.contract import whole_counts
from neuronexp.results.files import write_csv


def test_counts_are_integers_where_whole_and_floats_otherwise() -> None:
    ops = frame("ops", [dict(run_id="a", op="aten::mul", calls=3.0), dict(run_id="a", op="aten::add", calls=None)])
    assert str(ops["calls"].dtype) == "float64"  # on disk: a per-step count may be fractional
    loaded = whole_counts(ops)
    assert str(loaded["calls"].dtype) == "Int64" and loaded["calls"].iloc[0] == 3 and loaded["calls"].isna().iloc[1]
    uneven = whole_counts(frame("ops", [dict(run_id="a", op="aten::mul", calls=1.5)]))
    assert str(uneven["calls"].dtype) == "float64" and uneven["calls"].iloc[0] == 1.5


def test_load_gives_shape_dims_and_integer_counts(tmp_path: Path) -> None:
    cells = frame(
        "cells", [dict(run_id="a", input_shape="[1,128,1024]", shape_dims=[1, 128, 1024], device_ops=6.0, status="ok")]
    )
    ops = frame("ops", [dict(run_id="a", shape_dims=[1, 128, 1024], op="aten::mul", calls=3.0)])
    for name, table in (("cells", cells), ("ops", ops), ("samples", frame("samples", []))):
        table.to_parquet(tmp_path / f"{name}.parquet")
    loaded = neuronexp.load(tmp_path)
    assert list(loaded.cells["shape_dims"].iloc[0]) == [1, 128, 1024]
    assert loaded.cells["shape_dims"].map(lambda d: d[1] >= 128).all()  # filter by sequence length, no parsing
    assert str(loaded.cells["device_ops"].dtype) == "Int64" and str(loaded.ops["calls"].dtype) == "Int64"


def test_csv_copies_write_lists_as_the_command_line_does(tmp_path: Path) -> None:
    table = pa.table({"shape_dims": pa.array([[1, 128, 1024], None], type=pa.list_(pa.int64())), "calls": [3.0, 1.5]})
    write_csv(tmp_path / "t.csv", table)
    back = pd.read_csv(tmp_path / "t.csv")
    assert list(back["shape_dims"].fillna("")) == ["[1,128,1024]", ""] and list(back["calls"]) == [3.0, 1.5]
    assert (tmp_path / "t.csv").read_text().splitlines()[1] == '"[1,128,1024]",3'
