"""Swept constructor arguments are columns of their own (tidy data), typed, named by their last part unless that
is ambiguous: from the override text, in a real cell's row, and through aggregation of cells typed apart."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from neuronexp.analysis.overrides import argument_columns
from neuronexp.results import SCHEMAS, arrow_table
from neuronexp.results.files import write_job_tables
from neuronexp.results.read import read_jobs

TAKEN = frozenset(SCHEMAS["cells"].names)


def test_each_module_argument_is_a_typed_column_named_by_its_last_part() -> None:
    cols = argument_columns(
        "input.shape=[1,8,64],module.expansion=4,module.config.act=silu,module=mlp,module.scale=0.5,module.bias=false",
        TAKEN,
    )
    assert cols == {"expansion": 4, "act": "silu", "scale": 0.5, "bias": False}
    assert argument_columns("module=mlp,input.dtype=float32", TAKEN) == {}
    assert argument_columns("module._target_=x.Y,~module.eps,+module.width=8", TAKEN) == {"width": 8}


def test_an_ambiguous_or_taken_name_is_kept_as_typed() -> None:
    cols = argument_columns("module.a.size=1,module.b.size=2,module.dtype=x,module.hidden=3", TAKEN)
    assert cols == {"module.a.size": 1, "module.b.size": 2, "module.dtype": "x", "hidden": 3}


def _job(root: Path, name: str, value) -> Path:
    job = root / name
    job.mkdir()
    row = {"run_id": name, "status": "ok", "overrides": f"module.scale={value}", "scale": value}
    write_job_tables(
        job,
        {"cells": arrow_table("cells", [row]), "ops": arrow_table("ops", []), "samples": arrow_table("samples", [])},
    )
    return job


def test_cells_typed_apart_still_aggregate(tmp_path: Path) -> None:
    tables, _ = read_jobs([_job(tmp_path, "0", 1), _job(tmp_path, "1", 0.5)])
    assert tables["cells"].column("scale").to_pylist() == [1.0, 0.5]
    assert pa.types.is_floating(tables["cells"].schema.field("scale").type)
    tables, _ = read_jobs([_job(tmp_path, "2", 4), _job(tmp_path, "3", "wide")])
    assert tables["cells"].column("scale").to_pylist() == ["4", "wide"]
