"""Speedups over the baseline with their intervals: paired where the cell and its baseline were timed together
(the median per-pair ratio, which cancels the host's drift), unpaired otherwise (the ratio of medians, whose
row says so); which in `speedup_method`. The estimators and their intervals: docs/timing.md, "Paired timing"."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from neuronexp.analysis.samples import samples_by_run
from neuronexp.analysis.stats import compare_rounds
from neuronexp.results import usable_cells

SPEEDUP_COLUMNS = ["run_id", "speedup", "ci_low", "ci_high", "method"]
UNPAIRED_NOTE = (
    "speedup unpaired: this cell and its baseline were not timed together, so drift between their windows is in it"
)


def paired_ratio(
    base_us: np.ndarray,
    cell_us: np.ndarray,
    rounds: np.ndarray | None = None,
    seed: int = 0,
    resamples: int = 2000,
    level: float = 0.95,
) -> tuple[float, float, float]:
    """(speedup, interval low, high) from per-pair times aligned by pair, in time order, each pair's round. The speedup
    is the median of the per-pair ratios. With rounds, its interval is a hierarchical bootstrap over rounds then pairs
    (pooled_round_medians): the ratio itself moves between rounds on a shared host (each round is another placement of
    the inputs, and the variants do not all slow down alike when a neighbour takes memory bandwidth), and an interval
    over pairs alone would not see it. With one round: a moving-block bootstrap over pairs."""
    ratios = np.asarray(base_us, dtype=float) / np.asarray(cell_us, dtype=float)
    keep = np.isfinite(ratios) & (ratios > 0)
    ratios = ratios[keep]
    n = len(ratios)
    if n == 0:
        return math.nan, math.nan, math.nan
    rng = np.random.default_rng(seed)
    tail = (1 - level) / 2 * 100
    labels = np.asarray(rounds)[keep] if rounds is not None else None
    point = float(np.median(ratios))
    if labels is not None and len(set(labels.tolist())) > 1:
        groups = [ratios[labels == r] for r in sorted(set(labels.tolist()))]
        low, high = np.percentile(pooled_round_medians(groups, rng, resamples), [tail, 100 - tail])
        return point, float(low), float(high)
    if n < 3:
        return point, math.nan, math.nan
    block = max(1, math.ceil(n ** (1 / 3)))
    per = math.ceil(n / block)
    starts = rng.integers(0, n - block + 1, size=(resamples, per))
    idx = (starts[:, :, None] + np.arange(block)).reshape(resamples, -1)[:, :n]
    low, high = np.percentile(np.median(ratios[idx], axis=1), [tail, 100 - tail])
    return point, float(low), float(high)


# At most this many values a bootstrap resample: a fast cell's thousands of pairs cost no more than a slow one's.
_RESAMPLE_VALUES = 4000


def pooled_round_medians(groups: list[np.ndarray], rng: np.random.Generator, resamples: int) -> np.ndarray:
    """Bootstrap distribution of the pooled median of rounds of values: each resample draws the rounds with
    replacement, then the same number of values from each drawn round with replacement (the rounds' mean size, less
    where a resample would pass _RESAMPLE_VALUES: fewer draws only widen the interval), and takes their median."""
    k, sizes = len(groups), np.array([len(g) for g in groups])
    per_round = max(1, min(round(sizes.mean()), _RESAMPLE_VALUES // k))
    flat, starts = np.concatenate(groups), np.concatenate([[0], np.cumsum(sizes)[:-1]])
    # Each value's rank among all of them, in 16 bits where they fit: a resample's median sits at its middle ranks,
    # which a partition of small integers finds in half the time of its values (the same medians, bit for bit).
    order = np.argsort(flat)  # tied values may take either rank: their value is the same
    rank = np.empty(len(flat), dtype=np.int16 if len(flat) <= 2**15 else np.intp)
    rank[order] = np.arange(len(flat))
    middle = [(k * per_round - 1) // 2, k * per_round // 2]  # the same position twice for an odd count
    out = np.empty(resamples)
    step = max(1, 10**6 // (k * per_round))  # resamples at a time: a few MB of indices, whatever the cell
    for first in range(0, resamples, step):
        picked = rng.integers(0, k, size=(min(step, resamples - first), k))
        drawn = rng.random((*picked.shape, per_round))
        drawn *= sizes[picked][:, :, None]
        index = drawn.astype(np.intp)
        index += starts[picked][:, :, None]
        ranks = rank[index].reshape(len(picked), -1)
        ranks.partition(middle, axis=1)
        out[first : first + len(picked)] = flat[order[ranks[:, middle]]].mean(axis=1)
    return out


def ratio_between(by_pair: dict[str, pd.DataFrame], a: str, b: str) -> tuple[float, float, float] | None:
    """Run `a`'s time ÷ run `b`'s over the pairs the two were timed in together, with its interval (paired_ratio; a
    speedup is the baseline's time ÷ the cell's); None when they share no pair. `by_pair`: paired_samples' table."""
    if a not in by_pair or b not in by_pair:
        return None
    top, bottom = by_pair[a].align(by_pair[b], join="inner")
    if not len(top):
        return None
    rounds = bottom["round"].to_numpy() if "round" in bottom else None
    return paired_ratio(top["latency_us"].to_numpy(), bottom["latency_us"].to_numpy(), rounds)


def paired_samples(samples: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """run_id → its samples by pair: the latency (the pair's mean where a pair has several samples) and round."""
    if samples.empty or "pair" not in samples:
        return {}
    s = samples[samples["pair"].notna()]
    has_rounds = "round" in s and bool(s["round"].notna().all())
    agg = {"latency_us": ("latency_us", "mean"), **({"round": ("round", "first")} if has_rounds else {})}
    return {str(run): g.groupby("pair").agg(**agg) for run, g in s.groupby("run_id")}


def speedup_table(cells: pd.DataFrame, samples: pd.DataFrame | None) -> pd.DataFrame:
    """SPEEDUP_COLUMNS for every usable cell with a usable baseline other than itself (`baseline_run_id`)."""
    if cells.empty or "baseline_run_id" not in cells:
        return pd.DataFrame(columns=SPEEDUP_COLUMNS)
    samples = samples if samples is not None else pd.DataFrame(columns=["run_id", "latency_us", "round"])
    ok = usable_cells(cells)
    group = dict(zip(ok["run_id"].astype(str), ok.get("timing_group", pd.Series(None, index=ok.index))))
    latency = dict(zip(ok["run_id"].astype(str), ok["latency_median_us"].astype(float)))
    by_pair, by_round = paired_samples(samples), samples_by_run(samples)
    rows: list[tuple[Any, ...]] = []
    for run, ref in zip(ok["run_id"].astype(str), ok["baseline_run_id"]):
        if not isinstance(ref, str) or ref not in latency or ref == run:
            continue
        g = group.get(run)
        paired = ratio_between(by_pair, ref, run) if isinstance(g, str) and g == group.get(ref) else None
        if paired is not None:
            rows.append((run, *paired, "paired"))
            continue
        if run in by_round and ref in by_round:
            s = compare_rounds(by_round[run], by_round[ref])
            rows.append((run, s.ratio, s.ci_low, s.ci_high, "unpaired"))
        else:  # no samples to resample (a foreign table): the ratio of the medians, no interval
            rows.append((run, latency[ref] / latency[run], math.nan, math.nan, "unpaired"))
    return pd.DataFrame(rows, columns=SPEEDUP_COLUMNS)
