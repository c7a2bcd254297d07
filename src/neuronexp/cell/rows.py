"""A cell's rows (its labels, its measurements, and the three tidy tables made from them) and its env.json, the
environment fingerprint."""

from __future__ import annotations

import os
import platform
import socket
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import torch

from neuronexp.analysis.noise import NOISE_WARNING
from neuronexp.analysis.ops import cell_hotspot
from neuronexp.analysis.overrides import argument_columns
from neuronexp.backends import Backend, backend_info
from neuronexp.cell.noise_columns import join_warnings, noise_columns, profile_warning
from neuronexp.cell.profiling import ProfileResult
from neuronexp.cell.timing import LatencyStats, Stopped
from neuronexp.config import CellSpec, format_units
from neuronexp.config.fingerprint import package_version
from neuronexp.host.allocator import preload_environment
from neuronexp.host.machine import cpu_noise
from neuronexp.host.threads import host_cpus
from neuronexp.results import LABEL_COLUMNS, SCHEMAS, TABLES, Results, arrow_table, invocation
from neuronexp.results.files import write_job_tables
from neuronexp.version import __version__


@dataclass
class Measured:
    """What the timed and profiled passes of one cell produced."""

    first_call_s: float
    latency: LatencyStats
    profile: ProfileResult
    threads: int = 1  # torch intra-op threads while the cell was measured


@dataclass(frozen=True, kw_only=True)
class RowParts:
    """What a cell's rows are made of besides its labels: its measurements (None: it measured nothing), its
    error, further columns (placement, limits, warnings) and when it started."""

    measured: Measured | None
    error: str | None
    extra: dict[str, Any]
    started_at: str


def shape_label(shape: list[int]) -> str:
    """The shape as the command line writes it, so a row can be pasted back as an override."""
    return "[" + ",".join(str(int(d)) for d in shape) + "]"


class _NotStarted(Backend):
    """Labels of a cell whose process died: the backend it was placed on, never started by the writer."""

    timing_method = device_time_source = None  # type: ignore[assignment]  # it timed nothing: empty, not a method

    def __init__(self, name: str) -> None:
        self.name, self.device = name, name  # type: ignore[assignment]  # labels only, no torch.device

    def device_name(self) -> str:
        return "unknown"

    def compile_backend(self) -> str | None:  # type: ignore[override]  # never started: its default is not known here
        return None


def write_lost_cell(
    spec: CellSpec, out_dir: Path, error: str, backend_name: str, extra: dict[str, Any], started_at: str
) -> Results:
    """The error row of a cell whose own process died before writing one (killed, out of memory, crashed),
    written by the process that launched it, which never touches the device: labels and `extra` only."""
    backend = _NotStarted(backend_name)
    parts = RowParts(measured=None, error=error, extra=extra, started_at=started_at)
    tables = cell_tables(spec, backend, cell_labels(spec, backend), parts)
    write_job_tables(out_dir, tables)
    return Results.from_arrow(tables)


def cell_labels(spec: CellSpec, backend: Backend) -> dict[str, Any]:
    cfg = spec.config
    return {
        "run_id": spec.run_id,
        "experiment": spec.experiment,
        "module": spec.module_name,
        "compiled": bool(cfg.compile.enabled),
        "compile_backend": (cfg.compile.backend or backend.compile_backend()) if cfg.compile.enabled else None,
        "backend": backend.name,
        "device": str(backend.device),
        "device_name": backend.device_name(),
        "dtype": cfg.input.dtype.value,
        "input_shape": shape_label(cfg.input.shape),
        "shape_dims": [int(d) for d in cfg.input.shape],
    }


def cell_tables(spec: CellSpec, backend: Backend, labels: dict[str, Any], parts: RowParts) -> dict[str, pa.Table]:
    cfg, m, error, extra = spec.config, parts.measured, parts.error, parts.extra
    label_part = {k: labels[k] for k in (*LABEL_COLUMNS, "shape_dims")}
    who = invocation.columns()  # which invocation measured these rows, in every table
    op_rows = [dict(label_part, **row, **who) for c in (m.profile.cycles if m else []) for row in c.ops]
    cell: dict[str, Any] = dict(
        labels,
        numel=int(np.prod(cfg.input.shape)),
        overrides=spec.overrides,
        module_source="config" if spec.memory is None else "memory",
        status="ok" if error is None else "error",
        error=error,
        timing_method=backend.timing_method,
        device_time_source=backend.device_time_source,
        # One source unless the backend says otherwise (Neuron: every source it read, reconciled).
        device_time_sources=backend.device_time_source if m is not None else None,
        device_time_check="one source" if m is not None else None,
        torch_version=torch.__version__,
        neuronx_version=package_version("torch-neuronx"),
        started_at=parts.started_at,
        **who,
    )
    # Swept constructor arguments as columns of their own (after the contract's, never replacing one).
    cell.update(argument_columns(spec.overrides, taken=frozenset(SCHEMAS["cells"].names)))
    samples: list[dict[str, Any]] = []
    if m is not None:
        cell.update(measured_columns(m, op_rows, spec))
        pairs: Sequence[int | None] = m.latency.pairs or [None] * len(m.latency.samples_us)
        samples = [
            {"run_id": spec.run_id, "sample": i, "latency_us": v, "round": r, "pair": p, **who}
            for i, (v, r, p) in enumerate(zip(m.latency.samples_us, m.latency.rounds, pairs))
        ]
    warnings = join_warnings(extra.get("warnings"), cell.get("warnings"))
    cell.update(extra)
    cell["warnings"] = join_warnings(*spec.warnings, warnings)
    return {name: arrow_table(name, rows) for name, rows in zip(TABLES, ([cell], op_rows, samples))}


def _median(values: list[float | None]) -> float:
    """Median over profiler cycles: one slow cycle (the profiler's start-up, another process) cannot set it."""
    finite = [v for v in values if v is not None]
    return float(np.median(finite)) if finite else float("nan")


def measured_columns(m: Measured, op_rows: list[dict[str, Any]], spec: CellSpec | None = None) -> dict[str, Any]:
    """The row's measurement columns: latency over rounds, noise, and per-step profile medians over cycles."""
    cycles = m.profile.cycles
    device_time = _median([c.device_time_us for c in cycles])
    executed = _median([c.device_ops for c in cycles])  # `device_ops` and `ops_executed` are the same figure
    top_op, top_share = cell_hotspot(op_rows)
    ratio = device_time / m.latency.median_us if m.latency.median_us > 0 else float("nan")
    noise = noise_columns(m.latency, m.threads, format_units(host_cpus()), spec.config.noise if spec else None)
    hint = noise.pop("noise_hint")
    schedule = m.profile.schedule
    host_dispatch, host_memory = m.latency.host.medians() if m.latency.host else (None, None)
    return dict(
        latency_median_us=m.latency.median_us,
        latency_p10_us=m.latency.p10_us,
        latency_p90_us=m.latency.p90_us,
        latency_samples=len(m.latency.samples_us),
        sample_block=m.latency.block,
        first_call_s=m.first_call_s,
        device_time_us=device_time,
        cpu_time_us=_median([c.cpu_time_us for c in cycles]),
        device_ops=executed,
        ops_dispatched=_median([c.ops_dispatched for c in cycles]),
        ops_executed=executed,
        memory_per_step_bytes=_median([c.memory_bytes for c in cycles])
        if any(c.memory_bytes is not None for c in cycles)
        else None,
        profile_cycles=len(cycles),
        profile_schedule=(
            f"{schedule.wait}/{schedule.warmup}/{schedule.active}/{schedule.repeat}" if schedule else None
        ),
        profile_ratio=ratio,
        top_op=top_op,
        top_op_share=top_share,
        trace_path=str(m.profile.trace_paths[0].name) if m.profile.trace_paths else None,
        threads=m.threads,
        host_dispatch_us=host_dispatch,
        host_memory_us=host_memory,
        **_stop_columns(m.latency.stop),
        warnings=join_warnings(noise["noise"] and f"{NOISE_WARNING}{noise['noise']} ({hint})", profile_warning(ratio)),
        **noise,
    )


def _stop_columns(stop: Stopped | None) -> dict[str, Any]:
    """Why the timed pass ended and the precision it reached (cell.timing.Stopped)."""
    if stop is None:
        return {}
    met, target, reached = stop.met, stop.target, stop.reached
    return dict(timing_stop=stop.why, precision_target=target, precision_reached=reached, precision_met=met)


def git_state(cwd: Path) -> dict[str, Any]:
    """Commit and dirtiness of the working tree the user runs from (None outside a repository), asked afresh for
    every group of cells (cell.group): a Python caller's process runs many invocations, between which the tree may
    change."""

    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=5)
        except (OSError, subprocess.SubprocessError):
            return None
        return out.stdout.strip() if out.returncode == 0 else None

    if (commit := git("rev-parse", "HEAD")) is None:
        return {"git_commit": None, "git_dirty": None}
    return {"git_commit": commit, "git_dirty": bool(git("status", "--porcelain", "--untracked-files=no"))}


def environment_record(
    device_name: str, backend: str, host_alloc: dict[str, Any], threads: int, git: dict[str, Any]
) -> dict[str, Any]:
    """env.json: versions, host, device, the host's CPU settings, what the cell's process did to its host (malloc,
    threads), and `git`, the working tree's state (git_state)."""
    env = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "host": socket.gethostname(),
        "cpu_count": os.cpu_count(),
        "torch_threads": threads,
        "torch_interop_threads": torch.get_num_interop_threads(),
        "allocator": dict(host_alloc, environment=preload_environment()),
        "torch_version": torch.__version__,
        "torch_neuronx_version": package_version("torch-neuronx"),
        "neuronx_cc_version": package_version("neuronx-cc"),
        "cuda_runtime": torch.version.cuda,
        "neuronexp_version": __version__,
        "backend": backend,
        "device_name": device_name,
        # Runtime variables, and the compile-time ones that decide whether profiles carry layer names.
        "neuron_env": {
            k: v
            for k, v in os.environ.items()
            if k.startswith(("NEURON_RT_", "TORCH_NEURONX_"))
            or k in ("XLA_IR_DEBUG", "XLA_HLO_DEBUG", "NKI_DEBUG_INFO", "NEURON_FRAMEWORK_DEBUG")
        },
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
        # What the kernel does to a CPU's speed (governor, boost, SMT, isolated and tickless CPUs): compare names it
        # where A's and B's differ.
        "cpu_settings": cpu_noise(),
    }
    env.update(git)
    return env


def describe_placement(backend_name: str, device: Any) -> dict[str, Any]:
    """Where the current process runs its cell (the row's placement columns), read from the process itself
    (environment, affinity): true however it was launched, on a slot of this host or in a Slurm job's allocation."""
    return {
        "placement": backend_info(backend_name).placement(device),
        "placement_cpus": format_units(host_cpus()),
        "worker_pid": os.getpid(),
        "host": socket.gethostname(),
    }
