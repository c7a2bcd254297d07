"""The analyst's path of docs/export.md, run as written there (read from the doc): neuronexp.load with pandas, and the
same Parquet read by duckdb and polars, each answering "which variant is fastest for each shape?", shapes in order
of size. On the small real sweep (two shapes whose order as text is the reverse of their order by size)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pandas as pd

import neuronexp
from helpers import REPO
from helpers.optional import require

SECTION = "## The analyst's path"
BY_SIZE = ["[1,8,64]", "[1,16,64]"]  # as text, "[1,16,64]" sorts first


def _blocks() -> list[str]:
    text = (REPO / "docs" / "export.md").read_text()
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(blocks) == 3, "the section shows pandas, duckdb and polars"
    return blocks


def _run(block: str, sweep: Path) -> Any:
    """The block as written, its last statement's value returned (what a notebook would show)."""
    *body, last = re.split(r"\n(?=\S)", block.strip())  # statements: lines that start a new top-level statement
    scope: dict[str, Any] = {"SWEEP": str(sweep)}
    exec("\n".join(body), scope)
    return eval(last, scope)


def test_the_documented_snippets_name_the_same_best_variant_per_shape_in_order_of_size(small: Path) -> None:
    require("duckdb")
    require("polars")
    pandas_block, duckdb_block, polars_block = _blocks()
    best = _run(pandas_block, small)
    answer = list(zip(best["input_shape"], best["module"]))
    assert [s for s, _ in answer] == BY_SIZE and {m for _, m in answer} <= {"rmsnorm_naive", "rmsnorm_fused"}
    cells = neuronexp.load(small).cells
    ok = cells[cells["status"] == "ok"]
    for shape, module in answer:  # the pandas answer is the fastest cell of each shape
        of_shape = ok[ok["input_shape"] == shape]
        assert module == of_shape.loc[of_shape["latency_median_us"].idxmin(), "module"]
    assert [(s, m) for s, m, _ in _run(duckdb_block, small).fetchall()] == answer
    assert list(_run(polars_block, small).iter_rows()) == answer


def test_duckdb_reads_every_job_directory_of_a_sweep_too(small: Path) -> None:
    duckdb = require("duckdb")
    # Each job's own cells.parquet (the numbered job directories, not results/): what a sweep still running, or
    # never aggregated, holds.
    (n,) = duckdb.sql(
        f"SELECT count(*) FROM read_parquet('{small}/[0-9]*/cells.parquet', union_by_name = true)"
    ).fetchall()[0]
    assert n == len(neuronexp.load(small).cells)
    assert isinstance(neuronexp.load(small).cells, pd.DataFrame)
