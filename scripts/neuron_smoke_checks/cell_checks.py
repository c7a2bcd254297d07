"""G: whole neuronexp cells as a user runs them: the default schedule, a compiled cell through the normal cell path, a
two-cell sweep through the fork server, and every device-time source checked against the others."""

from __future__ import annotations

import json
import os
from typing import Any

from neuron_smoke_checks import Context, check

KEEP = (
    "status",
    "error",
    "profile_schedule",
    "latency_median_us",
    "device_time_us",
    "device_time_source",
    "device_time_sources",
    "device_time_check",
    "device_ops",
    "top_op",
    "top_op_share",
    "neuron_correlate_device_time",
    "neuron_device_time_events_us",
    "neuron_device_time_runtime_us",
    "neuron_device_time_explorer_us",
    "neuron_runtime_executions",
    "neuron_capture_window",
    "neuron_capture_window_method",
    "neuron_capture_steps",
    "neuron_neff_cache_dir",
    "neuron_neff_cache_source",
    "neuron_neffs_beside_ntffs",
    "neuron_neff_files",
    "neuron_explorer_status",
    "neuron_graph_breaks",
    "neuron_compiled_graphs",
    "worker_pid",
    "warnings",
)


def _row(cell: dict[str, Any]) -> str:
    return json.dumps({k: cell.get(k) for k in KEEP}, indent=1, default=str)


def _cell(ctx: Context, name: str, compiled: bool = False, schedule: Any = None) -> dict[str, Any]:
    """One naive RMSNorm cell through neuronexp's cell path (run_cell), with the given schedule (None: the default)."""
    from neuronexp.cell.group import run_cell
    from neuronexp.config import (
        BackendName,
        CellSpec,
        CompileConfig,
        DType,
        InputConfig,
        ProfilerConfig,
        RunConfig,
        ScheduleConfig,
        TimingConfig,
    )

    shape = [int(d) for d in ctx.args.shape.split(",")]
    cfg = RunConfig(
        module={"_target_": "neuronexp.modules.NaiveRMSNorm", "hidden_size": shape[-1]},
        input=InputConfig(shape=shape, dtype=DType.bfloat16),
        backend=BackendName.neuron,
        profiler=ProfilerConfig(schedule=schedule or ScheduleConfig()),
        timing=TimingConfig(warmup=3, iters=20, max_seconds=10),
        compile=CompileConfig(enabled=compiled, fullgraph=True),
    )
    job = ctx.work / f"g-{name}"
    job.mkdir(parents=True, exist_ok=True)
    spec = CellSpec(config=cfg, run_id=f"smoke-{name}", experiment="smoke", module_name=name)
    cell = run_cell(spec, job).cells.iloc[0].to_dict()
    ctx.rows[name] = cell
    return cell


@check("G1", "the default schedule (2/1/1/1): a whole row, device time from some source, the capture window found")
def g1_default_schedule(ctx: Context) -> tuple[str, str]:
    cell = _cell(ctx, "default")
    whole = cell["status"] == "ok" and cell["device_time_source"] != "none"
    found = cell.get("neuron_capture_window") not in (None, "unverified")
    return ("PASS" if whole and found else "FAIL" if not whole else "INFO"), _row(cell)


@check("G2", "a compiled cell (backend neuron, fullgraph) through neuronexp's cell path: one graph, device time")
def g2_compiled_cell(ctx: Context) -> tuple[str, str]:
    if ctx.args.skip_compile:
        return "SKIP", "--skip-compile"
    cell = _cell(ctx, "compiled", compiled=True)
    ok = cell["status"] == "ok" and cell.get("neuron_compiled_graphs") == 1 and cell["device_time_source"] != "none"
    return ("PASS" if ok else "FAIL"), _row(cell)


@check("G3", "a two-cell sweep (naive, fused) through the fork server: each cell in its own process, one NEFF cache")
def g3_sweep(ctx: Context) -> tuple[str, str]:
    import neuronexp

    shape = "[" + ctx.args.shape + "]"
    out = ctx.work / "g3-sweep"
    res = neuronexp.sweep(
        "module=rmsnorm_naive,rmsnorm_fused", "backend=neuron", f"input.shape={shape}", "input.dtype=bfloat16", out=out
    )
    rows = res.cells.to_dict("records")
    forked = all(r.get("worker_pid") not in (None, os.getpid()) for r in rows)
    caches = {r.get("neuron_neff_cache_dir") for r in rows}
    ok = len(rows) == 2 and all(r["status"] == "ok" and r["device_time_source"] != "none" for r in rows)
    detail = f"forked: {forked}; NEFF caches: {sorted(map(str, caches))}\n" + "\n".join(_row(r) for r in rows)
    return ("PASS" if ok and forked and len(caches) == 1 else "FAIL"), detail


@check("G4", "each device-time source against the others (key_averages(), runtime trace, Explorer per-op): agree")
def g4_sources(ctx: Context) -> tuple[str, str]:
    cell = ctx.rows.get("default")
    if cell is None:
        return "SKIP", "no row from G1"
    figures = {k: cell.get(f"neuron_device_time_{k}_us") for k in ("events", "runtime", "explorer")} | {
        "latency_median_us": cell.get("latency_median_us")
    }
    detail = f"{json.dumps(figures, default=str)}\nsources: {cell.get('device_time_sources')!r}, check: " + str(
        cell.get("device_time_check")
    )
    verdict = {"agree": "PASS", "disagree": "FAIL", "no source": "FAIL"}.get(str(cell.get("device_time_check")), "INFO")
    return verdict, detail
