"""The analyst's path: a real run of the main study read with neuronexp.load (pandas), and the same Parquet read by
duckdb and polars directly, each answering the README's question "which variant is fastest for each shape?"."""

from __future__ import annotations

from pathlib import Path

import pytest

import neuronexp
from helpers.optional import require
from neuronexp.export.cells import shape_column

pytestmark = pytest.mark.slow  # the main study (session fixture)


def _pandas(study: Path) -> dict[str, str]:
    cells, ops, samples = neuronexp.load(study)
    shape = shape_column(cells)  # `shape`, `input_shape` once issue 23 renames it
    ok = cells[cells["status"] == "ok"]
    best = ok.loc[ok.groupby(shape)["latency_median_us"].idxmin(), [shape, "module", "latency_median_us"]]
    assert not ops.empty and not samples.empty
    return dict(zip(best[shape], best["module"]))


def test_pandas_duckdb_and_polars_name_the_same_best_variant_per_shape(study: Path) -> None:
    duckdb, pl = require("duckdb"), require("polars")
    expected = _pandas(study)
    assert len(expected) == 2 and set(expected.values()) <= {"rmsnorm_naive", "rmsnorm_fused", "rmsnorm_compiled"}
    table = study / "results" / "cells.parquet"
    shape = shape_column(neuronexp.load(study).cells)

    rows = duckdb.sql(f"""
        SELECT {shape}, arg_min(module, latency_median_us) AS best, min(latency_median_us) AS median_us
        FROM read_parquet('{table}') WHERE status = 'ok' GROUP BY {shape} ORDER BY {shape}
    """).fetchall()
    assert {s: best for s, best, _ in rows} == expected

    best = (
        pl.read_parquet(table)
        .filter(pl.col("status") == "ok")
        .sort("latency_median_us")
        .group_by(shape, maintain_order=True)
        .first()
        .select(shape, "module")
    )
    assert dict(best.iter_rows()) == expected


def test_duckdb_reads_every_job_directory_of_a_sweep_too(study: Path) -> None:
    duckdb = require("duckdb")
    # Each job's own cells.parquet (the numbered job directories, not results/): what a sweep still running, or
    # never aggregated, holds.
    (n,) = duckdb.sql(
        f"SELECT count(*) FROM read_parquet('{study}/[0-9]*/cells.parquet', union_by_name = true)"
    ).fetchall()[0]
    assert n == len(neuronexp.load(study).cells)
