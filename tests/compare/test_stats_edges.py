"""The statistics' edges (issue 32's mutation audit): one round a side without a floor is the pooled-samples
comparison, the practical threshold is symmetric on the log scale, and the inconclusive band's lower edge is
1/(1 + x), the mirror of its upper edge 1 + x."""

from __future__ import annotations

import math

import numpy as np
import pytest

from neuronexp.analysis.stats import CellStats, Criteria, compare_rounds, compare_samples, mann_whitney_p, verdict


def interval(ratio: float, low: float, high: float, separable: bool = True) -> CellStats:
    """A cell's statistics as verdict reads them: the ratio, its interval, whether both sides had rounds."""
    rounds = 2 if separable else 1
    figures = {"median_a_us": 1.0, "median_b_us": ratio, "p_value": np.nan, "n_a": 10, "n_b": 10}
    return CellStats(**figures, ratio=ratio, ci_low=low, ci_high=high, rounds_a=rounds, rounds_b=rounds)


def _sides() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(1)
    return 100 * np.exp(0.03 * rng.standard_normal(30)), 104 * np.exp(0.03 * rng.standard_normal(30))


@pytest.mark.parametrize("rounds_b", [None, [i % 3 for i in range(30)]], ids=["one-round-each", "one-round-in-a"])
def test_one_round_on_a_side_without_a_floor_is_the_pooled_samples_comparison(rounds_b) -> None:
    a, b = _sides()
    stats, pooled = compare_rounds((a, None), (b, rounds_b)), compare_samples(a, b)
    assert stats.p_value == mann_whitney_p(a, b) == pooled.p_value  # Mann–Whitney, not the bootstrap's p
    assert (stats.ci_low, stats.ci_high) == (pooled.ci_low, pooled.ci_high) and not stats.separable
    # With a floor, the same one-round side is bootstrapped with its process term instead: another p.
    assert compare_rounds((a, None), (b, rounds_b), floor=1.0).p_value != pooled.p_value


@pytest.mark.parametrize("ratio", [1.0201, 1.03, 1.5])
def test_the_threshold_is_symmetric_on_the_log_scale(ratio: float) -> None:
    # ×1.0201 is beyond 2% slower; its mirror ×1/1.0201 = 0.98030 is beyond 2% faster, though only 1.97% below 1.
    def word(ratio: float, low: float, high: float) -> str:
        return verdict(interval(ratio, low, high), 1e-6, Criteria(threshold=0.02, alpha=0.05, inconclusive=None))

    low, high = ratio * 0.99995, ratio * 1.0001
    assert word(ratio, low, high) == "slower"
    assert word(1 / ratio, 1 / high, 1 / low) == "faster"
    near = 1.0199  # within 2% either way
    assert word(near, near * 0.9999, near * 1.0001) == "no change"
    assert word(1 / near, 1 / near / 1.0001, 1 / near / 0.9999) == "no change"


def test_the_inconclusive_band_is_the_mirror_of_its_upper_edge() -> None:
    # ×1.25 inconclusive: an interval reaching below 1/1.25 = 0.8 cannot tell, as one reaching above 1.25 cannot.
    def told(low: float, high: float) -> str:
        return verdict(interval(1.0, low, high), 0.5, Criteria(threshold=0.02, alpha=0.05, inconclusive=0.25))

    assert told(0.78, 1.1) == told(1 / 1.1, 1 / 0.78) == "inconclusive"  # 0.78 is beyond 0.8 (not beyond 0.75)
    assert told(0.81, 1.2) == told(1 / 1.2, 1 / 0.81) == "no change"


def test_verdict_rules() -> None:
    rule = Criteria(threshold=0.02, alpha=0.05, inconclusive=None)

    def word(ratio: float, q_value: float, ci_low: float = math.nan, ci_high: float = math.nan, **kw) -> str:
        return verdict(interval(ratio, ci_low, ci_high, **kw), q_value, rule)

    assert word(1.5, 0.01) == "slower"
    assert word(1 / 1.5, 0.01) == "faster"
    assert word(1.5, 0.2) == "no change"
    assert word(1.01, 1e-9) == "no change"
    # Significant and beyond 2%, but the interval reaches inside the threshold: an A/A run on this VM.
    assert word(0.966, 0.0024, ci_low=0.939, ci_high=0.989) == "no change"
    assert word(0.95, 0.0024, ci_low=0.93, ci_high=0.97) == "faster"
    assert word(1.25, 0.0024, ci_low=1.15, ci_high=1.35) == "slower"
    assert word(float("nan"), 0.01) == "n/a"
    # One round on a side: significance within a run says nothing across runs; only the interval counts.
    assert word(1.05, 1e-9, separable=False, ci_low=1.01, ci_high=1.09) == "no change"
    assert word(1.05, 1e-9, separable=False, ci_low=1.03, ci_high=1.07) == "slower"
    assert word(0.9, 1e-9, separable=False, ci_low=0.85, ci_high=0.95) == "faster"
