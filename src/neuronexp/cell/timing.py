"""The wall-clock pass: synchronized per-call samples, kept apart from the profiled pass."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from neuronexp.backends import Backend
from neuronexp.config import TimingConfig


@dataclass
class LatencyStats:
    samples_us: list[float]
    median_us: float
    p10_us: float
    p90_us: float
    warmup_calls: int = 0  # made before the samples; fewer than timing.warmup when max_seconds cut them short


def summarize_samples(samples_us: list[float], warmup_calls: int = 0) -> LatencyStats:
    arr = np.asarray(samples_us, dtype=float)
    p10, med, p90 = np.percentile(arr, [10, 50, 90]) if arr.size else (np.nan, np.nan, np.nan)
    return LatencyStats(list(map(float, arr)), float(med), float(p10), float(p90), warmup_calls)


def time_callable(fn: Callable[[], Any], backend: Backend, cfg: TimingConfig) -> LatencyStats:
    """Warm up, then take up to `iters` samples, stopping after `max_seconds` once `min_iters` are in.

    The warm-up stops after `max_seconds` too, once the backend's minimum (`min_warmup_calls`) is made: a
    warm-up count meant for a fast cell must not run for hours on a slow one. On asynchronous devices the
    clock sees calls queued, so the cut comes up to a queue's depth later.
    """
    deadline = time.perf_counter() + cfg.max_seconds
    warmup_calls = 0
    while warmup_calls < cfg.warmup and (warmup_calls < backend.min_warmup_calls or time.perf_counter() < deadline):
        fn()
        warmup_calls += 1
    backend.synchronize()
    samples: list[float] = []
    deadline = time.perf_counter() + cfg.max_seconds
    while len(samples) < cfg.iters:
        samples.append(backend.time_call(fn))
        if len(samples) >= cfg.min_iters and time.perf_counter() > deadline:
            break
    return summarize_samples(samples, warmup_calls)
