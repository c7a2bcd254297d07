"""The Summary join on fixture Parquet tables that follow the documented schema, and the CLI call itself."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers.neuron_standin.fake_neuron_explorer import SUMMARY

from neuronexp.backends.neuron.explorer import (
    SUMMARY_COLUMNS,
    SUMMARY_FIELDS,
    column_name,
    dropped_events,
    process_capture,
    read_summary,
    summary_columns,
)


PINNED = (
    "neuron_total_time_us neuron_total_exec_time_us neuron_total_active_time_us neuron_total_active_time_percent "
    "neuron_neuroncore_cycle_count neuron_model_flops neuron_hardware_flops neuron_mfu_estimated_percent "
    "neuron_hfu_estimated_percent neuron_mbu_estimated_percent neuron_mm_arithmetic_intensity neuron_hbm_read_bytes "
    "neuron_hbm_write_bytes neuron_sbuf_read_bytes neuron_sbuf_write_bytes neuron_spill_save_bytes "
    "neuron_spill_reload_bytes neuron_dma_active_time_us neuron_dma_active_time_percent neuron_dma_transfer_count "
    "neuron_dma_transfer_total_bytes neuron_matmul_instruction_count "
    + " ".join(f"neuron_{e}_engine_active_time_us neuron_{e}_engine_active_time_percent neuron_{e}_engine_instruction_count"
               for e in ("tensor", "vector", "scalar", "gpsimd", "sync"))
).split()


def test_column_names_are_pinned() -> None:
    # docs/neuron.md lists these; renaming one breaks users' notebooks.
    assert SUMMARY_COLUMNS == PINNED
    assert column_name("total_time") == "neuron_total_time_us" and SUMMARY_FIELDS["total_time"] == "s"
    assert column_name("mfu_estimated_percent") == "neuron_mfu_estimated_percent"


def test_one_summary_row_joins_with_seconds_as_microseconds(tmp_path: Path) -> None:
    pq.write_table(pa.Table.from_pylist([SUMMARY]), tmp_path / "Summary.parquet")
    summary, files = read_summary(tmp_path)
    cols = summary_columns(summary)
    assert files == ["Summary.parquet"] and cols["neuron_summary_rows"] == 1
    assert cols["neuron_total_time_us"] == pytest.approx(403.0)
    assert cols["neuron_dma_active_time_us"] == pytest.approx(300.0)
    assert cols["neuron_vector_engine_active_time_us"] == pytest.approx(120.0)
    assert cols["neuron_mbu_estimated_percent"] == pytest.approx(42.25)
    assert cols["neuron_hbm_read_bytes"] == 8388608 and cols["neuron_dma_transfer_count"] == 256
    # Fields the fixture row lacks (the schema marks every Summary field optional) stay NaN, not 0.
    assert math.isnan(cols["neuron_tensor_engine_active_time_us"]) and math.isnan(cols["neuron_gpsimd_engine_instruction_count"])
    assert "neuron_trace_count" not in cols  # only the pinned fields are joined


def test_several_device_profiles_sum_times_and_weight_percentages(tmp_path: Path) -> None:
    rows = [dict(total_time=0.001, mfu_estimated_percent=10.0, hbm_read_bytes=100),
            dict(total_time=0.003, mfu_estimated_percent=50.0, hbm_read_bytes=300)]
    for i, row in enumerate(rows):  # one processed profile per folder, as --output-file may lay them out
        (tmp_path / f"p{i}").mkdir()
        pq.write_table(pa.Table.from_pylist([row]), tmp_path / f"p{i}" / "Summary.parquet")
    summary, files = read_summary(tmp_path)
    cols = summary_columns(summary)
    assert sorted(files) == ["p0/Summary.parquet", "p1/Summary.parquet"] and cols["neuron_summary_rows"] == 2
    assert cols["neuron_total_time_us"] == pytest.approx(4000.0)
    assert cols["neuron_hbm_read_bytes"] == 400
    assert cols["neuron_mfu_estimated_percent"] == pytest.approx((10 * 1 + 50 * 3) / 4)


def test_no_summary_gives_every_pinned_column_as_nan() -> None:
    cols = summary_columns(pd.DataFrame())
    assert set(SUMMARY_COLUMNS) <= set(cols) and all(math.isnan(cols[c]) for c in SUMMARY_COLUMNS)
    assert cols["neuron_summary_rows"] == 0


def test_dropped_event_counts_are_read_from_the_tool_output() -> None:
    assert dropped_events("Warning: 1,500 trace events were dropped\nWarning: 20 trace events were dropped") == 1520
    assert dropped_events("all good") == 0


def _capture(tmp_path: Path) -> Path:
    session = tmp_path / "neuron_profile" / "i-0abc_pid_1" / "ts"
    session.mkdir(parents=True)
    (session / "trace_info.pb").write_bytes(b"x")
    return session


def test_the_documented_command_runs_and_its_summary_is_joined(tmp_path: Path, fake_explorer: Path) -> None:
    session = _capture(tmp_path)
    result = process_capture(session, tmp_path / "neuron_explorer", True, 60)
    assert result.status == "ok", result.warnings
    (argv,) = [json.loads(line) for line in fake_explorer.read_text().splitlines()]
    assert argv == ["view", "-d", str(session), "--output-format", "parquet", "--output-file", str(tmp_path / "neuron_explorer")]
    assert result.command[1:] == argv and result.summary_files == ["Summary.parquet"]
    assert result.columns["neuron_total_time_us"] == pytest.approx(403.0) and result.columns["neuron_dropped_events"] == 0
    # Explorer's own Warning table lands in the cell's warnings.
    assert result.warnings == ["neuron-explorer: Missing Data: Current NEFF is missing compiler metrics."]


@pytest.mark.parametrize(
    ("mode", "status", "expected"),
    [
        ("dropped", "ok", "1500 trace events were dropped: raise profiler.neuron.max_events_per_nc"),
        ("fail", "failed", "neuron-explorer view exited with 3: ERROR_PROCESS_INCOMPLETE: NEFF/NTFF UUID mismatch"),
        ("empty", "no_summary", "neuron-explorer wrote no Summary table"),
    ],
)
def test_tool_problems_become_warnings(tmp_path: Path, fake_explorer: Path, monkeypatch: pytest.MonkeyPatch,
                                       mode: str, status: str, expected: str) -> None:
    monkeypatch.setenv("FAKE_EXPLORER_MODE", mode)
    result = process_capture(_capture(tmp_path), tmp_path / "out", True, 60)
    assert result.status == status
    assert any(w.startswith(expected) for w in result.warnings), result.warnings
    if mode == "dropped":
        assert result.columns["neuron_dropped_events"] == 1500


def test_without_the_tool_the_columns_are_empty_with_a_note(tmp_path: Path, no_explorer: None) -> None:
    result = process_capture(_capture(tmp_path), tmp_path / "out", True, 60)
    assert result.status == "not_found" and result.warnings[0].startswith("neuron-explorer is not on PATH")
    assert math.isnan(result.columns["neuron_total_time_us"]) and not (tmp_path / "out").exists()


def test_disabled_or_nothing_to_process(tmp_path: Path, fake_explorer: Path) -> None:
    assert process_capture(_capture(tmp_path), tmp_path / "out", False, 60).status == "disabled"
    assert process_capture(None, tmp_path / "out", True, 60).status == "no_capture"
    assert not fake_explorer.exists()  # never called


def test_an_unreadable_table_is_a_warning_not_a_crash(tmp_path: Path, fake_explorer: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(output_dir: Path) -> None:
        raise OSError("Parquet magic bytes not found in footer")

    monkeypatch.setattr("neuronexp.backends.neuron.explorer.read_summary", broken)
    result = process_capture(_capture(tmp_path), tmp_path / "out", True, 60)
    assert result.status == "failed" and result.warnings[-1].startswith("neuron-explorer output unreadable (OSError")
    assert math.isnan(result.columns["neuron_total_time_us"])
