"""The host reference (host.reference): each round starts each workload with one unrecorded call, so that a cold
start (the caches a cell's timing left, a first touch) is never one of its samples (issue 32's mutation audit).
On a fake clock, with workloads whose first two calls of a round are slow."""

from __future__ import annotations

import types

import pytest
import torch

import neuronexp.host.reference as reference


def test_a_rounds_cold_calls_are_not_its_samples(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = {"ns": 0, "mul": 0}

    def add(*args, **kwargs) -> None:
        clock["ns"] += 1_000  # 1 µs, always

    def mul(*args, **kwargs) -> None:
        clock["mul"] += 1
        clock["ns"] += 5_000_000 if clock["mul"] <= 2 else 10_000  # 5 ms twice (cold), then 10 µs

    fake_torch = types.SimpleNamespace(ones=torch.ones, empty=torch.empty, add=add, mul=mul)
    monkeypatch.setattr(reference, "torch", fake_torch)
    fake_time = types.SimpleNamespace(perf_counter_ns=lambda: clock["ns"], perf_counter=lambda: clock["ns"] / 1e9)
    monkeypatch.setattr(reference, "time", fake_time)
    host = reference.HostReference()
    host.measure()
    # The memory workload's three samples follow its one warm call: one cold sample at most, so its median is warm.
    assert host.times.memory_us == [10.0] and host.times.dispatch_us == [1.0]
    assert clock["mul"] == 1 + reference._MEMORY_CALLS
