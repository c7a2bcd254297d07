"""The noise floor a side of one run measures itself: how far its level may sit from another process's.

One run cannot see what differs from one process to the next, but its drift over its own rounds shows what the machine
was doing; a factor × that drift is added to its bootstrap draws as a log-normal process term, so noise widens the
interval instead of vetoing the call (docs/history.md, "compare with one run a side")."""

from __future__ import annotations

import numpy as np

from neuronexp.analysis.bootstrap import bootstrap_medians

# A fresh process's log level sits about FLOOR_FACTOR × (one process's drift) from another's, at one standard
# deviation. Beyond 2 the A/A false calls hardly fell in any data set of docs/methodology.md while the ×2
# calls kept falling; what is left are processes that ran steadily at levels ×5 apart, which no figure a
# process measures about itself predicts (only several runs a side do).
FLOOR_FACTOR = 2.0
# With the host reference on both sides (host.reference; compare widens by its move, host_widened), the floor need
# only hold what the reference cannot see: in 13 runs of the main study on 2 December (docs/history.md, "paired
# timing measured"), 0.5 with the reference called 4 of 936 A/A cells and 97% of ×2 regressions across runs, where
# 2 without it called 20 and 64% (1 with it: 2 and 86%). Checked again with 20 rounds a cell (9 runs, another VM):
# 0 of 432 A/A cells called, 98.3% of ×2 regressions.
REFERENCED_FLOOR_FACTOR = 0.5
# With one round, the samples (in the order taken) are cut into this many slices of at least
# FLOOR_MIN_SLICE samples each: fewer samples than 2 slices give no floor (0).
FLOOR_SLICES = 5
FLOOR_MIN_SLICE = 4
# Bootstrap draws per slice for its sampling variance: 200 put it within ~10%, at a few µs a slice.
DRIFT_RESAMPLES = 200


def time_slices(groups: list[np.ndarray]) -> list[np.ndarray]:
    """A side's time slices: its rounds, or, with one round, consecutive slices of its samples."""
    if len(groups) != 1:
        return groups
    n = min(FLOOR_SLICES, len(groups[0]) // FLOOR_MIN_SLICE)
    return np.array_split(groups[0], n) if n >= 2 else groups


def drift(groups: list[np.ndarray]) -> float:
    """How far a side's level moves between its time slices, on the log scale: the between-slice standard deviation of
    their log medians, i.e. their variance (ddof 1) less what each slice's own sampling error puts into it (the mean
    bootstrap variance of a slice's log median): scatter within a slice is already in the bootstrap, and counting it
    twice would widen quiet cells with few samples. 0 with fewer than 2 slices. A property of the side's samples alone:
    its bootstrap has a fixed seed, so a side gets one floor whatever it is compared with, or with which --seed."""
    slices = [g for g in time_slices(groups) if len(g) and np.median(g) > 0]
    rng = np.random.default_rng(0)
    if len(slices) < 2:
        return 0.0
    observed = np.var(np.log([np.median(g) for g in slices]), ddof=1)
    # np.maximum: a sample of 0 µs (a coarse clock) in a slice must not make a log of 0.
    sampling = np.mean([np.var(np.log(np.maximum(bootstrap_medians(g, rng, DRIFT_RESAMPLES), 1e-300))) for g in slices])
    return float(np.sqrt(max(observed - sampling, 0.0)))


def noise_floor(groups: list[np.ndarray], factor: float) -> float:
    """The sd, on the log scale, of the process-to-process term a side's interval carries: factor × drift."""
    return factor * drift(groups) if factor > 0 else 0.0


def process_terms(floor: float, rng: np.random.Generator, resamples: int) -> np.ndarray:
    """Multiplicative factors exp(N(0, floor²)), one per bootstrap resample: a fresh process's luck."""
    return np.exp(floor * rng.standard_normal(resamples)) if floor > 0 else np.ones(resamples)


def host_widened(ci_low: float, ci_high: float, moves: list[float]) -> tuple[float, float]:
    """A cell's B/A interval when the host itself moved by each of `moves` (B's host reference ÷ A's: host.reference).
    The union of the interval as measured and the interval with each move wholly taken out: how much of the host's move
    a cell felt lies between none and all of it, since cells do not slow alike (a memory-bound call feels the bandwidth
    the neighbours leave, a small one the core's speed). Moves that are not finite are left out."""
    low, high = ci_low, ci_high
    for move in moves:
        if np.isfinite(move) and move > 0:
            low, high = min(low, ci_low / move), max(high, ci_high / move)
    return low, high
