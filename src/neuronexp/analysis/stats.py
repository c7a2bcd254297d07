"""A/B statistics on latency samples taken in rounds: ratio of medians of round medians, a hierarchical bootstrap
CI and p-value, Benjamini–Hochberg across cells. Rounds, not samples, are the unit of repetition, and a side of
one run carries a noise floor (analysis.floor): why, and how it was calibrated, in docs/timing.md,
"Comparing runs: intervals over rounds". numpy only and vectorised: a few ms a cell."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from neuronexp.analysis.bootstrap import bootstrap_medians, inverted_p, percentile_interval
from neuronexp.analysis.floor import FLOOR_FACTOR, noise_floor, process_terms


@dataclass(frozen=True, kw_only=True)
class CellStats:
    """B against A for one cell; ratio > 1 means B is slower."""

    median_a_us: float
    median_b_us: float
    ratio: float
    ci_low: float
    ci_high: float
    p_value: float
    n_a: int
    n_b: int
    rounds_a: int = 1
    rounds_b: int = 1
    runs_a: int = 1
    runs_b: int = 1
    floor_a: float = 0.0  # sd (log scale) of the process-to-process term added to a side (noise_floor): 0 if none
    floor_b: float = 0.0
    # P(B faster): the share of the bootstrap's ratios below 1, as drawn (before compare takes out the host's move).
    p_faster: float = math.nan

    @property
    def separable(self) -> bool:
        """Both sides have rounds: the interval includes run-to-run noise."""
        return self.rounds_a > 1 and self.rounds_b > 1


def mann_whitney_p(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sided Mann–Whitney U test, normal approximation with tie and continuity corrections. Rank-based, so one slow
    outlier (a GC pause, a page fault) cannot fake or hide a difference, and cheap (no resampling). Slightly
    conservative against the exact test at 5 samples a side (0.012 vs 0.008 for complete separation), close above that.
    """
    n_a, n_b = len(a), len(b)
    pooled = np.concatenate([a, b])
    _, inverse, counts = np.unique(pooled, return_inverse=True, return_counts=True)
    average_rank = np.cumsum(counts) - (counts - 1) / 2  # tied values share the mean of their ranks
    u = average_rank[inverse][:n_a].sum() - n_a * (n_a + 1) / 2
    n = n_a + n_b
    ties = float((counts.astype(float) ** 3 - counts).sum())
    variance = n_a * n_b / 12 * ((n + 1) - ties / (n * (n - 1)))
    if variance <= 0:  # every sample equal: nothing to tell apart
        return 1.0
    z = max(abs(u - n_a * n_b / 2) - 0.5, 0.0) / math.sqrt(variance)
    return math.erfc(z / math.sqrt(2))


def compare_samples(a, b, seed: int = 0, resamples: int = 2000) -> CellStats:
    """The ratio of medians with its percentile bootstrap CI and a Mann–Whitney p-value (NaNs when a side is empty).
    The two runs are independent sets of samples, so each side is resampled on its own (not paired)."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    nan = float("nan")
    med_a = float(np.median(a)) if len(a) else nan
    med_b = float(np.median(b)) if len(b) else nan
    medians: dict[str, Any] = {"median_a_us": med_a, "median_b_us": med_b, "n_a": len(a), "n_b": len(b)}
    if not (len(a) and len(b)):
        return CellStats(**medians, ratio=nan, ci_low=nan, ci_high=nan, p_value=nan)
    rng = np.random.default_rng(seed)
    ratios = bootstrap_medians(b, rng, resamples) / bootstrap_medians(a, rng, resamples)
    low, high = percentile_interval(ratios, 0.95)
    return CellStats(
        **medians,
        ratio=med_b / med_a,
        ci_low=low,
        ci_high=high,
        p_value=mann_whitney_p(a, b),
        p_faster=faster_share(ratios),
    )


def faster_share(ratios: np.ndarray) -> float:
    """P(B faster): the share of bootstrap ratios B ÷ A below 1."""
    return float(np.mean(ratios < 1)) if len(ratios) else math.nan


def _round_arrays(x, rounds) -> list[np.ndarray]:
    x = np.asarray(x, dtype=float)
    labels = np.zeros(len(x), dtype=int) if rounds is None else np.asarray(rounds)
    keep = np.isfinite(x)
    x, labels = x[keep], labels[keep]
    return [x[labels == r] for r in np.unique(labels)]


def _resample_groups(draws: list[np.ndarray], rng: np.random.Generator, resamples: int) -> np.ndarray:
    """Median over groups drawn with replacement, each slot taking an independent draw of its group's statistic:
    draws[j] holds resamples × len(draws) bootstrap values of group j."""
    k = len(draws)
    per_group = np.stack([d.reshape(resamples, k) for d in draws])
    pick = rng.integers(0, k, size=(resamples, k))
    return np.median(per_group[pick, np.arange(resamples)[:, None], np.arange(k)[None, :]], axis=1)


def hierarchical_medians(groups: list[np.ndarray], rng: np.random.Generator, resamples: int) -> np.ndarray:
    """Bootstrap distribution of the median of round medians: draw the rounds with replacement, then the
    samples within each drawn round with replacement (each drawn round is resampled independently)."""
    # resamples × r independent bootstrap medians of every round; a draw picks one of them per slot.
    return _resample_groups([bootstrap_medians(g, rng, resamples * len(groups)) for g in groups], rng, resamples)


def median_of_rounds(groups: list[np.ndarray]) -> float:
    return float(np.median([np.median(g) for g in groups])) if groups else float("nan")


def compare_rounds(
    a: tuple, b: tuple, seed: int = 0, resamples: int = 2000, level: float = 0.95, floor: float = 0.0
) -> CellStats:
    """B against A: ratio of medians of round medians, with a hierarchical bootstrap CI and p-value. A side is
    (latencies, their rounds), as analysis.samples gives them; rounds None: one round. The p-value inverts the
    percentile interval: the smallest 1 - level at which it would exclude 1. `floor` (a factor, analysis.floor): each
    side's draws also carry a process term of floor × its drift, for a side that is one run. Without it, one round on
    either side falls back to compare_samples (pooled samples, Mann–Whitney); with it, a one-round side is bootstrapped
    over its samples. `separable` is False either way."""
    ga, gb = _round_arrays(*a), _round_arrays(*b)
    n_a, n_b = sum(map(len, ga)), sum(map(len, gb))
    if not (n_a and n_b) or (floor <= 0 and (len(ga) < 2 or len(gb) < 2)):
        pooled = compare_samples(np.concatenate(ga) if ga else [], np.concatenate(gb) if gb else [], seed, resamples)
        return CellStats(**{**vars(pooled), "rounds_a": len(ga), "rounds_b": len(gb)})
    rng = np.random.default_rng(seed)
    fa, fb = noise_floor(ga, floor), noise_floor(gb, floor)
    # One group: hierarchical_medians is the plain bootstrap of its median.
    ratios = (
        hierarchical_medians(gb, rng, resamples)
        * process_terms(fb, rng, resamples)
        / (hierarchical_medians(ga, rng, resamples) * process_terms(fa, rng, resamples))
    )
    counts = {"n_a": n_a, "n_b": n_b, "rounds_a": len(ga), "rounds_b": len(gb), "floor_a": fa, "floor_b": fb}
    return _cell_stats(ratios, level, (median_of_rounds(ga), median_of_rounds(gb)), counts)


def _cell_stats(ratios: np.ndarray, level: float, medians: Sequence[float], counts: dict[str, Any]) -> CellStats:
    """B against A from the ratio's bootstrap draws, with the sides' medians and `counts` (CellStats' other fields)."""
    (low, high), p = percentile_interval(ratios, level), inverted_p(ratios)
    med_a, med_b = medians
    return CellStats(
        median_a_us=med_a,
        median_b_us=med_b,
        ratio=med_b / med_a,
        ci_low=low,
        ci_high=high,
        p_value=p,
        p_faster=faster_share(ratios),
        **counts,
    )


def compare_runs(
    runs_a: list[tuple],
    runs_b: list[tuple],
    seed: int = 0,
    resamples: int = 2000,
    level: float = 0.95,
    floor: float = FLOOR_FACTOR,
) -> CellStats:
    """B against A over several runs a side, each run (latencies, their rounds): the ratio of the sides' medians
    over runs of their medians of round medians, with a three-level bootstrap (runs, rounds, samples). A side
    that is one run cannot show the variance between runs: its draws carry its noise floor (analysis.floor,
    `floor` the factor) instead. One run a side is compare_rounds with that floor."""
    if len(runs_a) == 1 and len(runs_b) == 1:
        return compare_rounds(runs_a[0], runs_b[0], seed=seed, resamples=resamples, level=level, floor=floor)
    ga, gb = ([g for g in (_round_arrays(x, r) for x, r in runs) if g] for runs in (runs_a, runs_b))
    if not ga or not gb:
        return compare_rounds(([], None), ([], None), seed=seed)
    rng = np.random.default_rng(seed)
    floors = [noise_floor(runs[0], floor) if len(runs) == 1 else 0.0 for runs in (gb, ga)]
    sides = [
        _resample_groups([hierarchical_medians(g, rng, resamples * len(runs)) for g in runs], rng, resamples)
        * process_terms(f, rng, resamples)
        for runs, f in zip((gb, ga), floors)
    ]
    medians = [float(np.median([median_of_rounds(g) for g in runs])) for runs in (ga, gb)]
    n_a, n_b = (sum(len(r) for g in runs for r in g) for runs in (ga, gb))
    rounds_a, rounds_b = (sum(len(g) for g in runs) for runs in (ga, gb))
    counts = {"n_a": n_a, "n_b": n_b, "rounds_a": rounds_a, "rounds_b": rounds_b, "runs_a": len(ga), "runs_b": len(gb)}
    return _cell_stats(sides[0] / sides[1], level, medians, {**counts, "floor_a": floors[1], "floor_b": floors[0]})


def compare_run_pairs(
    pairs: list[tuple[tuple, tuple]], seed: int = 0, resamples: int = 2000, level: float = 0.95
) -> CellStats:
    """B against A over runs made in pairs, (A's run, B's run) each, each run (latencies, their rounds): a CI job that
    interleaves the sides runs each pair one after the other, so the host's drift falls on both. The ratio is the median
    over pairs of B's ÷ A's median of round medians; the bootstrap draws the pairs, then each run's rounds and samples.
    No noise floor: the pairs show the variance between processes. A pair with a side without samples is left out."""
    kept = [(ga, gb) for ga, gb in ((_round_arrays(*a), _round_arrays(*b)) for a, b in pairs) if ga and gb]
    if not kept:
        return compare_rounds(([], None), ([], None), seed=seed)
    rng = np.random.default_rng(seed)
    k = len(kept)
    # Per pair, resamples × k draws of its ratio; each of a draw's k slots takes one pair's draw (_resample_groups).
    draws = [hierarchical_medians(b, rng, resamples * k) / hierarchical_medians(a, rng, resamples * k) for a, b in kept]
    counts = {
        "n_a": sum(len(r) for a, _ in kept for r in a),
        "n_b": sum(len(r) for _, b in kept for r in b),
        "rounds_a": sum(len(a) for a, _ in kept),
        "rounds_b": sum(len(b) for _, b in kept),
        "runs_a": k,
        "runs_b": k,
    }
    medians = [float(np.median([median_of_rounds(pair[side]) for pair in kept])) for side in (0, 1)]
    stats = _cell_stats(_resample_groups(draws, rng, resamples), level, medians, counts)
    ratio = float(np.median([median_of_rounds(b) / median_of_rounds(a) for a, b in kept]))
    return dataclasses.replace(stats, ratio=ratio)


def benjamini_hochberg(p_values) -> np.ndarray:
    """BH-adjusted q-values (step-up, monotone); NaN p-values stay NaN and do not count towards m."""
    p = np.asarray(p_values, dtype=float)
    q = np.full_like(p, np.nan)
    ok = ~np.isnan(p)
    m = int(ok.sum())
    if m == 0:
        return q
    order = np.argsort(p[ok])
    scaled = p[ok][order] * m / np.arange(1, m + 1)
    adjusted = np.minimum(np.minimum.accumulate(scaled[::-1])[::-1], 1.0)
    out = np.empty(m)
    out[order] = adjusted
    q[ok] = out
    return q


@dataclass(frozen=True, kw_only=True)
class Criteria:
    """When a ratio is a change (neuronexp-compare's defaults): significant (its BH q-value below `alpha`) and at
    least `threshold` in size, symmetric on the log scale (2%: ≥ ×1.02 slower or ≤ ×1/1.02 faster). `inconclusive`
    (a size, 0.25 = ×1.25): a cell not called whose interval still reaches beyond it on either side is
    "inconclusive" (compare cannot tell, e.g. 0.73–220), not "no change"; None: never inconclusive."""

    threshold: float = 0.02
    alpha: float = 0.05
    inconclusive: float | None = 0.25


def verdict(stats: CellStats, q_value: float, criteria: Criteria) -> str:
    """faster / slower only when the difference is both significant (`q_value`, the cell's BH-adjusted p) and at least
    the threshold in size. The interval (NaN: none) must also lie wholly beyond the threshold: an A/A run here gave
    ×0.966 with CI 0.939–0.989 and q 0.002, beyond 2% but reaching to 1.1%. With one round on a side (not `separable`)
    the interval alone decides."""
    ratio, ci_low, ci_high = stats.ratio, stats.ci_low, stats.ci_high
    if not (math.isfinite(ratio) and math.isfinite(q_value)) or ratio <= 0:
        return "n/a"
    threshold, inconclusive = criteria.threshold, criteria.inconclusive
    bound = 1 + threshold
    word = "slower" if ci_low > bound else "faster" if ci_high < 1 / bound else "no change"
    if stats.separable and (q_value >= criteria.alpha or abs(math.log(ratio)) < math.log1p(threshold)):
        word = "no change"
    elif stats.separable and not (math.isfinite(ci_low) and math.isfinite(ci_high)):
        word = "slower" if ratio > 1 else "faster" if ratio < 1 else "no change"  # 1: none, even at threshold 0
    wide = inconclusive is not None and not (1 / (1 + inconclusive) <= ci_low and ci_high <= 1 + inconclusive)
    return "inconclusive" if word == "no change" and wide else word


def ci_within_threshold(ci_low: float, ci_high: float, threshold: float) -> bool:
    """True when the CI rules out a change of `threshold` or more in either direction."""
    bound = 1 + threshold
    return bool(1 / bound < ci_low and ci_high < bound)
