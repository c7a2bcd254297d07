"""Neuron findings that belong in the cell's `warnings`, not only in a log: fallbacks, HBM, device time."""

from __future__ import annotations

import math
import os
from contextlib import suppress
from types import ModuleType
from typing import Any

import torch

DEVICE_HBM_RESERVE = 5 * 10**9  # ProfileMode.DEVICE's trace buffers on Trn2/Trn3, per the troubleshooting guide


def fallback_ops(tnx: ModuleType, warnings: list[str]) -> str:
    """Ops that ran on the CPU instead of a NeuronCore since the last `clear_op_tracking()`, comma-joined."""
    get = getattr(tnx, "get_fallback_ops", None)
    if get is None:
        return "n/a: torch_neuronx.get_fallback_ops is missing"
    ops = sorted({str(op) for op in get()})
    if ops:
        more = f" and {len(ops) - 8} more" if len(ops) > 8 else ""
        warnings.append(f"{len(ops)} op(s) fell back to CPU: {', '.join(ops[:8])}{more}")
    return ",".join(ops)


def _memory_fn(tnx: ModuleType, name: str) -> tuple[Any, str]:
    """A memory function and where it came from: torch.accelerator's where the current accelerator is this device
    (standard PyTorch; SDK 2.34 says they work on Neuron), else torch.neuron's, else torch_neuronx's."""
    accelerator = getattr(torch, "accelerator", None)
    with suppress(Exception):  # no accelerator API, or no accelerator at all
        current = accelerator.current_accelerator() if accelerator is not None else None
        if current is not None and current.type == "neuron" and hasattr(accelerator, name):
            return getattr(accelerator, name), "torch.accelerator"
    for where, owner in (("torch.neuron", getattr(torch, "neuron", None)), ("torch_neuronx", tnx)):
        if (fn := getattr(owner, name, None)) is not None:
            return fn, where
    return None, "none"


def reset_peak_memory(tnx: ModuleType) -> None:
    if (reset := _memory_fn(tnx, "reset_peak_memory_stats")[0]) is not None:
        with suppress(Exception):  # a version without per-device stats; the columns then cover the process
            reset()


def memory_columns(tnx: ModuleType) -> dict[str, Any]:
    """Peak device memory of the cell, in bytes (PyTorch's convention; TorchNeuron's unit is unconfirmed), and which
    API said it. The memory-profiling guide: the allocator is asynchronous, so synchronize before reading."""
    cols: dict[str, Any] = {
        "neuron_max_memory_allocated_bytes": math.nan,
        "neuron_max_memory_reserved_bytes": math.nan,
        "neuron_memory_source": "none",
    }
    try:
        torch.neuron.synchronize()  # type: ignore[attr-defined]  # registered by torch-neuronx
    except Exception:
        return cols
    for name in ("max_memory_allocated", "max_memory_reserved"):
        fn, where = _memory_fn(tnx, name)
        with suppress(Exception):  # memory queries differ between versions: a missing figure stays NaN
            cols[f"neuron_{name}_bytes"] = float(fn()) if fn is not None else math.nan
            cols["neuron_memory_source"] = where if fn is not None else cols["neuron_memory_source"]
    return cols


def hbm_note(tnx: ModuleType, modes: list[str], warnings: list[str]) -> None:
    """Warn when ProfileMode.DEVICE's HBM reservation no longer fits beside this cell's peak."""
    if "DEVICE" not in modes:
        return
    neuron = getattr(torch, "neuron", None)
    peak_fn = _memory_fn(tnx, "max_memory_reserved")[0]
    try:
        total = int(neuron.get_device_properties(0).total_memory)  # type: ignore[union-attr]  # None: caught below
        peak = int(peak_fn()) if peak_fn is not None else None
    except Exception:  # memory queries differ between versions; the note is best effort
        return
    if peak is not None and total > 0 and total - peak < DEVICE_HBM_RESERVE:
        warnings.append(
            f"ProfileMode.DEVICE reserves about 5 GB of HBM on Trn2/Trn3 and this cell peaked at "
            f"{peak / 2**30:.1f} of {total / 2**30:.1f} GiB: drop DEVICE from profiler.neuron.modes "
            "if it runs out of memory"
        )


def dynamo_counts() -> dict[str, int]:
    """Dynamo's process-wide graph-break and graph counters (never reset by torch._dynamo.reset())."""
    from torch._dynamo.utils import counters

    return {
        "graph_breaks": sum(counters["graph_break"].values()),
        "graphs": int(counters["stats"].get("unique_graphs", 0)),
    }


def compile_columns(before: dict[str, int] | None) -> dict[str, Any]:
    """Compile metadata of a compiled cell: Dynamo's graph breaks and graphs since its compile, and what a failed
    neuron compile does (TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION, default 1: raise; 0: run the graph eagerly)."""
    if before is None:
        return {"neuron_graph_breaks": math.nan, "neuron_compiled_graphs": math.nan, "neuron_compile_fallback": None}
    now = dynamo_counts()
    value = os.environ.get("TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION", "1").strip().lower()
    return {
        "neuron_graph_breaks": float(now["graph_breaks"] - before["graph_breaks"]),
        "neuron_compiled_graphs": float(now["graphs"] - before["graphs"]),
        "neuron_compile_fallback": "eager" if value in ("0", "false") else "raise",
    }
