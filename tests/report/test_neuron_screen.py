"""The first-contact screen of a Trainium run, from real rows of Neuron cells run over the torch-neuronx STAND-IN
(nothing here is Trainium): what worked in a few lines, what is missing said as such, nothing for other backends."""

from __future__ import annotations

import io
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from rich.console import Console

from helpers.layers import handed
from neuronexp.cell.group import run_cell
from neuronexp.config import (
    BackendName,
    CellSpec,
    DType,
    InputConfig,
    NeuronMode,
    NeuronProfilerConfig,
    ProfilerConfig,
    RunConfig,
    ScheduleConfig,
    TimingConfig,
)
from neuronexp.modules import FusedRMSNorm, NaiveRMSNorm
from neuronexp.report.neuron_screen import ADVICE, WHOLE, neuron_screen
from neuronexp.report.terminal import print_cell
from neuronexp.results import Results


def _cell(tmp_path: Path, module: object, name: str, backend: str = "neuron", **neuron_keys: object) -> Results:
    neuron = NeuronProfilerConfig(**neuron_keys)  # type: ignore[arg-type]
    cfg = RunConfig(
        module=handed(module),
        input=InputConfig(shape=[1, 8, 64], dtype=DType.float32),
        backend=BackendName(backend),
        profiler=ProfilerConfig(schedule=ScheduleConfig(wait=0, warmup=1, active=1, repeat=1), neuron=neuron),
        timing=TimingConfig(min_seconds=0, warmup=0, iters=1, min_iters=1, max_seconds=1.0, rounds=1),
    )
    out = tmp_path / name
    out.mkdir()
    return run_cell(CellSpec(config=cfg, run_id=name, experiment="t", module_name=name), out)


def test_a_default_run_says_every_source_and_that_nothing_is_missing(
    standin, explorer_in_process: Path, tmp_path: Path
) -> None:
    results = _cell(tmp_path, NaiveRMSNorm(64), "rmsnorm_naive")
    lines = neuron_screen(results.cells)
    assert lines[0] == (
        f"Trainium first contact · torch-neuronx {standin.__version__} (neuronconfig-2.31) · 1 cell(s): what worked, "
        "what is missing"
    )
    assert lines[1:7] == [
        "  device time: from profiler_device_events · sources agree (within 10%) · correlate_device_time given and "
        "taken (device time came through the profiler)",
        "    per step: key_averages() 112 µs · host rows — · runtime trace 112 µs · Explorer per-op —",
        "    per op: from profiler_device_events",
        "  capture: NEFFs beside the NTFFs yes · window active (profiler_steps) · Neuron Explorer ok",
        "  NeuronCores: NEURON_RT_NUM_CORES=1 (neuronexp's default: one NeuronCore per cell)",
        lines[6],
    ]
    assert lines[6].startswith("  NEFF cache: ") and lines[6].endswith("+standin (neuronexp cache)")
    assert lines[7:] == [f"  {WHOLE}"]
    # The single run's terminal output carries it, after the op table and the warnings.
    out = io.StringIO()
    print_cell(results, tmp_path / "rmsnorm_naive", Console(file=out, width=200, highlight=False))
    assert "\n".join(lines) in out.getvalue()


def test_nothing_to_read_is_said_and_cells_alike_share_a_block(standin, no_explorer: None, tmp_path: Path) -> None:
    standin.STATE.switches.key_averages = "none"  # no device time in key_averages(), and no Explorer for the rest
    cells = pd.concat([_cell(tmp_path, NaiveRMSNorm(64), "a").cells, _cell(tmp_path, FusedRMSNorm(64), "b").cells])
    lines = neuron_screen(cells)
    assert "2 cell(s)" in lines[0] and not any(line.startswith("  2 cell(s): ") for line in lines)  # one block
    assert lines[1] == (
        "  device time: from none · no source · correlate_device_time given but IGNORED (no device time came through "
        "the profiler)"
    )
    assert lines[2] == "    per step: key_averages() — · host rows — · runtime trace — · Explorer per-op —"
    assert lines[3] == "    per op: from none"
    missing = [line for line in lines if line.startswith("  MISSING: ")]
    assert missing[0].startswith("  MISSING: no device time from any source (profiler_device_events: key_averages()")
    assert missing[1].startswith("  MISSING: per-op split missing: key_averages() had no device time per op")
    assert missing[2].startswith("  MISSING: Neuron Explorer not_found: the runtime trace, per-op time")
    assert lines[-1] == f"  {ADVICE}"


def test_a_capture_without_the_runtime_trace_is_not_called_whole(
    standin, explorer_in_process: Path, tmp_path: Path
) -> None:
    """profiler.neuron.modes without RUNTIME: device time still comes from key_averages(), but nothing checks it."""
    results = _cell(tmp_path, NaiveRMSNorm(64), "a", modes=[NeuronMode.DEVICE])
    lines = neuron_screen(results.cells)
    assert "  MISSING: runtime trace: ProfileMode.RUNTIME not captured" in lines and lines[-1] == f"  {ADVICE}"
    assert f"  {WHOLE}" not in lines


def _row(**changes: object) -> pd.DataFrame:
    """One Neuron row as the default run writes it (every source whole), with `changes`."""
    row = {
        "module": "m",
        "input_shape": "[1,8,64]",
        "neuron_api": "neuronconfig-2.31",
        "neuron_api_version": "2.13.3.0",
        "device_time_source": "profiler_device_events",
        "device_time_sources": "profiler_device_events,neuron_runtime",
        "device_time_check": "agree",
        "neuron_per_op_source": "profiler_device_events",
        "neuron_sources_missing": "profiler_host_rows: none; neuron_explorer: no FrameworkInstruction table",
        "neuron_correlate_device_time": "taken",
        "neuron_device_time_events_us": 112.0,
        "neuron_device_time_runtime_us": 112.0,
        "neuron_capture_window": "active",
        "neuron_capture_window_method": "profiler_steps",
        "neuron_neffs_beside_ntffs": True,
        "neuron_explorer_status": "ok",
        "neuron_cores": "NEURON_RT_NUM_CORES=1 (neuronexp's default: one NeuronCore per cell)",
        "neuron_neff_cache_dir": "/c/neff/v",
        "neuron_neff_cache_source": "neuronexp cache",
        "warnings": None,
    }
    return pd.DataFrame([{**row, **changes}])


def test_disagreeing_sources_are_missing_not_whole() -> None:
    warning = "device time sources disagree by more than 10%: profiler_device_events 112.0 us vs neuron_runtime 224.0"
    lines = neuron_screen(_row(device_time_check="disagree", neuron_device_time_runtime_us=224.0, warnings=warning))
    assert f"  MISSING: {warning}" in lines and lines[-1] == f"  {ADVICE}"
    assert neuron_screen(_row())[-1] == f"  {WHOLE}"  # the same row agreeing is whole


@pytest.mark.parametrize("beside", [False, np.bool_(False), 0])
def test_no_neff_beside_an_ntff_is_no(beside: object) -> None:
    lines = neuron_screen(_row(neuron_neffs_beside_ntffs=beside))
    assert any(line.startswith("  capture: NEFFs beside the NTFFs NO ·") for line in lines)
    assert "  MISSING: no NEFF beside an NTFF: Neuron Explorer cannot process that device profile" in lines


def test_a_figure_only_some_cells_had_says_how_many() -> None:
    cells = pd.concat([_row(), _row(neuron_device_time_runtime_us=math.nan)])
    assert [line for line in neuron_screen(cells) if line.startswith("    per step:")] == [
        "    per step: key_averages() 112 µs · host rows — · runtime trace 112 µs (1/2 cells) · Explorer per-op —"
    ]


def test_other_backends_get_no_screen(tmp_path: Path) -> None:
    cells = _cell(tmp_path, NaiveRMSNorm(64), "cpu", backend="cpu").cells
    assert (
        cells["device_time_sources"].iloc[0] == "cpu_self_time" and cells["device_time_check"].iloc[0] == "one source"
    )
    assert neuron_screen(cells) == []


def test_a_capture_without_a_neff_cache_is_said_not_a_crash(standin, explorer_in_process: Path, tmp_path: Path) -> None:
    """profiler.neuron.copy_neffs=false: NeuronConfig is given no NEFF cache, the row's neuron_neff_cache_dir is empty;
    the screen says so (it raised TypeError on the empty answer, and with it the single run's terminal output)."""
    results = _cell(tmp_path, NaiveRMSNorm(64), "a", copy_neffs=False)
    lines = neuron_screen(results.cells)
    assert "  NEFF cache: not given (neuronexp cache)" in lines
    out = io.StringIO()
    print_cell(results, tmp_path / "a", Console(file=out, width=200, highlight=False))
    assert "  NEFF cache: not given (neuronexp cache)" in out.getvalue()


@pytest.mark.parametrize("missing", [None, math.nan, ""], ids=["None", "NaN", "empty"])
def test_answers_no_cell_gave_are_dashes(missing: object) -> None:
    """A row read back from a results table holds a missing answer as NaN, a fresh one as None: both are "—"."""
    lines = neuron_screen(
        _row(
            neuron_neffs_beside_ntffs=None if missing == "" else missing,
            neuron_capture_window=missing,
            neuron_capture_window_method=missing,
            neuron_per_op_source=missing,
            neuron_neff_cache_dir=missing,
            neuron_neff_cache_source=missing,
        )
    )
    assert "    per op: from —" in lines
    assert "  capture: NEFFs beside the NTFFs — (no NTFF) · window — (—) · Neuron Explorer ok" in lines
    assert "  NEFF cache: not given (—)" in lines
    assert not any("NTFF" in line for line in lines if line.startswith("  MISSING"))  # no NTFF is not a lost NEFF


@pytest.mark.parametrize(("beside", "said"), [(1.0, "yes"), (0.0, "NO"), (True, "yes")])
def test_neffs_beside_as_a_number_read_back_from_a_table(beside: object, said: str) -> None:
    """Where some cells had no NTFF, a table stores the column as numbers: 1.0 and 0.0 still say yes and NO."""
    lines = neuron_screen(_row(neuron_neffs_beside_ntffs=beside))
    assert f"  capture: NEFFs beside the NTFFs {said} · window active (profiler_steps) · Neuron Explorer ok" in lines


def test_no_device_time_through_the_profiler_is_missing_with_its_reason() -> None:
    """Device time from the runtime trace alone: both routes of the profiler are named as one, with the first's reason
    (a reason may itself hold ': '); a source named missing by the row but not by the screen is not listed."""
    lines = neuron_screen(
        _row(
            device_time_source="neuron_runtime",
            device_time_sources="neuron_runtime",
            neuron_sources_missing="profiler_device_events: key_averages() had no device events (correlate: ignored); "
            "profiler_host_rows: none; neuron_explorer: Neuron Explorer failed: exit 1",
        )
    )
    assert [line for line in lines if line.startswith("  MISSING")] == [
        "  MISSING: device time through the profiler: key_averages() had no device events (correlate: ignored)"
    ]


def test_one_profiler_route_missing_is_not_missing() -> None:
    """Device time from key_averages()' host rows: the profiler gave it, so nothing is missing."""
    lines = neuron_screen(
        _row(
            device_time_source="profiler_host_rows",
            neuron_sources_missing="profiler_device_events: key_averages() had no device events (correlate: taken)",
        )
    )
    assert lines[-1] == f"  {WHOLE}"


def test_every_missing_source_is_listed_and_a_row_without_reasons_is_read() -> None:
    lines = neuron_screen(
        _row(
            device_time_source="neuron_explorer",
            neuron_sources_missing="profiler_device_events: none seen; profiler_host_rows: none; "
            "neuron_runtime: Neuron Explorer no_summary",
        )
    )
    assert [line for line in lines if line.startswith("  MISSING")] == [
        "  MISSING: device time through the profiler: none seen",
        "  MISSING: runtime trace: Neuron Explorer no_summary",
    ]
    assert neuron_screen(_row(neuron_sources_missing=math.nan))[-1] == f"  {WHOLE}"  # no reasons recorded: none


def test_an_unverified_window_and_a_failed_explorer_are_missing() -> None:
    warnings = (
        "capture window unverified: the NTFFs may also hold the warm-up | some other note | "
        "no device time from neuron_runtime: none"
    )
    lines = neuron_screen(_row(warnings=warnings, neuron_explorer_status="failed"))
    assert [line for line in lines if line.startswith("  MISSING")] == [
        "  MISSING: capture window unverified: the NTFFs may also hold the warm-up",
        "  MISSING: no device time from neuron_runtime: none",
        "  MISSING: Neuron Explorer failed: the runtime trace, per-op time and the Summary columns need it "
        "(aws-neuronx-tools, neuron-explorer on PATH)",
    ]
    assert lines[-1] == f"  {ADVICE}"


def test_cells_that_answer_differently_get_a_block_each_named() -> None:
    cells = pd.concat(
        [
            _row(),
            _row(module="n", input_shape="[1,4,64]"),
            _row(module="o", neuron_device_time_runtime_us=224.0, device_time_check="disagree"),
        ]
    )
    lines = neuron_screen(cells)
    assert "3 cell(s): what worked" in lines[0]
    blocks = [line for line in lines if "cell(s): " in line and line.startswith("  ")]
    assert blocks == ["  2 cell(s): m [1,8,64], n [1,4,64]", "  1 cell(s): o [1,8,64]"]
    assert lines[lines.index(blocks[1]) + 1].startswith(
        "  device time: from profiler_device_events · SOURCES DISAGREE (the figures: warnings) · "
    )


def test_a_figure_that_differs_between_cells_is_a_range() -> None:
    cells = pd.concat([_row(), _row(neuron_device_time_runtime_us=224.0), _row(neuron_device_time_runtime_us=math.nan)])
    assert [line for line in neuron_screen(cells) if line.startswith("    per step:")] == [
        "    per step: key_averages() 112 µs · host rows — · runtime trace 112 µs–224 µs (2/3 cells) · "
        "Explorer per-op —"
    ]


@pytest.mark.parametrize(
    ("cores", "said"),
    [([], "—"), ([math.nan], "—"), (["A", "A"], "A"), (["A", "B"], "2 selections (a slot each)")],
    ids=["no-column", "none-recorded", "one", "two"],
)
def test_the_neuroncores_line(cores: list, said: str) -> None:
    cells = pd.concat([_row(neuron_cores=c) for c in cores] or [_row().drop(columns="neuron_cores")])
    assert f"  NeuronCores: {said}" in neuron_screen(cells)


def test_rows_without_neuron_answers_get_no_screen() -> None:
    assert neuron_screen(_row().drop(columns="device_time_sources")) == []
    assert neuron_screen(_row().drop(columns="neuron_api")) == []
    assert neuron_screen(_row(neuron_api=None)) == []


def test_cells_whose_ntff_answers_differ_get_a_block_each() -> None:
    """In a sweep's table a cell without NTFFs makes the column numbers: 1.0, 0.0 and NaN are three answers."""
    cells = pd.concat([_row(module=m, neuron_neffs_beside_ntffs=v) for m, v in (("a", 1.0), ("b", 0.0), ("c", None))])
    cells["neuron_neffs_beside_ntffs"] = cells["neuron_neffs_beside_ntffs"].astype(float)
    captures = [line.split(" · ")[0] for line in neuron_screen(cells) if line.startswith("  capture:")]
    assert captures == [
        "  capture: NEFFs beside the NTFFs yes",
        "  capture: NEFFs beside the NTFFs NO",
        "  capture: NEFFs beside the NTFFs — (no NTFF)",
    ]


def test_a_check_or_correlate_answer_without_words_is_shown_as_recorded() -> None:
    """A row from another neuronexp version may hold an answer this one has no words for, or none."""
    lines = neuron_screen(_row(device_time_check="one source", neuron_correlate_device_time="deferred"))
    assert lines[1] == "  device time: from profiler_device_events · one source · correlate_device_time deferred"
    lines = neuron_screen(_row(neuron_correlate_device_time=None))
    assert lines[1].endswith(" · correlate_device_time —")
