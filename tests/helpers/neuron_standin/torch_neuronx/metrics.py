"""STAND-IN `torch_neuronx.metrics` (tests only): the compilation cache's counters, as the April-2026 source names them,
counted by the emulated compiler (torch_neuronx._runtime._compile). Collection is off until set_enabled(True), as
TORCH_NEURONX_METRICS_ENABLED leaves it by default."""

from __future__ import annotations

from torch_neuronx import STATE

NAMES = (
    "CompilationCache.TotalCompilations",
    "CompilationCache.InMemoryHits",
    "CompilationCache.InMemoryMisses",
    "CompilationCache.PersistentHits",
    "CompilationCache.PersistentMisses",
)


def is_enabled() -> bool:
    return STATE.metrics_enabled


def set_enabled(enabled: bool) -> None:
    STATE.metrics_enabled = enabled


def count(name: str) -> None:
    if STATE.metrics_enabled:
        STATE.counters[name] = STATE.counters.get(name, 0) + 1


def get_counter_value(name: str) -> int | None:
    return STATE.counters.get(name, 0) if name in NAMES else None
