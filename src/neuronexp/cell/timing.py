"""The wall-clock pass: synchronized per-call samples in rounds, kept apart from the profiled pass.

A cell's latency is the median of its round medians, not the median of pooled samples: on a shared host
the time a call takes drifts by ±10% over seconds (another guest, another process), so samples taken
back to back are not independent. Rounds spread over the cell's window sample that drift, and the
spread between them is the cell's noise figure (docs/methodology.md, "Rounds").
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from neuronexp.backends import Backend
from neuronexp.config import TimingConfig
from neuronexp.host.activity import Activity, snapshot, window


@dataclass
class LatencyStats:
    samples_us: list[float]
    median_us: float  # median of the round medians
    p10_us: float  # p10/p90 over every sample
    p90_us: float
    rounds: list[int] = field(default_factory=list)  # each sample's round
    round_medians_us: list[float] = field(default_factory=list)
    activity: Activity | None = None
    warmup_calls: int = 0  # made before the samples; fewer than timing.warmup when max_seconds cut them short

    @property
    def round_spread(self) -> float:
        """(max - min) / median of the round medians: 0 with one round."""
        meds = self.round_medians_us
        return (max(meds) - min(meds)) / self.median_us if len(meds) > 1 and self.median_us > 0 else 0.0


def summarize_samples(samples_us: list[float], rounds: list[int] | None = None, warmup_calls: int = 0) -> LatencyStats:
    arr = np.asarray(samples_us, dtype=float)
    rounds = list(rounds) if rounds is not None else [0] * len(arr)
    if not arr.size:
        return LatencyStats([], math.nan, math.nan, math.nan, [], [], warmup_calls=warmup_calls)
    p10, p90 = np.percentile(arr, [10, 90])
    labels = np.asarray(rounds)
    medians = [float(np.median(arr[labels == r])) for r in sorted(set(rounds))]
    return LatencyStats(list(map(float, arr)), float(np.median(medians)), float(p10), float(p90), rounds, medians,
                        warmup_calls=warmup_calls)


def _per_round(total: int, rounds: int) -> int:
    return max(1, math.ceil(total / rounds))


def time_callable(fn: Callable[[], Any], backend: Backend, cfg: TimingConfig) -> LatencyStats:
    """Warm up, then take `rounds` rounds of up to iters/rounds samples each, `round_gap_s` apart.

    The warm-up stops after `max_seconds`, once the backend's minimum (`min_warmup_calls`) is made: a warm-up
    count meant for a fast cell must not run for hours on a slow one. On asynchronous devices the clock sees
    calls queued, so the cut comes up to a queue's depth later. Each round stops early once it has used its
    share of `max_seconds` and has min_iters/rounds samples. The machine's activity over the timed rounds is
    recorded with them.
    """
    deadline = time.perf_counter() + cfg.max_seconds
    warmup_calls = 0
    while warmup_calls < cfg.warmup and (warmup_calls < backend.min_warmup_calls or time.perf_counter() < deadline):
        fn()
        warmup_calls += 1
    backend.synchronize()
    target, minimum = _per_round(cfg.iters, cfg.rounds), _per_round(cfg.min_iters, cfg.rounds)
    budget = cfg.max_seconds / cfg.rounds
    samples: list[float] = []
    labels: list[int] = []
    before = snapshot()
    for r in range(cfg.rounds):
        if r and cfg.round_gap_s > 0:
            time.sleep(cfg.round_gap_s)
            fn()  # one call after the pause, so a round starts warm (caches, thread pool)
            backend.synchronize()
        deadline = time.perf_counter() + budget
        taken = 0
        while taken < target:
            samples.append(backend.time_call(fn))
            labels.append(r)
            taken += 1
            if taken >= minimum and time.perf_counter() > deadline:
                break
    stats = summarize_samples(samples, labels, warmup_calls)
    stats.activity = window(before, snapshot())
    return stats
