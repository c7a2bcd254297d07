"""Two fixed workloads timed beside every cell, after its timing rounds: how fast this host itself was, then.

No figure a run measures about a cell tells a host that got ×1.5 slower from code that did; these workloads never
change, so when they moved between two runs, the host did, and compare widens a cell's interval by that move
(analysis.floor.host_widened). Two, as cells do not slow alike: `dispatch`, a 16-element add (the dispatcher and a
core's speed, what small calls are made of), and `memory`, a multiply over 16 MiB (the bandwidth large calls need).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

# Change a workload and earlier runs' figures mean something else: give its column (host_*_us) a new name then.
_DISPATCH_CALLS, _MEMORY_CALLS = 25, 3  # ~0.3 ms and ~3 ms a round on the 2-vCPU VM of docs/methodology.md
_MEMORY_ELEMENTS = 4 * 1024 * 1024  # float32: 16 MiB read, 16 MiB written, past a core's L2
# The host's speed moves over seconds (cell.timing), so a reference more often than this tells nothing more, and the
# default's rounds are this long (timing.min_seconds 0.5 over 20 rounds): each of them still ends with one. Rounds of
# a near-empty cell take microseconds; timed after each, the reference was most of such a cell's cost (issue 47).
EVERY_S = 0.025


@dataclass
class ReferenceTimes:
    """Each round's median time of the two workloads, in µs."""

    dispatch_us: list[float]
    memory_us: list[float]

    def medians(self) -> tuple[float, float]:
        """The medians over rounds (NaN without rounds)."""
        return _median(self.dispatch_us), _median(self.memory_us)


class HostReference:
    """The workloads' tensors, made once for a timing pass; `measure` times one round of each."""

    def __init__(self) -> None:
        self.small, self.small_out = torch.ones(16), torch.empty(16)
        self.large, self.large_out = torch.ones(_MEMORY_ELEMENTS), torch.empty(_MEMORY_ELEMENTS)
        self.times = ReferenceTimes([], [])
        self.last = time.perf_counter()  # the pass's start, then each measurement's end
        self.owed = True  # rounds were taken since the last measurement (or none yet: the pass owes one)

    def after_round(self) -> None:
        """Measure after a round once EVERY_S have passed since the last measurement (or the pass began)."""
        self.owed = True
        if time.perf_counter() - self.last >= EVERY_S:
            self.measure()

    def close(self) -> None:
        """After the last round: measure, unless a measurement already followed it."""
        if self.owed:
            self.measure()

    def measure(self) -> None:
        """Time one round of both (after one unrecorded call each: a round starts warm, as a cell's does)."""
        small, large = (self.small, self.small_out), (self.large, self.large_out)
        self.times.dispatch_us.append(_median_us(lambda: torch.add(small[0], 1.0, out=small[1]), _DISPATCH_CALLS))
        self.times.memory_us.append(_median_us(lambda: torch.mul(large[0], 1.0001, out=large[1]), _MEMORY_CALLS))
        self.last, self.owed = time.perf_counter(), False


def _median(values: list[float]) -> float:
    return float(np.median(values)) if values else float("nan")


def _median_us(fn: Callable[[], object], calls: int) -> float:
    fn()
    samples = []
    for _ in range(calls):
        start = time.perf_counter_ns()
        fn()
        samples.append((time.perf_counter_ns() - start) / 1e3)
    return float(np.median(samples))
