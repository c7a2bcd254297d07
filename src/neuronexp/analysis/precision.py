"""`timing.precision`: when a comparison group has been timed long enough. Every ratio between two of its cells must be
known within ±target (its paired bootstrap's 95% interval within a factor 1 + target of the estimate): the rule looks
at the interval's width, never at where it lies, so stopping cannot pick a side (docs/timing.md, "Sampling to a
precision"). A quick estimate from the round medians says when to ask the bootstrap, which has the last word."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np

from neuronexp.analysis.paired import paired_ratio

Z95 = 1.959963984540054
# The quick estimate's calibration against the bootstrap, kept within these bounds: a freak bootstrap (two rounds in
# one place) must not make the next quick estimates meaningless either way.
_SCALE = (0.25, 4.0)


def log_halfwidth(point: float, low: float, high: float) -> float:
    """How far the interval reaches from the estimate, the farther side, on the log scale (inf when unknown)."""
    if not (point > 0 and low > 0 and high > 0):
        return math.inf
    return max(math.log(high / point), math.log(point / low))


class PrecisionRule:
    """The rule for one group of `calls` timed together: `add_round` after each round, then `met` says whether to stop.
    `reached` is the relative half-width of the widest interval at the last bootstrap (NaN before one ran)."""

    def __init__(self, target: float, min_rounds: int, calls: int) -> None:
        self.target, self.min_rounds = target, min_rounds
        self.limit = math.log1p(target)
        self.ratios = list(itertools.combinations(range(calls), 2))
        self.round_logs: dict[tuple[int, int], list[float]] = {p: [] for p in self.ratios}
        self.scale = dict.fromkeys(self.ratios, 1.0)  # bootstrap ÷ quick half-width, from the last bootstrap
        self.reached = math.nan
        self.bootstraps = 0  # how often the bootstrap was asked (each costs up to ~0.07 s a ratio)

    @property
    def rounds(self) -> int:
        return len(next(iter(self.round_logs.values()), []))

    def add_round(self, times: Sequence[Sequence[float]]) -> None:
        """One round's samples of each call, aligned by pair: its median log ratio for every two calls."""
        logs = np.log(np.asarray(times, dtype=float))
        for i, j in self.ratios:
            d = logs[i] - logs[j]
            d = d[np.isfinite(d)]
            self.round_logs[(i, j)].append(float(np.median(d)) if d.size else math.nan)

    def quick(self) -> float:
        """The widest half-width (log scale) by the round medians' spread: z · sd / √rounds, each ratio scaled by its
        last bootstrap. Cheap (microseconds), only a trigger: the stop itself is the bootstrap's."""
        k = self.rounds
        if k < 2:
            return math.inf
        widest = 0.0
        for pair, logs in self.round_logs.items():
            sd = float(np.nanstd(logs, ddof=1))
            widest = max(widest, self.scale[pair] * Z95 * sd / math.sqrt(k) if math.isfinite(sd) else math.inf)
        return widest

    def met(self, samples: Sequence[Sequence[float]], rounds: Sequence[int]) -> bool:
        """Whether every ratio is known within the target: after min_rounds, once the quick estimate says so, by the
        bootstrap (analysis.paired.paired_ratio, the interval the speedup columns will show)."""
        if self.rounds < self.min_rounds or self.quick() > self.limit:
            return False
        return self.measure(samples, rounds) <= self.limit

    def measure(self, samples: Sequence[Sequence[float]], rounds: Sequence[int]) -> float:
        """The bootstrap's widest half-width (log scale); sets `reached` and recalibrates the quick estimate."""
        quick = {pair: self._quick_one(pair) for pair in self.ratios}
        widest = 0.0
        labels = np.asarray(rounds)
        for i, j in self.ratios:
            width = log_halfwidth(*paired_ratio(np.asarray(samples[i]), np.asarray(samples[j]), labels))
            if math.isfinite(width) and quick[(i, j)] > 0:
                self.scale[(i, j)] = min(max(width / quick[(i, j)], _SCALE[0]), _SCALE[1])
            widest = max(widest, width)
        self.bootstraps += 1
        self.reached = math.expm1(widest)
        return widest

    def _quick_one(self, pair: tuple[int, int]) -> float:
        logs = self.round_logs[pair]
        k = len(logs)
        return Z95 * float(np.nanstd(logs, ddof=1)) / math.sqrt(k) if k > 1 else math.inf
