"""A whole cell through `run_cell` with backend=neuron over the torch-neuronx STAND-IN (tensors on the CPU).

Real profiler, real files, real Parquet; only torch_neuronx and neuron-explorer are stand-ins.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest
import torch

import neuronexp
from helpers.layers import handed
from neuronexp.backends.neuron import sdk as neuron_sdk
from neuronexp.cell.group import run_cell
from neuronexp.config import (
    BackendName,
    CellSpec,
    DType,
    InputConfig,
    NeuronDeviceConfig,
    NeuronMode,
    NeuronProfilerConfig,
    ProfilerConfig,
    RunConfig,
    ScheduleConfig,
    TimingConfig,
)
from neuronexp.modules import NaiveRMSNorm
from neuronexp.results import CELL_SCHEMA


class Counting(NaiveRMSNorm):
    """Counts forward calls, and can report a CPU fallback to the stand-in the way torch-neuronx would."""

    def __init__(self, fallback: str | None = None) -> None:
        super().__init__(64)
        self.calls, self.fallback = 0, fallback
        self.env_at_first_call: dict[str, str] = {}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.calls:  # the first call is where a real torch-neuronx compiles
            self.env_at_first_call = dict(os.environ)
        self.calls += 1
        if self.fallback:
            import torch_neuronx

            torch_neuronx.STATE.fallback_ops.append(self.fallback)
        return super().forward(x)


def _spec(module: torch.nn.Module, backend: str = "neuron", active: int = 1, **neuron: object) -> CellSpec:
    cfg = RunConfig(
        module=handed(module),
        input=InputConfig(shape=[1, 8, 64], dtype=DType.float32),
        backend=BackendName(backend),
        profiler=ProfilerConfig(
            schedule=ScheduleConfig(wait=0, warmup=1, active=active, repeat=1),
            neuron=NeuronProfilerConfig(**{k: v for k, v in neuron.items() if k != "debug_info"}),
        ),
        timing=TimingConfig(min_seconds=0, warmup=0, iters=1, min_iters=1, max_seconds=1.0, rounds=1),
        neuron=NeuronDeviceConfig(debug_info=bool(neuron.get("debug_info", False))),
    )
    return CellSpec(config=cfg, run_id="standin", experiment="test", module_name="rmsnorm_naive")


def test_documented_api_cell_end_to_end(standin, fake_explorer: Path, tmp_path: Path) -> None:
    """The default run, as the issue's first contact: correlate_device_time passed, device time from key_averages()
    and from the runtime trace, agreeing, the hotspot the planted one, the NEFF cache pinned and in the capture."""
    out = tmp_path / "job"
    out.mkdir()
    results = run_cell(_spec(Counting()), out)
    cell = results.cells.iloc[0]
    assert cell["status"] == "ok", cell["error"]
    assert cell["backend"] == "neuron" and cell["neuron_api"] == neuron_sdk.DOCUMENTED
    assert cell["neuron_api_version"] == standin.__version__ and cell["neuron_correlate_device_time"] == "taken"
    # planted.DEVICE_US: three aten::mul of 30 us, aten::mean 12, aten::add 4, aten::rsqrt 6 per step.
    assert cell["device_time_source"] == "profiler_device_events" and cell["device_time_us"] == pytest.approx(112)
    assert cell["device_time_sources"] == "profiler_device_events,neuron_runtime"
    assert cell["device_time_check"] == "agree"
    assert cell["neuron_device_time_runtime_us"] == pytest.approx(112) and cell["neuron_runtime_executions"] == 6
    assert cell["neuron_capture_window"] == "active" and cell["neuron_capture_window_method"] == "profiler_steps"
    assert cell["top_op"] == "aten::mul" and cell["top_op_share"] == pytest.approx(90 / 112)
    assert standin.STATE.configs[-1]["neff_cache_dir"] == os.environ["TORCH_NEURONX_NEFF_CACHE_DIR"]
    assert cell["neuron_neff_cache_dir"] == os.environ["TORCH_NEURONX_NEFF_CACHE_DIR"]
    assert cell["neuron_neff_cache_source"] == "neuronexp cache" and cell["neuron_min_warmup_calls"] == 3
    assert cell["neuron_cores"].startswith("NEURON_RT_NUM_CORES=1")
    warnings = cell["warnings"].split(" | ")
    assert "neuron-explorer: Missing Data: Current NEFF is missing compiler metrics." in warnings
    assert not any("device time" in w or "capture" in w for w in warnings), warnings
    assert not any("export_trace" in w for w in warnings)
    # Artifacts: the capture root is what Neuron Explorer gets; one session folder with the framework trace in it.
    assert cell["neuron_upload_dir"] == "neuron_profile"
    (session,) = [p for p in (out / "neuron_profile").glob("i-0standin00000000_pid_*/*") if p.is_dir()]
    assert {p.name for p in session.iterdir()} >= {
        "trace.json",
        "ntrace.pb",
        "trace_info.pb",
        "profile_nc_0_session_0.ntff",
    }
    assert (session / "trace.json").read_bytes() == (out / "trace.json").read_bytes()  # via the saved-trace proxy
    assert cell["neuron_sessions"] == 1 and cell["neuron_ntff_files"] == 1 and cell["neuron_neff_files"] == 4
    assert bool(cell["neuron_neffs_beside_ntffs"])  # one NEFF per eager op, copied from the pinned cache
    assert bool(cell["neuron_system_profile"]) and bool(cell["neuron_framework_trace"])
    # Device-level metrics joined from the (fake) neuron-explorer Summary.
    assert cell["neuron_explorer_status"] == "ok" and cell["neuron_total_time_us"] == pytest.approx(403.0)
    assert cell["neuron_mbu_estimated_percent"] == pytest.approx(42.25) and cell["neuron_dropped_events"] == 0
    assert cell["neuron_profile_schema_version"] == "7.4.0" and cell["neuron_units_source"] == "SchemaFields"
    assert cell["neuron_insights"] == "" and cell["neuron_debug_info"] == "off"
    assert cell["neuron_max_memory_reserved_bytes"] == standin.STATE.peak_reserved
    manifest = json.loads((out / cell["neuron_manifest"]).read_text())
    assert manifest["api"] == neuron_sdk.DOCUMENTED and manifest["upload_dir"] == str(
        (out / "neuron_profile").resolve()
    )
    assert manifest["explorer"]["command"][1:4] == ["view", "-d", str((out / "neuron_profile").resolve())]
    assert "--system-trace-filter-neuron-core" not in manifest["explorer"]["command"]  # every core captured
    assert manifest["explorer"]["schema"]["versions"] == ["7.4.0"] and len(manifest["sessions"]) == 1
    # On disk: the contract columns first, the neuron_* columns after them.
    loaded = neuronexp.load(out).cells
    assert list(loaded.columns[: len(CELL_SCHEMA.names)]) == CELL_SCHEMA.names
    assert {"neuron_total_time_us", "neuron_upload_dir", "neuron_fallback_ops"} <= set(loaded.columns)
    assert loaded["device_time_source"].iloc[0] == "profiler_device_events"


def test_at_least_three_warmup_calls_before_timing_and_profiling(standin, no_explorer: None, tmp_path: Path) -> None:
    module = Counting()
    run_cell(_spec(module), tmp_path)
    # first call + 3 warm-up (timing.warmup=0 is raised to the floor) + 1 timed + 2 profiler steps, then one call
    # for peak memory and the output and one eager call counting the work (cell.limits)
    assert module.calls == 1 + 3 + 1 + 2 + 2
    cpu = Counting()
    (tmp_path / "cpu").mkdir()
    run_cell(_spec(cpu, backend="cpu"), tmp_path / "cpu")
    # the floor is Neuron's only; the host cell moves its inputs before its round, then calls once unrecorded
    assert cpu.calls == 1 + 0 + 1 + 1 + 2 + 2


def test_fallback_ops_hbm_and_missing_explorer_are_warnings_in_the_row(
    standin, no_explorer: None, tmp_path: Path
) -> None:
    standin.STATE.fallback_ops.append("aten::stale")  # from an earlier cell: cleared in prepare()
    standin.STATE.peak_reserved = standin.STATE.total_memory - 2 * 2**30
    cell = run_cell(_spec(Counting(fallback="aten::_fused_rms_norm")), tmp_path).cells.iloc[0]
    assert cell["neuron_fallback_ops"] == "aten::_fused_rms_norm"
    warnings = cell["warnings"].split(" | ")
    assert "1 op(s) fell back to CPU: aten::_fused_rms_norm" in warnings
    assert any(
        w.startswith("ProfileMode.DEVICE reserves about 5 GB of HBM") and "94.0 of 96.0 GiB" in w for w in warnings
    )
    assert any(w.startswith("neuron-explorer is not on PATH") for w in warnings)
    assert cell["neuron_explorer_status"] == "not_found" and math.isnan(cell["neuron_total_time_us"])
    assert cell["neuron_sources_missing"] == (
        "profiler_host_rows: no device time on key_averages()' host rows (profiler stubs); "
        "neuron_runtime: Neuron Explorer not_found; neuron_explorer: Neuron Explorer not_found"
    )


@pytest.mark.parametrize("standin", ["legacy"], indirect=True)
def test_april_2026_api_cell_end_to_end(
    standin, fake_explorer: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = standin.STATE.log
    real_step = torch.profiler.profile.step
    monkeypatch.setattr(torch.profiler.profile, "step", lambda self: (log.append("step"), real_step(self))[1])
    cell = run_cell(_spec(Counting()), tmp_path).cells.iloc[0]
    assert cell["status"] == "ok", cell["error"]
    assert cell["neuron_api"] == neuron_sdk.LEGACY and cell["neuron_correlate_device_time"] == "not_passed"
    # The runtime capture brackets exactly the profiled pass.
    start, stop = log.index("legacy-start"), log.index("legacy-stop")
    assert "step" not in log[:start] and log[start:stop].count("step") == 2 and "step" not in log[stop:]
    (session,) = standin.STATE.legacy_sessions
    assert session["pytorch_activities"] == [] and session["neuron_output_dir"] == str(
        (tmp_path / "neuron_profile").resolve()
    )
    # This API writes no framework trace into the capture: neuronexp's is copied there, as the guide advises.
    manifest = json.loads((tmp_path / cell["neuron_manifest"]).read_text())
    assert manifest["framework_trace_copied"].endswith("trace.json") and bool(cell["neuron_framework_trace"])
    # Its capture covers the whole profiled pass (here warm-up and active, no wait): the runtime trace says so.
    assert cell["neuron_explorer_status"] == "ok" and cell["device_time_source"] == "neuron_runtime"
    assert cell["neuron_capture_window"] == "warmup+active" and cell["neuron_capture_steps"] == 2
    assert cell["device_time_us"] == pytest.approx(112)


def test_a_failing_cell_is_still_a_row(standin, no_explorer: None, tmp_path: Path) -> None:
    class Broken(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            raise RuntimeError("NEFF load failed")

    cell = run_cell(_spec(Broken()), tmp_path).cells.iloc[0]
    assert cell["status"] == "error" and cell["error"] == "RuntimeError: NEFF load failed"


@pytest.mark.parametrize("active", [1, 2])
def test_stand_in_device_events_give_known_device_sums_shares_and_counts(
    standin, no_explorer: None, tmp_path: Path, active: int
) -> None:
    """With correlate_device_time=true the stand-in attaches PrivateUse1 kernels of known length to each op call
    (a hypothesis about TorchNeuron, see _device_events): the per-step sums must come out exactly."""
    standin.STATE.device_us = {"aten::mul": 40.0, "aten::mean": 10.0, "aten::add": 5.0, "aten::rsqrt": 5.0}
    results = run_cell(_spec(Counting(), active=active, correlate_device_time=True), tmp_path)
    cell = results.cells.iloc[0]
    assert cell["status"] == "ok", cell["error"]
    assert cell["device_time_source"] == "profiler_device_events" and cell["neuron_correlate_device_time"] == "taken"
    # Per profiled step: three muls, one mean, one add, one rsqrt.
    assert cell["device_time_us"] == pytest.approx(3 * 40 + 10 + 5 + 5)
    assert cell["device_ops"] == 6
    assert cell["top_op"] == "aten::mul" and cell["top_op_share"] == pytest.approx(120 / 140)
    device = results.ops[results.ops["device_type"] == "PrivateUse1"].set_index("op")
    assert device.loc["neuron_exec::aten::mul", "calls"] == 3 and device.loc[
        "neuron_exec::aten::mul", "self_device_us"
    ] == pytest.approx(120)
    assert device["device_share"].sum() == pytest.approx(1.0)
    assert not any("device time did not reach" in w for w in str(cell["warnings"]).split(" | "))


@pytest.mark.parametrize("active", [1, 2])
def test_explorer_per_op_time_fills_device_time_when_key_averages_has_none(
    standin, fake_explorer: Path, tmp_path: Path, active: int
) -> None:
    """Compiled with layer names (neuron.debug_info), the STAND-IN Explorer names each NEFF from its debug info
    (planted.NEFF_NAMES: rsqrt's has none, add's reads aten::add_); without device events or a runtime trace neuronexp
    divides its totals by the scheduled active steps, says the window is unverified, and fills the host rows."""
    standin.STATE.switches.key_averages, standin.STATE.switches.runtime_events = "none", False
    module = Counting()
    results = run_cell(_spec(module, active=active, debug_info=True), tmp_path)
    cell = results.cells.iloc[0]
    assert cell["status"] == "ok", cell["error"]
    assert module.env_at_first_call["XLA_HLO_DEBUG"] == "1" and module.env_at_first_call["XLA_IR_DEBUG"] == "1"
    assert cell["device_time_source"] == "neuron_explorer" and cell["neuron_capture_window"] == "unverified"
    # The whole step: named and matched (mul 90, mean 12), named but no host op (add_ 4), unnamed (rsqrt 6).
    assert cell["device_time_us"] == pytest.approx(3 * 30 + 12 + 4 + 6)
    assert cell["device_ops"] == 4 and cell["neuron_explorer_ops_matched"] == 2
    assert cell["neuron_explorer_ops_unmatched_us"] == pytest.approx(4.0)
    assert cell["neuron_explorer_unnamed_us"] == pytest.approx(6.0)
    assert cell["top_op"] == "aten::mul" and cell["top_op_share"] == pytest.approx(90 / 112)
    host = results.ops[results.ops["device_type"] == "CPU"].set_index("op")
    assert host.loc["aten::mean", "self_device_us"] == pytest.approx(12.0)
    # rsqrt's time Explorer could not name, sum ran nothing it named: no source split theirs, so NaN, not 0.
    assert host.loc[["aten::rsqrt", "aten::sum"], "self_device_us"].isna().all()
    warnings = cell["warnings"].split(" | ")
    assert "device time per op from Neuron Explorer's FrameworkInstruction table (2 ops)" in warnings
    assert any(w.startswith("capture window unverified") for w in warnings)
    assert "Neuron Explorer ops without a key_averages() row, in no op row: aten::add_ (4.0 us per step)" in warnings
    assert (
        "Neuron Explorer named no framework op for 6.0 us per step of device time (NEFFs without debug names): "
        "in no op row"
    ) in warnings
    # The debug variables were recorded with the cell, and are gone once it ended.
    env = json.loads((tmp_path / "env.json").read_text())["neuron_env"]
    assert env["XLA_HLO_DEBUG"] == "1" and env["TORCH_NEURONX_NEFF_CACHE_DIR"] == cell["neuron_neff_cache_dir"]
    assert cell["neuron_debug_info"] == "XLA_IR_DEBUG=1,XLA_HLO_DEBUG=1,NEURON_FRAMEWORK_DEBUG=1"
    assert "XLA_HLO_DEBUG" not in os.environ


HOST_ROWS = "profiler_host_rows: no device time on key_averages()' host rows (profiler stubs)"
NO_TABLE = "neuron_explorer: no FrameworkInstruction table (layer names need neuron.debug_info=true)"


NO_EVENTS = "profiler_device_events: key_averages() had no device events (correlate_device_time: given)"


@pytest.mark.parametrize(
    ("switches", "neuron", "source", "missing"),
    [
        ({}, {}, "profiler_device_events", f"{HOST_ROWS}; {NO_TABLE}"),
        ({"key_averages": "host_rows"}, {}, "profiler_host_rows", f"{NO_EVENTS}; {NO_TABLE}"),
        (
            {"key_averages": "none"},
            {"modes": [NeuronMode.DEVICE]},
            "none",
            f"{NO_EVENTS}; {HOST_ROWS}; neuron_runtime: ProfileMode.RUNTIME not captured; {NO_TABLE}",
        ),
        (
            {"key_averages": "none", "runtime_events": False},
            {"debug_info": True},
            "neuron_explorer",
            f"{NO_EVENTS}; {HOST_ROWS}; neuron_runtime: no nc_exec_running event in the system trace",
        ),
        (  # the modes as plain names, as a caller building the config in Python may give them
            {"key_averages": "none", "runtime_events": False},
            {"debug_info": True, "modes": ["DEVICE", "RUNTIME"]},
            "neuron_explorer",
            f"{NO_EVENTS}; {HOST_ROWS}; neuron_runtime: no nc_exec_running event in the system trace",
        ),
    ],
)
def test_each_source_that_gave_no_device_time_says_why_in_the_row(
    standin, explorer_in_process: Path, tmp_path: Path, switches: dict, neuron: dict, source: str, missing: str
) -> None:
    """neuron_sources_missing: a mode left out of the capture, a system trace without executions, a capture compiled
    without layer names, device time torch did not put on the profile: each named, for the sources that gave none."""
    for key, value in switches.items():
        setattr(standin.STATE.switches, key, value)
    cell = run_cell(_spec(Counting(), **neuron), tmp_path).cells.iloc[0]
    assert cell["status"] == "ok", cell["error"]
    assert cell["device_time_source"] == source and cell["neuron_sources_missing"] == missing


@pytest.mark.parametrize("route", ["events", "host_rows"])
def test_two_active_steps_give_figures_per_step_and_a_window_explorer_verifies(
    standin, explorer_in_process: Path, tmp_path: Path, route: str
) -> None:
    """No runtime trace: Explorer's per-op totals over the capture against key_averages()' per step (its device
    events, or the time torch's stubs put on the host rows) tell how many steps it held (2); every source's figure is
    per step, and a kernel under 1 us still counts (rsqrt's 0.5 us)."""
    standin.STATE.switches.runtime_events, standin.STATE.switches.key_averages = False, route
    standin.STATE.device_us = {"aten::mul": 40.0, "aten::mean": 10.0, "aten::add": 5.0, "aten::rsqrt": 0.5}
    cell = run_cell(_spec(Counting(), active=2, debug_info=True, correlate_device_time=True), tmp_path).cells.iloc[0]
    assert cell["status"] == "ok", cell["error"]
    assert cell["neuron_capture_window"] == "active" and cell["neuron_capture_steps"] == 2
    assert cell["neuron_capture_window_method"] == "explorer_vs_events"
    assert cell[f"neuron_device_time_{route}_us"] == pytest.approx(3 * 40 + 10 + 5 + 0.5)
    assert cell["device_time_us"] == pytest.approx(135.5) and cell["device_ops"] == 6  # per step, not per capture
    assert cell["neuron_device_time_explorer_us"] == pytest.approx(135.5) and cell["device_time_check"] == "agree"


def test_compile_options_neuron_refuses_make_an_error_row(standin, no_explorer: None, tmp_path: Path) -> None:
    spec = _spec(Counting())
    spec.config.compile.enabled, spec.config.compile.dynamic = True, True
    cell = run_cell(spec, tmp_path).cells.iloc[0]
    assert cell["status"] == "error" and cell["error"].startswith(
        'compile.dynamic=True: torch.compile(backend="neuron") rejects'
    )


def test_a_memory_snapshot_in_the_capture_is_counted(standin, no_explorer: None, tmp_path: Path) -> None:
    standin.STATE.memory_snapshot = True
    cell = run_cell(_spec(Counting()), tmp_path).cells.iloc[0]
    assert cell["neuron_memory_snapshots"] == 1


@pytest.mark.parametrize(
    ("standin", "filters"),
    [
        ("documented", ["--ignore-device-profile", "--system-trace-filter-neuron-core", "0"]),
        ("legacy", []),  # the April-2026 profiler captures its defaults whatever modes says
    ],
    indirect=["standin"],
)
def test_explorer_skips_what_was_not_captured(standin, fake_explorer: Path, tmp_path: Path, filters: list[str]) -> None:
    from neuronexp.config import NeuronMode

    cell = run_cell(_spec(Counting(), modes=[NeuronMode.RUNTIME], capture_enabled_for_nc="0"), tmp_path).cells.iloc[0]
    assert cell["status"] == "ok", cell["error"]
    (argv,) = [json.loads(line) for line in fake_explorer.read_text().splitlines()]
    assert argv[:2] == ["view", "-d"] and argv[2] == str((tmp_path / "neuron_profile").resolve())
    assert argv[7:] == filters


def test_a_failing_export_trace_is_a_note_and_the_framework_trace_is_copied(
    standin, no_explorer: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def export_fails(self, prof) -> None:  # the runtime still writes its files at the profiler's exit
        raise RuntimeError("no framework trace for you")

    monkeypatch.setattr(standin.profiling.NeuronProfiler, "export_trace", export_fails)
    cell = run_cell(_spec(Counting()), tmp_path).cells.iloc[0]
    assert cell["status"] == "ok", cell["error"]
    warnings = cell["warnings"].split(" | ")
    assert "NeuronProfiler.export_trace failed (RuntimeError: no framework trace for you)" in warnings
    assert "NeuronProfiler.export_trace wrote no framework trace under the capture root" in warnings
    assert "NeuronProfiler.export_trace left no trace.json in the capture; neuronexp copied its own there" in warnings
    (copied,) = (tmp_path / "neuron_profile").glob("*/*/trace.json")
    assert copied.read_bytes() == (tmp_path / "trace.json").read_bytes() and bool(cell["neuron_framework_trace"])


class Breaking(NaiveRMSNorm):
    def __init__(self) -> None:
        super().__init__(64)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = super().forward(x)
        torch._dynamo.graph_break()
        return y + 1


@pytest.mark.slow  # torch.compile
def test_a_compiled_cell_records_its_graph_breaks_and_fallback_mode(
    standin, no_explorer: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION", "0")
    spec = _spec(Breaking())
    # "eager": a compile backend the CPU has; the metadata is Dynamo's, whatever compiles the graphs.
    spec.config.compile.enabled, spec.config.compile.backend, spec.config.compile.fullgraph = True, "eager", False
    cell = run_cell(spec, tmp_path).cells.iloc[0]
    assert cell["status"] == "ok", cell["error"]
    assert (
        cell["neuron_graph_breaks"] == 1
        and cell["neuron_compiled_graphs"] == 2
        and cell["neuron_compile_fallback"] == "eager"
    )
    (tmp_path / "eager").mkdir()
    eager = run_cell(_spec(Counting()), tmp_path / "eager").cells.iloc[0]
    assert math.isnan(eager["neuron_graph_breaks"]) and eager["neuron_compile_fallback"] is None


def test_a_neuron_cell_reports_the_runtime_peak_memory_and_the_logical_core_roofs(
    standin, no_explorer: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from neuronexp.backends.neuron import neuron_backend

    for name in ("a", "b"):
        (tmp_path / name).mkdir()
    unknown = run_cell(_spec(Counting()), tmp_path / "a").cells.iloc[0]
    assert unknown["peak_memory_method"].startswith("neuron max_memory_allocated since the cell started")
    assert unknown["peak_memory_bytes"] == unknown["neuron_max_memory_allocated_bytes"]
    assert unknown["peak_source"].startswith("no row of peaks.yaml matches") and math.isnan(unknown["pct_peak_bw"])
    sysfs = tmp_path / "instance_type"
    sysfs.write_text("trn2.48xlarge\n")  # what the driver would report (its trn2 spelling is undocumented)
    monkeypatch.setattr(neuron_backend, "SYSFS_INSTANCE_TYPE", str(sysfs))
    monkeypatch.delenv("NEURON_LOGICAL_NC_CONFIG", raising=False)
    cell = run_cell(_spec(Counting()), tmp_path / "b").cells.iloc[0]
    assert cell["peak_bw_gbs"] == 725 and cell["peak_source"].startswith("published: Logical NeuronCore NC_V3d")
    assert cell["pct_peak_bw"] == pytest.approx(100 * cell["achieved_gbs"] / 725)


@pytest.mark.parametrize("route", ["events", "host_rows"])
def test_without_step_spans_the_window_is_the_execution_count_over_the_kernels_per_step(
    standin, explorer_in_process: Path, tmp_path: Path, route: str
) -> None:
    """A system trace without the profiled steps' spans: the capture's executions (12, two active steps) over
    key_averages()' device kernels per step (6: its device events, or the host rows torch's stubs put time on) give
    the window, and the runtime's busy time is divided by it."""
    standin.STATE.switches.step_spans, standin.STATE.switches.key_averages = False, route
    cell = run_cell(_spec(Counting(), active=2, correlate_device_time=True), tmp_path).cells.iloc[0]
    assert cell["status"] == "ok", cell["error"]
    assert cell["neuron_capture_window_method"] == "execution_count" and cell["neuron_capture_steps"] == 2
    assert cell["neuron_capture_window"] == "active" and cell["neuron_runtime_executions"] == 12
    assert cell["neuron_device_time_runtime_us"] == pytest.approx(112) and cell["device_time_check"] == "agree"
    assert cell[f"neuron_device_time_{route}_us"] == pytest.approx(112)


class SlowerSecondCycle(Counting):
    """The emulated device takes twice as long per op from the second profiling cycle on (its 8th call: the first
    call, 3 warm-up, 1 timed, the first cycle's warm-up and active step, then the second cycle's warm-up)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = super().forward(x)
        if self.calls == 8:
            import torch_neuronx

            torch_neuronx.STATE.device_us = {op: 2 * us for op, us in torch_neuronx.STATE.device_us.items()}
        return out


@pytest.mark.parametrize("route", ["events", "host_rows"])
def test_cycles_of_different_speed_are_not_taken_for_a_window_of_half_steps(
    standin, explorer_in_process: Path, tmp_path: Path, route: str
) -> None:
    """Two cycles, 112 then 224 us a step, no runtime trace: Explorer's totals over the capture (336) against the middle
    cycle's per-op time give no whole number of steps, so the window stays the schedule's (unverified) and both sources
    give the cycles' median, 168, agreeing. Matched against the first cycle instead, they would claim a window of 1.5
    steps a cycle and a disagreement that is not there."""
    standin.STATE.switches.runtime_events, standin.STATE.switches.key_averages = False, route
    spec = _spec(SlowerSecondCycle(), debug_info=True, correlate_device_time=True)
    spec.config.profiler.schedule.repeat = 2
    cell = run_cell(spec, tmp_path).cells.iloc[0]
    assert cell["status"] == "ok", cell["error"]
    assert cell["neuron_capture_window"] == "unverified" and math.isnan(cell["neuron_capture_steps"])
    assert cell["device_time_us"] == pytest.approx(168) and cell["neuron_device_time_explorer_us"] == pytest.approx(168)
    assert cell["device_time_check"] == "agree"


def test_the_manifest_holds_the_rows_neuron_figures_and_where_each_came_from(
    standin, fake_explorer: Path, tmp_path: Path
) -> None:
    """neuron_profile/manifest.json: the row's columns (NaN as null), the NEFF cache and how it was chosen, the debug
    variables set for the cell, and Neuron Explorer's run (its command, attempts, tables and per-op device time)."""
    cell = run_cell(_spec(Counting(), debug_info=True), tmp_path).cells.iloc[0]
    assert cell["status"] == "ok", cell["error"]
    manifest = json.loads((tmp_path / cell["neuron_manifest"]).read_text())
    assert manifest["api"] == cell["neuron_api"] and manifest["torch_neuronx"] == standin.__version__
    assert manifest["framework_trace_copied"] is None  # the documented API's export_trace wrote its own
    columns = dict(manifest["columns"])
    # Written when the Neuron figures are in: the cell's own notes (a noisy host, ...) come after it.
    assert set(columns.pop("warnings").split(" | ")) <= set(cell["warnings"].split(" | "))
    for key, value in columns.items():
        assert value == cell[key] or (value is None and (cell[key] is None or math.isnan(cell[key]))), key
    assert manifest["columns"]["neuron_device_time_host_rows_us"] is None  # NaN in the row
    assert {"neuron_explorer_status", "neuron_device_time_events_us", "warnings"} <= set(manifest["columns"])
    cache = manifest["neff_cache"]
    assert cache["dir"] == cell["neuron_neff_cache_dir"] and cache["chosen_by"] == "neuronexp cache"
    assert cell["neuron_neff_cache_source"] == "neuron.debug_info (a fresh folder)"  # not the pinned one
    assert Path(cache["pinned"]).is_dir() and cache["torch_neuronx_imported_before"] is True
    debug = manifest["debug_info"]["variables"]
    assert debug["XLA_HLO_DEBUG"] == "1" and debug["TORCH_NEURONX_NEFF_CACHE_DIR"] == cell["neuron_neff_cache_dir"]
    explorer = manifest["explorer"]
    assert explorer["status"] == "ok" and explorer["summary_files"] == ["Summary.parquet"]
    assert [a["command"] for a in explorer["attempts"]] == [explorer["command"]]
    assert explorer["attempts"][0]["returncode"] == 0 and explorer["schema"]["versions"] == ["7.4.0"]
    ops = explorer["device_ops"]
    assert ops["framework_us"] == {"aten::add_": 4.0, "aten::mean": 12.0, "aten::mul": 90.0}
    assert ops["framework_unnamed_us"] == 6.0


def test_explorer_refusing_the_capture_root_reads_the_one_session_folder(
    standin, fake_explorer: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A neuron-explorer that wants the folder holding trace_info.pb itself: the capture's only session is tried."""
    monkeypatch.setenv("FAKE_EXPLORER_MODE", "rootfail")
    cell = run_cell(_spec(Counting()), tmp_path).cells.iloc[0]
    assert cell["status"] == "ok", cell["error"]
    (session,) = [p for p in (tmp_path / "neuron_profile").glob("*/*") if (p / "trace_info.pb").is_file()]
    argvs = [json.loads(line) for line in fake_explorer.read_text().splitlines()]
    assert argvs[0][2] == str((tmp_path / "neuron_profile").resolve()) and argvs[-1][2] == str(session)
    assert cell["neuron_explorer_status"] == "ok" and cell["neuron_total_time_us"] == pytest.approx(403.0)
    assert any(f"processed on attempt {len(argvs)}" in w for w in cell["warnings"].split(" | "))


def test_explorer_past_its_time_limit_leaves_the_summary_columns_empty(
    standin, fake_explorer: Path, tmp_path: Path
) -> None:
    cell = run_cell(_spec(Counting(), explorer_timeout_s=0.001), tmp_path).cells.iloc[0]
    assert cell["status"] == "ok", cell["error"]
    assert cell["neuron_explorer_status"] == "timeout" and math.isnan(cell["neuron_total_time_us"])
    assert any(w.startswith("neuron-explorer view ran past 0.001 s") for w in cell["warnings"].split(" | "))
    assert cell["device_time_source"] == "profiler_device_events"  # key_averages() still gives it


@pytest.mark.parametrize(
    ("route", "source"), [("events", "profiler_device_events"), ("host_rows", "profiler_host_rows")]
)
def test_a_step_under_one_microsecond_of_device_time_is_still_device_time(
    standin, no_explorer: None, tmp_path: Path, route: str, source: str
) -> None:
    standin.STATE.switches.key_averages = route
    standin.STATE.device_us = {"aten::mul": 0.1, "aten::mean": 0.1, "aten::add": 0.1, "aten::rsqrt": 0.1}
    cell = run_cell(_spec(Counting(), correlate_device_time=True), tmp_path).cells.iloc[0]
    assert cell["status"] == "ok", cell["error"]
    assert cell["device_time_source"] == source and cell["device_time_us"] == pytest.approx(0.6)
    assert cell["device_ops"] == 6


def test_explorer_without_a_summary_still_gives_the_runtime_trace(
    standin, explorer_in_process: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Processed, but no Summary table: the system trace is read, and the Explorer source says why it gave nothing."""
    monkeypatch.setenv("FAKE_EXPLORER_MODE", "empty")
    cell = run_cell(_spec(Counting()), tmp_path).cells.iloc[0]
    assert cell["status"] == "ok", cell["error"]
    assert cell["neuron_explorer_status"] == "no_summary"
    assert cell["neuron_device_time_runtime_us"] == pytest.approx(112)
    assert cell["neuron_sources_missing"] == f"{HOST_ROWS}; {NO_TABLE}"


def test_without_copied_neffs_the_capture_warning_says_copy_neffs_is_off(
    standin, no_explorer: None, tmp_path: Path
) -> None:
    cell = run_cell(_spec(Counting(), copy_neffs=False), tmp_path).cells.iloc[0]
    assert cell["status"] == "ok", cell["error"]
    assert cell["neuron_neff_cache_dir"] is None and cell["neuron_neff_files"] == 0
    assert any(
        w.startswith(
            "no .neff files next to the .ntff files (NeuronConfig was given no neff_cache_dir "
            "(profiler.neuron.copy_neffs=false)): set profiler.neuron.neff_cache_dir"
        )
        for w in cell["warnings"].split(" | ")
    ), cell["warnings"]


def test_a_capture_without_files_is_not_given_to_explorer(
    standin, explorer_in_process: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A runtime that writes its files in export_trace, and an export_trace that fails: no session to process."""
    standin.STATE.switches.capture_written = "export"

    def export_fails(self, prof) -> None:
        raise RuntimeError("no capture for you")

    monkeypatch.setattr(standin.profiling.NeuronProfiler, "export_trace", export_fails)
    cell = run_cell(_spec(Counting()), tmp_path).cells.iloc[0]
    assert cell["status"] == "ok", cell["error"]
    assert cell["neuron_explorer_status"] == "no_capture" and cell["neuron_sessions"] == 0
    assert not explorer_in_process.exists() or not explorer_in_process.read_text()  # the tool never ran
    assert any(w.startswith("no Neuron capture files under neuron_profile/") for w in cell["warnings"].split(" | "))


def test_ops_that_take_no_device_time_leave_every_source_empty_and_say_so(
    standin, explorer_in_process: Path, tmp_path: Path
) -> None:
    """Executions in the system trace and a FrameworkInstruction table, all of zero length: NaN, not 0, and why."""
    standin.STATE.switches.key_averages = "none"
    standin.STATE.device_us = dict.fromkeys(standin.STATE.device_us, 0.0)
    cell = run_cell(_spec(Counting(), debug_info=True), tmp_path).cells.iloc[0]
    assert cell["status"] == "ok", cell["error"]
    assert cell["device_time_source"] == "none" and math.isnan(cell["device_time_us"])
    assert cell["neuron_sources_missing"] == (
        f"{NO_EVENTS}; {HOST_ROWS}; neuron_runtime: none; neuron_explorer: no device time in it"
    )
