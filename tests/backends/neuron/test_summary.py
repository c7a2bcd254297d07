"""Neuron Explorer's Summary read by schema version and SchemaFields units, on Parquet fixtures (STAND-IN tables:
schema 7.4.0 as documented, and a HYPOTHETICAL 12.x that changes units, drops and adds fields)."""

from __future__ import annotations

import math
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from helpers.neuron_standin.fake_explorer_tables import SUMMARY_US, summary_row
from neuronexp.backends.neuron.explorer import read_output
from neuronexp.backends.neuron.explorer_summary import SUMMARY_COLUMNS, SUMMARY_FIELDS, column_name

PINNED = (
    "neuron_total_time_us neuron_total_exec_time_us neuron_total_active_time_us neuron_total_active_time_percent "
    "neuron_neuroncore_cycle_count neuron_model_flops neuron_hardware_flops neuron_transpose_flops "
    "neuron_adjusted_hardware_flops neuron_mfu_estimated_percent neuron_mfu_max_achievable_estimated_percent "
    "neuron_mfu_hlo_estimated_percent neuron_mfu_inst_estimated_percent neuron_hfu_estimated_percent "
    "neuron_mbu_estimated_percent neuron_mbu_min_read_util_percent neuron_mm_arithmetic_intensity "
    "neuron_peak_flops_bandwidth_ratio neuron_hbm_read_bytes "
    "neuron_hbm_write_bytes neuron_sbuf_read_bytes neuron_sbuf_write_bytes neuron_spill_save_bytes "
    "neuron_spill_reload_bytes neuron_dma_active_time_us neuron_dma_active_time_percent neuron_dma_transfer_count "
    "neuron_dma_transfer_total_bytes neuron_dma_transfer_average_bytes neuron_matmul_instruction_count "
    + " ".join(
        f"neuron_{e}_engine_active_time_us neuron_{e}_engine_active_time_percent neuron_{e}_engine_instruction_count"
        for e in ("tensor", "vector", "scalar", "gpsimd", "sync")
    )
).split()


def _profile(folder: Path, version: str, values: dict, schema_fields: bool = True) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    row, fields = summary_row(version, values)
    pq.write_table(pa.Table.from_pylist([row]), folder / "Summary.parquet")
    pq.write_table(pa.Table.from_pylist([{"profile_schema_version": version}]), folder / "Metadata.parquet")
    if schema_fields:
        pq.write_table(pa.Table.from_pylist(fields), folder / "SchemaFields.parquet")


def test_column_names_are_pinned() -> None:
    # docs/neuron.md lists these; renaming one breaks users' notebooks.
    assert SUMMARY_COLUMNS == PINNED
    assert (
        column_name("total_time") == "neuron_total_time_us" and column_name("hbm_read_bytes") == "neuron_hbm_read_bytes"
    )


@pytest.mark.parametrize(
    ("version", "schema_fields", "source"),
    [
        ("7.4.0", True, "SchemaFields"),
        ("7.4.0", False, "documented 7.4.0"),  # no SchemaFields table: the documented 7.4.0 units
        ("12.0.1", True, "SchemaFields"),  # HYPOTHETICAL 12.x: times in ns, a 0-1 percent, a field gone, one added
    ],
)
def test_the_same_figures_come_out_of_either_schema(
    tmp_path: Path, version: str, schema_fields: bool, source: str
) -> None:
    _profile(tmp_path, version, SUMMARY_US, schema_fields)
    cols, warnings, schema, _, files = read_output(tmp_path)
    assert files == ["Summary.parquet"] and warnings == []
    assert cols["neuron_profile_schema_version"] == version and cols["neuron_units_source"] == source
    assert cols["neuron_total_time_us"] == pytest.approx(403.0)
    assert cols["neuron_dma_active_time_us"] == pytest.approx(300.0)
    assert cols["neuron_vector_engine_active_time_us"] == pytest.approx(120.0)
    assert cols["neuron_mbu_estimated_percent"] == pytest.approx(42.25)
    assert cols["neuron_mfu_max_achievable_estimated_percent"] == pytest.approx(3.5)
    assert cols["neuron_dma_transfer_average_bytes"] == 65536 and cols["neuron_hbm_read_bytes"] == 8388608
    # Fields the row lacks (the schema marks every Summary field optional) stay NaN, not 0.
    assert math.isnan(cols["neuron_tensor_engine_active_time_us"]) and math.isnan(
        cols["neuron_gpsimd_engine_instruction_count"]
    )
    assert "neuron_trace_count" not in cols  # only the pinned fields become columns; the others are listed
    assert "trace_count" in schema["unread_fields"]
    if version.startswith("12"):
        assert (
            math.isnan(cols["neuron_mm_arithmetic_intensity"]) and "mm_arithmetic_intensity" in schema["missing_fields"]
        )
        assert "hypothetical_field_added_in_12x" in schema["unread_fields"]
    else:
        assert cols["neuron_mm_arithmetic_intensity"] == pytest.approx(0.5)


def test_a_unit_that_does_not_fit_the_field_is_nan_and_said(tmp_path: Path) -> None:
    _profile(tmp_path, "7.4.0", {"total_time": 403.0, "hbm_read_bytes": 10, "mbu_estimated_percent": 5.0})
    fields = pq.read_table(tmp_path / "SchemaFields.parquet").to_pylist()
    for f in fields:
        f["field_unit"] = {"total_time": "furlongs", "hbm_read_bytes": "kilowords"}.get(
            f["field_name"], f["field_unit"]
        )
    pq.write_table(pa.Table.from_pylist(fields), tmp_path / "SchemaFields.parquet")
    cols, warnings, schema, _, _ = read_output(tmp_path)
    assert math.isnan(cols["neuron_total_time_us"]) and math.isnan(cols["neuron_hbm_read_bytes"])
    assert cols["neuron_mbu_estimated_percent"] == pytest.approx(5.0)
    assert warnings == [
        "neuron-explorer Summary fields with a unit neuronexp does not convert, left NaN: "
        "hbm_read_bytes (kilowords), total_time (furlongs)"
    ]


def test_values_no_capture_can_hold_are_nan_and_named(tmp_path: Path) -> None:
    """NaN, negative, 1e300, and a percent past 100, as a corrupt or misread table could hold them (issue 44)."""
    values = {
        "total_time": 403e-6,  # seconds, as 7.4.0 writes: 403 us, kept
        "total_exec_time": -1.0,
        "hbm_read_bytes": 1e300,
        "model_flops": float("nan"),
        "mbu_estimated_percent": 250.0,
        "dma_transfer_count": 256,
    }
    pq.write_table(pa.Table.from_pylist([values]), tmp_path / "Summary.parquet")
    pq.write_table(pa.Table.from_pylist([{"profile_schema_version": "7.4.0"}]), tmp_path / "Metadata.parquet")
    cols, warnings, schema, _, _ = read_output(tmp_path)  # no SchemaFields: the documented units
    assert cols["neuron_total_time_us"] == pytest.approx(403.0) and cols["neuron_dma_transfer_count"] == 256
    for column in ("total_exec_time_us", "hbm_read_bytes", "model_flops", "mbu_estimated_percent"):
        assert math.isnan(cols[f"neuron_{column}"]), column
    assert warnings == [
        "neuron-explorer Summary values no capture can hold, left NaN: total_exec_time = -1e+06 (negative), "
        "model_flops = nan (not a number), mbu_estimated_percent = 250 (beyond 100.5), "
        "hbm_read_bytes = 1e+300 (beyond 1e+18)"
    ]
    assert len(schema["implausible"]) == 4


@pytest.mark.parametrize(
    ("unit", "factor"), [("seconds", 1e6), ("milliseconds", 1e3), ("microseconds", 1.0), ("nanoseconds", 1e-3)]
)
def test_time_units_become_microseconds(tmp_path: Path, unit: str, factor: float) -> None:
    pq.write_table(pa.Table.from_pylist([{"total_time": 2.0}]), tmp_path / "Summary.parquet")
    pq.write_table(
        pa.Table.from_pylist(
            [{"table_name": "Summary", "field_name": "total_time", "field_unit": unit, "field_maximum": None}]
        ),
        tmp_path / "SchemaFields.parquet",
    )
    cols, *_ = read_output(tmp_path)
    assert cols["neuron_total_time_us"] == pytest.approx(2.0 * factor)
    assert cols["neuron_profile_schema_version"] == "unknown"  # no Metadata table


def test_an_unknown_schema_major_is_read_by_name_with_a_warning(tmp_path: Path) -> None:
    _profile(tmp_path, "13.0.0", SUMMARY_US)
    cols, warnings, *_ = read_output(tmp_path)
    assert cols["neuron_total_time_us"] == pytest.approx(403.0)
    assert warnings == [
        "profile schema 13.0.0 is not one neuronexp was written against (7.x, 12.x): fields are read by "
        "name and units from SchemaFields; missing ones stay NaN"
    ]


def test_several_device_profiles_sum_times_and_weight_percentages(tmp_path: Path) -> None:
    rows = [
        dict(total_time=1000.0, mfu_estimated_percent=10.0, hbm_read_bytes=100),
        dict(total_time=3000.0, mfu_estimated_percent=50.0, hbm_read_bytes=300),
    ]
    for i, (row, version) in enumerate(zip(rows, ("7.4.0", "12.0.1"))):  # one processed profile per folder
        _profile(tmp_path / f"p{i}", version, row)
    cols, _, schema, _, files = read_output(tmp_path)
    assert files == ["p0/Summary.parquet", "p1/Summary.parquet"] and cols["neuron_summary_rows"] == 2
    assert cols["neuron_profile_schema_version"] == "12.0.1,7.4.0" and schema["versions"] == ["12.0.1", "7.4.0"]
    assert cols["neuron_total_time_us"] == pytest.approx(4000.0)
    assert cols["neuron_hbm_read_bytes"] == 400
    assert cols["neuron_mfu_estimated_percent"] == pytest.approx((10 * 1 + 50 * 3) / 4)


def test_split_tables_are_read_as_one(tmp_path: Path) -> None:
    """Large tables come as Name_0.parquet, Name_1.parquet (how-to-analyze-profile-output)."""
    for i, t in enumerate((0.001, 0.002)):
        pq.write_table(pa.Table.from_pylist([{"total_time": t}]), tmp_path / f"Summary_{i}.parquet")
    cols, _, _, _, files = read_output(tmp_path)
    assert files == ["Summary_0.parquet", "Summary_1.parquet"] and cols["neuron_total_time_us"] == pytest.approx(3000.0)


def test_no_summary_gives_every_pinned_column_as_nan(tmp_path: Path) -> None:
    cols, _, _, _, files = read_output(tmp_path)
    assert files == [] and set(SUMMARY_COLUMNS) <= set(cols) and all(math.isnan(cols[c]) for c in SUMMARY_COLUMNS)
    assert cols["neuron_summary_rows"] == 0 and set(SUMMARY_FIELDS) >= {"transpose_flops", "mbu_min_read_util_percent"}
