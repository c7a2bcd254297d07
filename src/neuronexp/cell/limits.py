"""How far a cell is from its limits, after its timed and profiled passes: one more call for its peak memory and
its output (for the output check: cell.output), its work (cell.work), the roofs it is held against
(published peaks or this host's probe) and the roofline columns (analysis.roofline). Only a failure of that call
fails the cell; any other part that fails leaves its columns empty and says why.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from neuronexp.analysis.peaks import Peak, given_peak, published_peak
from neuronexp.analysis.roofline import roofline_columns
from neuronexp.backends import Backend, backend_info
from neuronexp.cell.build import Built
from neuronexp.cell.output import nonfinite, save_float32_output, save_output
from neuronexp.cell.profiling import ProfileResult
from neuronexp.cell.rows import Measured
from neuronexp.cell.work import Work, count_work, listed_work
from neuronexp.config import CellSpec, ProbeMode
from neuronexp.config.input_specs import compute_dtype
from neuronexp.host.cache_dir import default_cache_dir
from neuronexp.host.probe import host_roofs, quiet
from neuronexp.results import JOBS_MANIFEST


@dataclass
class Limits:
    columns: dict[str, Any]
    host_roofs: dict[str, Any] | None = None  # the probe's entry, for env.json (CPU cells)
    notes: list[str] = field(default_factory=list)


def _invocation(out_dir: Path) -> str:
    """What one run is for the probe (it measures again at most once per run): the sweep directory of a sweep's
    cell, else the run directory."""
    return str(out_dir.parent if (out_dir.parent / JOBS_MANIFEST).is_file() else out_dir)


def host_peak(entry: dict[str, Any], dtype: str) -> Peak:
    """The probe's roofs: the faster of copy and triad, the GEMM rate in `dtype`, and when and under what load
    they were measured (peak_source)."""
    stream, gemm = entry["stream"], entry.get("gemm", {}).get(dtype)
    figures = [stream, *([gemm] if gemm else [])]
    threads = f"{entry['threads']} thread{'s' if entry['threads'] != 1 else ''}"
    source = (
        f"host probe, {threads}, {str(stream['probed_at'])[:16]}: copy {stream['copy_gbs']:.1f} / "
        f"triad {stream['triad_gbs']:.1f} GB/s" + (f", GEMM {gemm['tflops'] * 1e3:.3g} GFLOP/s" if gemm else "")
    )
    others = max((f.get("other_cpu") or 0.0) for f in figures)
    load = f", load {stream['load_1m']:g}" if stream.get("load_1m") is not None else ""
    if all(quiet(f) for f in figures):
        source += f" (quiet: others used {others:g} cores{load})"
    else:
        source += f" (disturbed: others used up to {others:g} cores{load}; the roofs may be low)"
    return Peak(max(stream["copy_gbs"], stream["triad_gbs"]), gemm["tflops"] if gemm else None, source)


def cell_roofs(spec: CellSpec, backend: Backend, out_dir: Path) -> tuple[Peak, dict[str, Any] | None]:
    cfg = spec.config.roofline
    dtype = compute_dtype(spec.config.input)  # the roofs of the dtype it computes in, not of its token ids
    entry = None
    if (peaks_key := backend_info(backend.name).peaks_key) is not None:
        peak = published_peak(peaks_key, backend.peak_hint(), dtype)
    elif cfg.probe == ProbeMode.off:
        peak = Peak(None, None, "not measured (roofline.probe=off)")
    else:
        cache_dir = Path(cfg.cache_dir).expanduser() if cfg.cache_dir else default_cache_dir()
        entry = host_roofs(getattr(torch, dtype), _invocation(out_dir), cfg.probe == ProbeMode.refresh, cache_dir)
        peak = host_peak(entry, dtype)
    return given_peak(peak, cfg.peak_bw_gbs, cfg.peak_tflops), entry


def _output_columns(spec: CellSpec, out: Any, out_dir: Path) -> dict[str, Any]:
    check = spec.config.correctness
    cols: dict[str, Any] = {"output_rtol": check.rtol, "output_atol": check.atol}
    if not check.enabled:
        return {**cols, "output_check": "off", "output_note": "correctness.enabled=false"}
    try:
        saved = save_output(out, out_dir)
    except Exception as exc:  # an output neuronexp cannot read back (an exotic type): not checked, said so
        return {**cols, "output_check": "n/a", "output_note": f"output not saved: {type(exc).__name__}: {exc}"}
    cols["output_tensors"], cols["output_nonfinite"] = len(saved), nonfinite(saved)
    if not saved:  # still saved (empty): a variant computing nothing must fail against a baseline that returns tensors
        return {**cols, "output_check": "n/a", "output_note": f"the module returned no tensor (a {type(out).__name__})"}
    note = "nothing to compare yet: a sweep checks it against its baseline cell's output"
    return {**cols, "output_check": "no baseline", "output_note": note}


def profiled_flops(profile: ProfileResult | None) -> float | None:
    """FLOPs per step from the profiled pass (profiler.with_flops), the median over its cycles; None when off."""
    per_cycle = [
        sum(r["flops"] for r in c.ops if r.get("flops") is not None)
        for c in (profile.cycles if profile else [])
        if any(r.get("flops") is not None for r in c.ops)
    ]
    return float(statistics.median(per_cycle)) if per_cycle else None


def _work(built: Built, out: Any, profile: ProfileResult | None) -> Work:
    try:
        return count_work(built.module, built.args, built.kwargs)
    except Exception as exc:  # an operator the counting modes cannot run through: the fallback, and why
        why = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        return listed_work(built.module, built.args, built.kwargs, out, profiled_flops(profile), why)


def measure_limits(built: Built, measured: Measured, spec: CellSpec, backend: Backend, out_dir: Path) -> Limits:
    """The row's work, roofline, peak-memory and output columns (results.contract documents each)."""
    notes: list[str] = []
    out, peak_bytes = backend.call_memory(built.call)
    columns: dict[str, Any] = {
        "peak_memory_bytes": peak_bytes if math.isfinite(peak_bytes) else None,
        "peak_memory_method": backend.memory_method,
    }
    columns.update(_output_columns(spec, out, out_dir))
    if columns.get("output_tensors") and spec.config.correctness.float32_reference:  # 16-bit cells
        note = save_float32_output(built.module, built.args, built.kwargs, out_dir)
        notes += [note] if note else []
    work = _work(built, out, measured.profile)
    del out
    if work.fallback:
        notes.append(str(work.note))
    columns.update(
        bytes_min=work.bytes_min,
        bytes_read=work.bytes_read,
        bytes_written=work.bytes_written,
        flops=work.flops if math.isfinite(work.flops) else None,
        flops_note=work.note,
    )
    entry = None
    try:
        peak, entry = cell_roofs(spec, backend, out_dir)
    except Exception as exc:  # a probe that cannot allocate or a damaged table: no roofs, said so
        peak = Peak(None, None, f"no roofs: {type(exc).__name__}: {exc}")
    columns["peak_source"] = peak.source
    columns.update(
        roofline_columns(
            columns.get("bytes_min"), columns.get("flops"), measured.latency.median_us, peak.bandwidth_gbs, peak.tflops
        )
    )
    return Limits(columns, entry, notes)
