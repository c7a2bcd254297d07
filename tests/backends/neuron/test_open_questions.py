"""Every answer to the questions the Neuron docs leave open, against neuronexp's whole cell (run_cell over the
torch-neuronx STAND-IN, in this process): whatever the combination, the row gives the planted per-step device time,
whole and correct, or says exactly what is missing, and the op table holds a per-op figure only where a source split
the time per op (NaN otherwise, never 0). Nothing here is Trainium; the stand-in's switches (torch_neuronx.Switches)
and the planted work (planted.py) are the only inputs.

The switches: where device time shows in key_averages() (device events with correlate_device_time, on the host rows
as torch's profiler stubs put it, or nowhere); the runtime writes its files at the profiler's exit or inside
export_trace; its capture starts at the active step or already at the warm-up; Explorer names NEFFs from their debug
info (some it cannot) or has no per-op table; the runtime trace holds nc_exec_running events or not; the installed
NeuronConfig takes correlate_device_time, has no such parameter, or takes every keyword and drops it; the runtime's
own activity shows among the host events (typed CPU) or not; its executions' flow ids are one per execution, one
shared by all, or absent. The default run covers every combination of the switches that decide the figures (72),
the other three turning with them; `-m slow` runs the whole product (864).
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
STEP_US, MUL_US, EXECUTIONS, DISPATCHED = 112.0, 90.0, 6, 6
DECIDING = list(
    product(
        ["events", "host_rows", "none"],  # where key_averages() shows device time
        ["active", "warmup"],  # capture_from
        [True, False],  # Explorer's FrameworkInstruction (NEFF debug names)
        [True, False],  # runtime_events
        ["documented", "no_correlate", "kwargs_drop"],  # how NeuronConfig treats correlate_device_time
    )
)
OTHERS = list(product(["stop", "export"], [False, True], ["per_execution", "shared", "absent"]))
EVERY = [(*d, *o) for d, o in product(DECIDING, OTHERS)]
TURNING = [(*d, *OTHERS[(i * 5) % len(OTHERS)]) for i, d in enumerate(DECIDING)]  # 5 and 12 coprime: all 12 seen


@pytest.fixture(autouse=True)
def _no_full_collection(monkeypatch: pytest.MonkeyPatch) -> None:
    """The backend's clean-up collects garbage after each cell, for device memory (a fifth of a second in a test
    process this size); here, hundreds of cells on the CPU, it only costs time."""
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


def expected(route: str, warmup: bool, names: bool, runtime: bool, api: str) -> dict:
    """The row the planted work must give under these answers (see the module docstring)."""
    events, host = route == "events" and api == "documented", route == "host_rows"
    verified = runtime or ((events or host) and names)
    scale = 2.0 if warmup and not verified else 1.0  # only an unverified window can leave the warm-up in
    sources = [s for s, on in (("profiler_device_events", events), ("profiler_host_rows", host)) if on]
    sources += [s for s, on in (("neuron_runtime", runtime), ("neuron_explorer", names)) if on]
    source = sources[0] if sources else "none"
    per_op = source if source.startswith("profiler_") else "neuron_explorer" if names else "none"
    given = {"documented": "given", "kwargs_drop": "given", "no_correlate": "not_passed"}[api]
    return {
        "source": source,
        "sources": ",".join(sources),
        "per_op": per_op,
        "check": "agree" if len(sources) > 1 else "one source" if sources else "no source",
        "device_time_us": STEP_US * (scale if source == "neuron_explorer" else 1.0) if sources else math.nan,
        "device_ops": {"none": math.nan, "neuron_explorer": 4.0}.get(source, float(EXECUTIONS)),
        # key_averages()' own are never scaled; no per-op source: NaN, not "0 us on the device".
        "mul_us": {"none": math.nan, "neuron_explorer": MUL_US * scale}.get(per_op, MUL_US),
        "window": ("warmup+active" if warmup else "active") if verified else "unverified",
        "correlate": ("taken" if events or host else "ignored") if given == "given" else given,
        "explorer_us": STEP_US * scale if names else math.nan,
    }


def _switch(standin, monkeypatch: pytest.MonkeyPatch, combination: tuple) -> dict:
    route, start, names, runtime, api, written, rows, flows = combination
    standin.STATE.switches.__dict__.update(
        key_averages=route,
        capture_from=start,
        runtime_events=runtime,
        capture_written=written,
        runtime_rows=rows,
        flow_ids=flows,
    )
    monkeypatch.setenv("FAKE_EXPLORER_FRAMEWORK", "on" if names else "off")
    return expected(route, start == "warmup", names, runtime, api)


def _check_row(results, want: dict, runtime: bool, rows: bool) -> None:
    cell = results.cells.iloc[0]
    assert cell["status"] == "ok", cell["error"]
    warnings = str(cell["warnings"]).split(" | ")
    assert (cell["device_time_source"], cell["device_time_sources"]) == (want["source"], want["sources"])
    assert cell["device_time_check"] == want["check"], warnings
    assert cell["neuron_per_op_source"] == want["per_op"]
    assert cell["neuron_correlate_device_time"] == want["correlate"]
    assert cell["neuron_capture_window"] == want["window"]
    got = cell["device_time_us"], cell["device_ops"], cell["neuron_device_time_explorer_us"]
    assert got == pytest.approx((want["device_time_us"], want["device_ops"], want["explorer_us"]), nan_ok=True)
    if runtime:  # one execution per launch, whatever the flow ids say; busy time of six executions
        assert cell["neuron_runtime_executions_per_step"] == EXECUTIONS
        assert cell["neuron_device_time_runtime_us"] == pytest.approx(STEP_US)
    host = results.ops[results.ops["device_type"] == "CPU"]
    assert host.loc[host["op"] == "aten::mul", "self_device_us"].sum(min_count=1) == pytest.approx(
        want["mul_us"], nan_ok=True
    )
    if want["per_op"] == "none":  # no source split the time per op: said, and NaN in every host op row
        assert host["self_device_us"].isna().all() and host["device_share"].isna().all()
        assert any(w.startswith("per-op split missing: ") for w in warnings), warnings
        assert pd.isna(cell["top_op"])
    else:  # the hotspot by device time is the planted one, its share of the whole step
        assert cell["top_op"] == "aten::mul" and cell["top_op_share"] == pytest.approx(MUL_US / STEP_US)
    runtime_rows = results.ops[results.ops["device_type"] == "runtime"]
    assert len(runtime_rows) == rows and not runtime_rows["leaf"].any()  # set apart, never an operator
    assert cell["ops_dispatched"] == DISPATCHED and cell["cpu_time_us"] == pytest.approx(host["self_cpu_us"].sum())
    if want["source"] == "none":
        assert any(w.startswith("no device time from any source (profiler_device_events: ") for w in warnings)
    if want["window"] == "unverified" and want["source"] in ("neuron_explorer", "neuron_runtime"):
        assert any(w.startswith("capture window unverified") for w in warnings), warnings
    if want["window"] == "warmup+active" and not want["source"].startswith("profiler_"):
        assert cell["neuron_capture_steps"] == 2
    # The NEFFs landed in the pinned cache and came into the capture beside the NTFF; one NeuronCore reserved.
    assert bool(cell["neuron_neffs_beside_ntffs"]) and cell["neuron_neff_files"] == 4 and cell["neuron_ntff_files"] == 1


def _run(standin, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, combination: tuple) -> None:
    want = _switch(standin, monkeypatch, combination)
    results = run_cell(_spec(), tmp_path)
    _check_row(results, want, runtime=combination[3], rows=combination[6])
    assert set(standin.STATE.compiled.values()) == {results.cells.iloc[0]["neuron_neff_cache_dir"]}


def _ids(value: object) -> str:
    """A combination's test id, each answer in order ("events-active-on-on-documented-stop-off-shared"); the API
    variant given to the standin fixture is in it already."""
    if not isinstance(value, tuple):
        return "api"
    return "-".join({True: "on", False: "off"}.get(v, str(v)) if isinstance(v, bool) else str(v) for v in value)


@pytest.mark.parametrize(("standin", "combination"), [(c[4], c) for c in TURNING], indirect=["standin"], ids=_ids)
def test_every_answer_gives_the_planted_figures_or_says_what_is_missing(
    standin, explorer_in_process: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, combination: tuple
) -> None:
    _run(standin, monkeypatch, tmp_path, combination)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("standin", "combination"),
    [(c[4], c) for c in EVERY if c not in TURNING],
    indirect=["standin"],
    ids=_ids,
)
def test_every_combination_of_every_answer(
    standin, explorer_in_process: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, combination: tuple
) -> None:
    _run(standin, monkeypatch, tmp_path, combination)


def test_the_two_runs_together_are_the_whole_product() -> None:
    assert len(EVERY) == 864 and len(set(EVERY)) == 864 and len(TURNING) == 72 and set(TURNING) <= set(EVERY)
    for position, values in enumerate(zip(*TURNING)):  # the default run meets every answer of every switch
        assert set(values) == {c[position] for c in EVERY}
