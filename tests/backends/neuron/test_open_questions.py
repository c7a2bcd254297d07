"""Every answer to the questions the Neuron docs leave open, against neuronexp's whole cell (run_cell over the
torch-neuronx STAND-IN, in this process): whatever the combination, the row gives the planted per-step device time,
whole and correct, or says exactly what is missing. Nothing here is Trainium; the stand-in's switches
(torch_neuronx.Switches) and the planted work (planted.py) are the only inputs.

The switches: device events reach key_averages() (with correlate_device_time=True) or not; the runtime writes its
files at the profiler's exit or inside export_trace; its capture starts at the active step or already at the warm-up;
Explorer names NEFFs from their debug info (some it cannot) or has no per-op table; the runtime trace holds
nc_exec_running events or not; the installed NeuronConfig takes correlate_device_time or not.
"""

from __future__ import annotations

import gc
import math
from itertools import product
from pathlib import Path

import pandas as pd
import pytest

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
from neuronexp.modules import NaiveRMSNorm

# planted.DEVICE_US, naive RMSNorm per step: three aten::mul of 30 us, aten::mean 12, aten::add 4, aten::rsqrt 6.
STEP_US, MUL_US, EXECUTIONS = 112.0, 90.0, 6
COMBINATIONS = list(
    product(
        [True, False],  # key_averages_events
        ["stop", "export"],  # capture_written
        ["active", "warmup"],  # capture_from
        [True, False],  # Explorer's FrameworkInstruction (NEFF debug names)
        [True, False],  # runtime_events
        ["documented", "no_correlate"],  # the NeuronConfig takes correlate_device_time, or not
    )
)


@pytest.fixture(autouse=True)
def _no_full_collection(monkeypatch: pytest.MonkeyPatch) -> None:
    """The backend's clean-up collects garbage after each cell, for device memory (a fifth of a second in a test
    process this size); here, 64 cells on the CPU, it only costs time."""
    monkeypatch.setattr(gc, "collect", lambda generation=2: 0)


def _spec() -> CellSpec:
    cfg = RunConfig(
        module=handed(NaiveRMSNorm(64)),
        input=InputConfig(shape=[1, 8, 64], dtype=DType.float32),
        backend=BackendName.neuron,
        profiler=ProfilerConfig(schedule=ScheduleConfig(wait=1, warmup=1, active=1, repeat=1)),
        timing=TimingConfig(min_seconds=0, warmup=0, iters=1, min_iters=1, max_seconds=1.0, rounds=1),
    )
    return CellSpec(config=cfg, run_id="open-questions", experiment="test", module_name="rmsnorm_naive")


def expected(events: bool, warmup: bool, names: bool, runtime: bool, accepted: bool) -> dict:
    """The row the planted work must give under these answers (see the module docstring)."""
    events = events and accepted
    verified = runtime or (events and names)
    scale = 2.0 if warmup and not verified else 1.0  # only an unverified window can leave the warm-up in
    sources = [s for s, on in (("profiler_device_events", events), ("neuron_runtime", runtime)) if on]
    sources += ["neuron_explorer"] if names else []
    source = sources[0] if sources else "none"
    return {
        "source": source,
        "sources": ",".join(sources),
        "check": "agree" if len(sources) > 1 else "one source" if sources else "no source",
        "device_time_us": STEP_US * (scale if source == "neuron_explorer" else 1.0) if sources else math.nan,
        "device_ops": {"none": math.nan, "neuron_explorer": 4.0}.get(source, float(EXECUTIONS)),
        "mul_us": MUL_US if events else MUL_US * scale if names else 0.0,  # key_averages()' own: never scaled
        "window": ("warmup+active" if warmup else "active") if verified else "unverified",
        "correlate": "passed" if accepted else "not_passed",
        "explorer_us": STEP_US * scale if names else math.nan,
    }


@pytest.mark.parametrize(
    ("events", "written", "start", "names", "runtime", "standin"),
    COMBINATIONS,
    indirect=["standin"],
    ids=lambda v: {True: "on", False: "off"}.get(v, str(v)) if isinstance(v, bool) else str(v),
)
def test_every_answer_gives_the_planted_figures_or_says_what_is_missing(
    standin,
    explorer_in_process: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    events: bool,
    written: str,
    start: str,
    names: bool,
    runtime: bool,
) -> None:
    switches = standin.STATE.switches
    switches.key_averages_events, switches.capture_written = events, written
    switches.capture_from, switches.runtime_events = start, runtime
    monkeypatch.setenv("FAKE_EXPLORER_FRAMEWORK", "on" if names else "off")
    accepted = standin.profiling.NeuronConfig.__name__ == "NeuronConfig"  # not the no_correlate variant
    want = expected(events, start == "warmup", names, runtime, accepted)
    results = run_cell(_spec(), tmp_path)
    cell = results.cells.iloc[0]
    assert cell["status"] == "ok", cell["error"]
    warnings = str(cell["warnings"]).split(" | ")
    assert cell["device_time_source"] == want["source"] and cell["device_time_sources"] == want["sources"]
    assert cell["device_time_check"] == want["check"], warnings
    assert cell["neuron_correlate_device_time"] == want["correlate"]
    assert cell["neuron_capture_window"] == want["window"]
    got = cell["device_time_us"], cell["device_ops"], cell["neuron_device_time_explorer_us"]
    assert got == pytest.approx((want["device_time_us"], want["device_ops"], want["explorer_us"]), nan_ok=True)
    host = results.ops[(results.ops["device_type"] == "CPU") & (results.ops["op"] == "aten::mul")]
    assert host["self_device_us"].sum() == pytest.approx(want["mul_us"])
    if want["mul_us"]:  # the hotspot by device time is the planted one, its share of the whole step
        assert cell["top_op"] == "aten::mul" and cell["top_op_share"] == pytest.approx(MUL_US / STEP_US)
    else:
        assert pd.isna(cell["top_op"])
    if want["source"] == "none":
        assert any(w.startswith("no device time from any source (profiler_device_events: ") for w in warnings)
    if want["window"] == "unverified" and want["source"] in ("neuron_explorer", "neuron_runtime"):
        assert any(w.startswith("capture window unverified") for w in warnings), warnings
    if want["window"] == "warmup+active" and want["source"] != "profiler_device_events":
        assert cell["neuron_capture_steps"] == 2
    # The NEFFs landed in the pinned cache and came into the capture beside the NTFF.
    assert bool(cell["neuron_neffs_beside_ntffs"]) and cell["neuron_neff_files"] == 4
    assert set(standin.STATE.compiled.values()) == {cell["neuron_neff_cache_dir"]}
