"""What TorchNeuron says of its compiles, per cell: its compilation cache's counters (`torch_neuronx.metrics`, as the
April-2026 source has them: compilations, in-memory and persistent hits) and, for a compiled cell, the
time each graph's compile took (`torch.neuron.get_dynamo_metrics()`, the torch.compile reference's helper API).
Read before the cell and after it; where a version has neither, the columns are NaN (docs/neuron.md)."""

from __future__ import annotations

import math
from contextlib import suppress
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import torch

COUNTERS = {  # column -> the counters summed into it: NEFFs compiled (missed by both caches); found in either
    "neuron_compilations": ("CompilationCache.TotalCompilations",),
    "neuron_compile_cache_hits": ("CompilationCache.InMemoryHits", "CompilationCache.PersistentHits"),
}
# NeuronCompilationMetrics' phases of one graph's compile, in microseconds (April-2026 source).
PHASES = ("torch_neuronx_fx_passes_us", "torch_neuronx_lower_us", "torch_neuronx_compile_us")


def _metrics(tnx: ModuleType) -> Any:
    with suppress(ImportError):
        return __import__(f"{tnx.__name__}.metrics", fromlist=["get_counter_value"])
    return None


def _counters(tnx: ModuleType) -> dict[str, float]:
    """The cache's counters now (NaN each where this version has none)."""
    metrics = _metrics(tnx)
    get = getattr(metrics, "get_counter_value", None)
    out = {}
    for name, keys in COUNTERS.items():
        try:
            values = [get(k) for k in keys] if get is not None else [None]
        except Exception:  # a binding that refuses a name this version does not keep
            values = [None]
        out[name] = (
            math.nan if any(v is None for v in values) else float(sum(float(v) for v in values if v is not None))
        )
    return out


def _graphs(tnx: ModuleType) -> list[Any] | None:
    """torch.compile's per-graph compile records so far (torch.neuron's helper, else torch_neuronx's), None: none."""
    get = getattr(getattr(torch, "neuron", None), "get_dynamo_metrics", None) or getattr(
        tnx, "get_dynamo_metrics", None
    )
    if get is None:
        return None
    try:
        return list(get())
    except Exception:  # an older version's helper that needs what this process lacks
        return None


@dataclass
class CompileMetrics:
    """The counters and graph records when the cell started (enable() turns collection on where it is off)."""

    tnx: ModuleType
    counters: dict[str, float] = field(default_factory=dict)
    graphs: int | None = None

    def start(self) -> None:
        # Collection is off by default (TORCH_NEURONX_METRICS_ENABLED): turned on whatever is_enabled() says or fails
        # to say (on already, set_enabled(True) changes nothing); a version without it gives NaN counters.
        with suppress(Exception):
            _metrics(self.tnx).set_enabled(True)
        self.counters = _counters(self.tnx)
        graphs = _graphs(self.tnx)
        self.graphs = len(graphs) if graphs is not None else None

    def columns(self, compiled: bool) -> dict[str, float]:
        """The cell's compiles: compilations, cache hits and misses since start(); for a compiled cell, the seconds
        its graphs' compiles took (NaN for an eager cell: its ops compile inside the first call, `first_call_s`)."""
        now = _counters(self.tnx)
        cols = {column: now[column] - self.counters.get(column, math.nan) for column in COUNTERS}
        graphs = _graphs(self.tnx) if compiled else None
        cols["neuron_compile_s"] = (
            sum(float(getattr(g, p, 0) or 0) for g in graphs[self.graphs :] for p in PHASES) / 1e6
            if graphs is not None and self.graphs is not None and len(graphs) > self.graphs
            else math.nan
        )
        return cols
