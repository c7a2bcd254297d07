"""The first-contact screen of a Trainium run, from real rows of Neuron cells run over the torch-neuronx STAND-IN
(nothing here is Trainium): what worked in a few lines, what is missing said as such, nothing for other backends."""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd
from rich.console import Console

from helpers.layers import handed
from neuronexp.cell.group import run_cell
from neuronexp.config import (
    BackendName,
    CellSpec,
    DType,
    InputConfig,
    ProfilerConfig,
    RunConfig,
    ScheduleConfig,
    TimingConfig,
)
from neuronexp.modules import FusedRMSNorm, NaiveRMSNorm
from neuronexp.report.neuron_screen import ADVICE, WHOLE, neuron_screen
from neuronexp.report.terminal import print_cell
from neuronexp.results import Results


def _cell(tmp_path: Path, module: object, name: str, backend: str = "neuron") -> Results:
    cfg = RunConfig(
        module=handed(module),
        input=InputConfig(shape=[1, 8, 64], dtype=DType.float32),
        backend=BackendName(backend),
        profiler=ProfilerConfig(schedule=ScheduleConfig(wait=0, warmup=1, active=1, repeat=1)),
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
    assert lines[1] == (
        "  device time: from profiler_device_events · sources agree (within 10%) · correlate_device_time passed"
    )
    assert lines[2] == "    per step: key_averages() 112 µs · runtime trace 112 µs · Explorer per-op —"
    assert lines[3] == ("  capture: NEFFs beside the NTFFs yes · window active (profiler_steps) · Neuron Explorer ok")
    assert lines[4].startswith("  NEFF cache: ") and lines[4].endswith("/neff (neuronexp cache)")
    assert lines[5:] == [f"  {WHOLE}"]
    # The single run's terminal output carries it, after the op table and the warnings.
    out = io.StringIO()
    print_cell(results, tmp_path / "rmsnorm_naive", Console(file=out, width=200, highlight=False))
    assert "\n".join(lines) in out.getvalue()


def test_nothing_to_read_is_said_and_cells_alike_share_a_block(standin, no_explorer: None, tmp_path: Path) -> None:
    standin.STATE.switches.key_averages_events = False  # no device events, and no Explorer to read the rest
    cells = pd.concat([_cell(tmp_path, NaiveRMSNorm(64), "a").cells, _cell(tmp_path, FusedRMSNorm(64), "b").cells])
    lines = neuron_screen(cells)
    assert "2 cell(s)" in lines[0] and not any(line.startswith("  2 cell(s): ") for line in lines)  # one block
    assert lines[1].startswith("  device time: from none · no source · correlate_device_time passed")
    assert lines[2] == "    per step: key_averages() — · runtime trace — · Explorer per-op —"
    missing = [line for line in lines if line.startswith("  MISSING: ")]
    assert missing[0].startswith("  MISSING: no device time from any source (profiler_device_events: key_averages()")
    assert missing[1].startswith("  MISSING: Neuron Explorer not_found: the runtime trace, per-op time")
    assert lines[-1] == f"  {ADVICE}"


def test_other_backends_get_no_screen(tmp_path: Path) -> None:
    cells = _cell(tmp_path, NaiveRMSNorm(64), "cpu", backend="cpu").cells
    assert (
        cells["device_time_sources"].iloc[0] == "cpu_self_time" and cells["device_time_check"].iloc[0] == "one source"
    )
    assert neuron_screen(cells) == []
