"""One experiment cell, end to end: build, warm up, time, profile, and the three tables."""

from __future__ import annotations

import gc
import time
from contextlib import nullcontext
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pyarrow as pa
import torch
from torch import nn

from neuronexp.backends import Backend, resolve_backend
from neuronexp.config import ConfigError, RunConfig
from neuronexp.env import environment, package_version
from neuronexp.inputs import make_inputs, torch_dtype
from neuronexp.placement import describe as describe_placement
from neuronexp.profiling import ProfileResult, profile_callable
from neuronexp.results import LABEL_COLUMNS, TABLES, Results, arrow_table, write_job_tables, write_json
from neuronexp.timing import LatencyStats, time_callable


@dataclass
class CellSpec:
    """What the edges (cli, sweeper) hand to the core: a typed config plus the cell's labels."""

    config: RunConfig
    build_module: Callable[[], Any]
    run_id: str
    experiment: str
    module_name: str
    overrides: str = ""


@dataclass
class _Measured:
    first_call_s: float
    latency: LatencyStats
    profile: ProfileResult


def shape_label(shape: list[int]) -> str:
    """The shape as the command line writes it, so a row can be pasted back as an override."""
    return "[" + ",".join(str(int(d)) for d in shape) + "]"


def _build(spec: CellSpec, backend: Backend) -> tuple[Callable[[], Any], Any]:
    cfg = spec.config
    module = spec.build_module()
    if not isinstance(module, nn.Module):
        raise ConfigError("module._target_", cfg.module.get("_target_"), f"built a {type(module).__name__}, not a torch.nn.Module")
    dtype = torch_dtype(cfg.input.dtype)
    module = module.to(device=backend.device, dtype=dtype).eval()
    inputs = make_inputs(cfg.input, backend.device)
    model: Any = module
    if cfg.compile.enabled:
        # A fresh Dynamo per cell: earlier cells' graphs and recompile counters must not leak in.
        torch._dynamo.reset()
        model = torch.compile(
            module,
            backend=cfg.compile.backend or backend.compile_backend(),
            mode=cfg.compile.mode,
            fullgraph=cfg.compile.fullgraph,
            dynamic=cfg.compile.dynamic,
        )
    return (lambda: model(*inputs)), module


def _measure(call: Callable[[], Any], spec: CellSpec, backend: Backend, out_dir: Path) -> _Measured:
    start = time.perf_counter()
    call()
    backend.synchronize()
    first_call_s = time.perf_counter() - start
    timing = spec.config.timing
    if timing.warmup < backend.min_warmup_calls:  # the backend's floor, documented where it is set
        timing = replace(timing, warmup=backend.min_warmup_calls)
    latency = time_callable(call, backend, timing)
    with backend.profile_session(out_dir):
        profile = profile_callable(call, backend, spec.config.profiler, out_dir)
    return _Measured(first_call_s, latency, profile)


def _error_text(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".strip()


def run_cell(spec: CellSpec, out_dir: Path, raise_config_errors: bool = True) -> Results:
    """Run one cell and write its tables into `out_dir`; a failing cell becomes an `error` row.

    Raises:
        ConfigError: the backend is unavailable, or (with `raise_config_errors`) the module target
            builds something that is not an nn.Module. Nothing is written then.
    """
    cfg = spec.config
    started_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    backend = resolve_backend(cfg.backend, cfg.neuron, cfg.profiler.neuron)
    backend.prepare()
    measured: _Measured | None = None
    error: str | None = None
    grad = torch.inference_mode() if backend.name != "neuron" else torch.no_grad()
    try:
        with grad:
            call, _module = _build(spec, backend)
            measured = _measure(call, spec, backend, out_dir)
    except ConfigError as exc:
        if raise_config_errors:
            raise
        error = str(exc)
    except Exception as exc:  # failures are data: the sweep goes on with an error row
        error = _error_text(exc)
    finally:
        if backend.name != "cpu":
            # Device memory held by reference cycles (compiled graphs) must be back before the next
            # cell; on the host, reference counting suffices and a full collection costs ~0.2 s a cell.
            gc.collect()
        if backend.name == "cuda":
            torch.cuda.empty_cache()
    extra = backend.after_profile(out_dir) if measured else {}
    extra = {**describe_placement(backend.name, backend.device), **extra}
    labels = _labels(spec, backend)
    tables = _tables(spec, backend, labels, measured, error, extra, started_at)
    write_json(out_dir / "env.json", environment(labels["device_name"], backend.name))
    write_job_tables(out_dir, tables)
    return Results(*(tables[name].to_pandas() for name in TABLES))


class _NotStarted(Backend):
    """Labels of a cell whose process died: the backend it was placed on, never started by the writer."""

    timing_method = device_time_source = None  # type: ignore[assignment]

    def __init__(self, name: str) -> None:
        self.name, self.device = name, name  # type: ignore[assignment]

    def device_name(self) -> str:
        return "unknown"


def write_lost_cell(spec: CellSpec, out_dir: Path, error: str, backend_name: str, extra: dict[str, Any], started_at: str) -> Results:
    """The error row of a cell whose own process died before writing one (killed, out of memory, crashed).

    Written by the process that launched it, which never touches the device: labels and `extra` only.
    """
    backend = _NotStarted(backend_name)
    tables = _tables(spec, backend, _labels(spec, backend), None, error, extra, started_at)
    write_job_tables(out_dir, tables)
    return Results(*(tables[name].to_pandas() for name in TABLES))


def _labels(spec: CellSpec, backend: Backend) -> dict[str, Any]:
    cfg = spec.config
    return {
        "run_id": spec.run_id,
        "experiment": spec.experiment,
        "module": spec.module_name,
        "compiled": bool(cfg.compile.enabled),
        "backend": backend.name,
        "device": str(backend.device),
        "device_name": backend.device_name(),
        "dtype": cfg.input.dtype.value,
        "shape": shape_label(cfg.input.shape),
    }


def _top_op(op_rows: list[dict[str, Any]], device_time_us: float) -> tuple[str | None, float]:
    """The host op with the most self device time, averaged over cycles (the study's "hotspot")."""
    rows = [r for r in op_rows if r["device_type"] == "CPU"] or op_rows
    per_op: dict[str, list[float]] = {}
    for r in rows:
        per_op.setdefault(r["op"], []).append(r["self_device_us"])
    means = {op: sum(v) / len(v) for op, v in per_op.items()}
    top = max(means, key=means.__getitem__, default=None)
    if top is None or not means[top] > 0:
        return None, float("nan")
    return top, means[top] / device_time_us if device_time_us > 0 else float("nan")


def _tables(
    spec: CellSpec,
    backend: Backend,
    labels: dict[str, Any],
    m: _Measured | None,
    error: str | None,
    extra: dict[str, Any],
    started_at: str,
) -> dict[str, pa.Table]:
    cfg = spec.config
    label_part = {k: labels[k] for k in LABEL_COLUMNS}
    op_rows = [dict(label_part, **row) for c in (m.profile.cycles if m else []) for row in c.ops]
    cell: dict[str, Any] = dict(
        labels,
        numel=int(np.prod(cfg.input.shape)),
        overrides=spec.overrides,
        status="ok" if error is None else "error",
        error=error,
        timing_method=backend.timing_method,
        device_time_source=backend.device_time_source,
        torch_version=torch.__version__,
        neuronx_version=package_version("torch-neuronx"),
        started_at=started_at,
    )
    samples: list[dict[str, Any]] = []
    if m is not None:
        cycles = m.profile.cycles
        device_time = float(np.median([c.device_time_us for c in cycles])) if cycles else float("nan")
        top_op, top_share = _top_op(op_rows, device_time)
        cell.update(
            latency_median_us=m.latency.median_us,
            latency_p10_us=m.latency.p10_us,
            latency_p90_us=m.latency.p90_us,
            latency_samples=len(m.latency.samples_us),
            first_call_s=m.first_call_s,
            device_time_us=device_time,
            cpu_time_us=float(np.median([c.cpu_time_us for c in cycles])) if cycles else float("nan"),
            device_ops=float(np.median([c.device_ops for c in cycles])) if cycles else float("nan"),
            top_op=top_op,
            top_op_share=top_share,
            trace_path=str(m.profile.trace_paths[0].name) if m.profile.trace_paths else None,
        )
        samples = [{"run_id": spec.run_id, "sample": i, "latency_us": v} for i, v in enumerate(m.latency.samples_us)]
    cell.update(extra)
    return {"cells": arrow_table("cells", [cell]), "ops": arrow_table("ops", op_rows), "samples": arrow_table("samples", samples)}
