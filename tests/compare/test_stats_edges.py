"""The statistics' edges (issue 32's mutation audit): one round a side without a floor is the pooled-samples
comparison, the practical threshold is symmetric on the log scale, and the inconclusive band's lower edge is
1/(1 + x), the mirror of its upper edge 1 + x."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from neuronexp.analysis.floor import FLOOR_FACTOR
from neuronexp.analysis.stats import (
    CellStats,
    Criteria,
    ci_within_threshold,
    compare_rounds,
    compare_run_pairs,
    compare_runs,
    compare_samples,
    mann_whitney_p,
    verdict,
)


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


def test_pooled_samples_give_the_ratio_of_medians_and_an_interval_holding_each_sides_spread() -> None:
    """B's samples 185..215 (median 200) against A's steady 100: ratio 2, the interval around it from B's spread
    (and, the other way round, from A's); a side without samples leaves every figure NaN, not 0 or empty."""
    steady, spread = np.full(30, 100.0), np.arange(185.0, 216.0)
    stats = compare_samples(steady, spread)
    assert (stats.median_a_us, stats.median_b_us, stats.ratio) == (100.0, 200.0, 2.0)
    assert stats.ci_low < 2.0 < stats.ci_high and (stats.n_a, stats.n_b) == (30, 31)
    mirror = compare_samples(spread, steady)
    assert mirror.ratio == 0.5 and mirror.ci_low < 0.5 < mirror.ci_high
    assert compare_samples([1, 2, 3], [2, 4, 6]).ratio == 2.0  # integer latencies (a clock's ticks) too
    for one_sided in (compare_samples([], [1.0, np.nan]), compare_samples([1.0], [])):
        assert all(math.isnan(x) for x in (one_sided.ratio, one_sided.ci_low, one_sided.ci_high, one_sided.p_value))
    assert compare_samples([], [1.0, np.nan]).median_b_us == compare_samples([1.0], []).median_a_us == 1.0


def test_the_edges_themselves_are_not_beyond_them() -> None:
    """Called only when the interval lies wholly beyond the threshold and q is below alpha; inconclusive only when
    the interval reaches beyond the band: a bound exactly on an edge is on the inside (docstrings of verdict,
    Criteria and ci_within_threshold)."""
    rule = Criteria(threshold=0.02, alpha=0.05, inconclusive=0.25)

    def word(ratio: float, q_value: float, low: float, high: float, separable: bool = True) -> str:
        return verdict(interval(ratio, low, high, separable), q_value, rule)

    assert word(1.05, 1e-9, 1.02, 1.07, separable=False) == "no change"
    assert word(0.95, 1e-9, 0.93, 1 / 1.02, separable=False) == "no change"
    assert word(1.2, 0.05, 1.1, 1.24) == "no change"  # q exactly alpha: not below it
    assert word(1.2, 0.0499, 1.1, 1.24) == "slower"
    assert word(1.0, 0.5, 0.8, 1.25) == "no change"  # the band's edges, 1/1.25 and 1.25, are inside it
    assert word(0.0, 1e-9, 0.0, 0.0) == "n/a"  # B's median 0: no ratio to judge
    assert not ci_within_threshold(1 / 1.02, 1.0, 0.02) and not ci_within_threshold(1.0, 1.02, 0.02)
    assert ci_within_threshold(0.99, 1.01, 0.02) and not ci_within_threshold(0.5, 1.01, 0.02)
    assert not ci_within_threshold(0.99, 1.5, 0.02)


def test_two_rounds_a_side_are_rounds_not_pooled_samples() -> None:
    """One round on a side falls back to the pooled samples (above); two are already the rounds' bootstrap."""
    a, b = _sides()
    two = [i % 2 for i in range(30)]
    stats = compare_rounds((a, two), (b, two))
    assert stats.separable and (stats.rounds_a, stats.rounds_b) == (2, 2)
    assert stats.p_value != mann_whitney_p(a, b)


def test_runs_in_pairs_are_judged_pair_by_pair_and_a_pair_without_samples_is_left_out() -> None:
    """Three pairs, B twice A in each, the host 0.7x to 1.4x from pair to pair (a CI runner's drift, alike on both
    sides of a pair): the ratio is the pairs' median ratio, exactly 2, its interval narrow although the runs' medians
    spread twofold (unpaired, the same runs give a wide one); a pair with a side without samples counts nowhere."""
    rng = np.random.default_rng(5)
    rounds = np.repeat(np.arange(4), 10)
    pairs = []
    for host in (0.7, 1.0, 1.4):
        a = 100 * host * np.exp(0.01 * rng.standard_normal(40))
        pairs.append(((a, rounds), (2 * a, rounds)))
    empty = ((np.array([]), None), (np.full(5, 200.0), None))
    stats = compare_run_pairs([*pairs, empty])
    assert stats.ratio == 2.0 and 1.95 < stats.ci_low < 2.0 < stats.ci_high < 2.05
    assert 99 < stats.median_a_us < 101 and stats.median_b_us == 2 * stats.median_a_us  # the middle pair's
    counts = (stats.runs_a, stats.runs_b, stats.rounds_a, stats.rounds_b, stats.n_a, stats.n_b)
    assert counts == (3, 3, 12, 12, 120, 120)
    assert stats.p_faster == 0.0 and stats.p_value < 0.01
    unpaired = compare_runs([a for a, _ in pairs], [b for _, b in pairs])
    assert unpaired.ci_high - unpaired.ci_low > 10 * (stats.ci_high - stats.ci_low)
    counts = (unpaired.runs_a, unpaired.runs_b, unpaired.rounds_a, unpaired.rounds_b, unpaired.n_a, unpaired.n_b)
    assert counts == (3, 3, 12, 12, 120, 120) and (unpaired.floor_a, unpaired.floor_b) == (0.0, 0.0)
    assert unpaired.ratio == 2.0 and unpaired.median_a_us == stats.median_a_us  # the medians over runs
    nothing = compare_run_pairs([empty])
    assert all(math.isnan(x) for x in (nothing.ratio, nothing.ci_low, nothing.ci_high, nothing.p_value))
    assert (nothing.n_a, nothing.n_b) == (0, 0)


def test_runs_in_pairs_give_the_median_of_the_pairs_ratios_not_the_ratio_of_the_sides_medians() -> None:
    """Pairs whose ratios differ (x3, x2, x1.5 on hosts 1, 0.7 and 1.4): the ratio is their median, 2, while the
    sides' medians over runs, 100 and 210, would say 2.1."""
    rounds = np.repeat(np.arange(2), 5)
    pairs = [
        ((np.full(10, a), rounds), (np.full(10, a * r), rounds)) for a, r in ((100.0, 3.0), (70.0, 2.0), (140.0, 1.5))
    ]
    stats = compare_run_pairs(pairs)
    assert stats.ratio == pytest.approx(2.0) and (stats.median_a_us, stats.median_b_us) == (100.0, 210.0)


@pytest.mark.parametrize(("a", "b", "counts"), [([], [100.0, 101.0], (0, 2)), ([100.0, 101.0], [np.nan], (2, 0))])
def test_a_side_without_samples_gives_its_median_as_nan_and_no_numpy_warning(a, b, counts) -> None:
    """A side with no finite sample: its median is NaN, the other side's is its own, and nothing is printed (numpy's
    "Mean of empty slice" would reach the user's terminal from neuronexp-compare)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        stats = compare_samples(a, b)
    assert (stats.n_a, stats.n_b) == counts and math.isnan(stats.ratio)
    medians = (stats.median_a_us, stats.median_b_us)
    assert [math.isnan(m) for m in medians] == [n == 0 for n in counts] and 100.5 in medians


def test_a_tie_is_not_faster_and_the_pooled_fallback_takes_the_resamples_asked_for() -> None:
    """P(B faster) counts the bootstrap ratios below 1: two identical sides (every ratio exactly 1) give 0, not 1. The
    one-round fallback draws as many resamples as asked (--resamples), as compare_samples would itself."""
    same = np.full(10, 100.0)
    assert compare_samples(same, same).p_faster == 0.0
    a, b = _sides()
    few = compare_rounds((a, None), (b, None), resamples=50)
    asked = compare_samples(a, b, resamples=50)
    assert (few.ci_low, few.ci_high, few.p_faster) == (asked.ci_low, asked.ci_high, asked.p_faster)
    assert (few.ci_low, few.ci_high) != (compare_samples(a, b).ci_low, compare_samples(a, b).ci_high)


def test_one_run_against_two_counts_both_of_the_two() -> None:
    """One run in A, two in B (medians 100 and 120): B's median over its runs is 110, and both runs are counted."""
    rounds = np.repeat(np.arange(3), 4)
    one, two = [(np.full(12, 100.0), rounds)], [(np.full(12, 100.0), rounds), (np.full(12, 120.0), rounds)]
    stats = compare_runs(one, two)
    assert stats.ratio == pytest.approx(1.1) and stats.median_b_us == 110.0
    assert (stats.runs_a, stats.runs_b, stats.n_a, stats.n_b) == (1, 2, 12, 24)


def test_two_runs_a_side_give_an_interval_around_their_ratio() -> None:
    """Two runs a side, B twice A in each (hosts 1 and 1.1): the interval is B's draws over A's, around 2."""
    rng = np.random.default_rng(2)
    rounds = np.repeat(np.arange(3), 10)
    a = [(100 * host * np.exp(0.02 * rng.standard_normal(30)), rounds) for host in (1.0, 1.1)]
    stats = compare_runs(a, [(2 * x, r) for x, r in a])
    assert 1.6 < stats.ci_low < 2.0 < stats.ci_high < 2.5 and stats.ratio == pytest.approx(2.0)


def test_runs_without_samples_on_a_side_give_nan_not_an_error() -> None:
    some = [(np.full(10, 100.0), None), (np.full(10, 101.0), None)]
    for runs_a, runs_b in (
        ([([], None)], some),
        (some, [([], None), ([np.nan], None)]),
        ([([], None)], [([], None)] * 2),
    ):
        stats = compare_runs(runs_a, runs_b)
        assert all(math.isnan(x) for x in (stats.ratio, stats.ci_low, stats.ci_high, stats.p_value))


def test_the_seed_is_the_bootstraps_with_one_run_a_side_or_more() -> None:
    """neuronexp-compare --seed: the same seed, the same interval; another seed, another (runs in pairs too)."""
    a, b = _sides()
    rounds = [i % 3 for i in range(30)]
    for n in (1, 2):
        same, again, other = (compare_runs([(a, rounds)] * n, [(b, rounds)] * n, seed=s) for s in (0, 0, 1))
        assert (same.ci_low, same.ci_high) == (again.ci_low, again.ci_high) != (other.ci_low, other.ci_high)
    same, again, other = (compare_run_pairs([((a, rounds), (b, rounds))] * 2, seed=s) for s in (0, 0, 1))  # --paired
    assert (same.ci_low, same.ci_high) == (again.ci_low, again.ci_high) != (other.ci_low, other.ci_high)


def test_one_run_a_side_takes_the_resamples_and_level_asked_for() -> None:
    """One run a side is compare_rounds with the noise floor: the resamples and the level asked for reach it, as they
    reach two runs a side (50 resamples draw another interval than the 2,000 drawn unless asked; a 50% interval is
    narrower than a 95% one)."""
    a, b = _sides()
    rounds = [i % 3 for i in range(30)]
    default = compare_runs([(a, rounds)], [(b, rounds)])
    for asked in ({"resamples": 50}, {"level": 0.5}):
        one = compare_runs([(a, rounds)], [(b, rounds)], **asked)
        rounds_only = compare_rounds((a, rounds), (b, rounds), floor=FLOOR_FACTOR, **asked)
        assert (one.ci_low, one.ci_high) == (rounds_only.ci_low, rounds_only.ci_high)
        assert (one.ci_low, one.ci_high) != (default.ci_low, default.ci_high)
    narrow = compare_runs([(a, rounds)], [(b, rounds)], level=0.5)
    assert default.ci_low < narrow.ci_low < narrow.ci_high < default.ci_high
    documented = compare_runs([(a, rounds)], [(b, rounds)], resamples=2000)  # unless asked (docs/compare.md)
    assert (default.ci_low, default.ci_high) == (documented.ci_low, documented.ci_high)


def test_runs_in_pairs_take_the_resamples_and_level_asked_for() -> None:
    """Over pairs too: 2,000 resamples unless asked (docs/compare.md), another count draws another interval, and a
    50% interval lies inside the 95% one."""
    a, b = _sides()
    rounds = [i % 3 for i in range(30)]
    pairs = [((a, rounds), (b, rounds)), ((1.1 * a, rounds), (1.1 * b, rounds))]
    default = compare_run_pairs(pairs)
    documented, few, narrow = (
        compare_run_pairs(pairs, **kw) for kw in ({"resamples": 2000}, {"resamples": 50}, {"level": 0.5})
    )
    assert (default.ci_low, default.ci_high) == (documented.ci_low, documented.ci_high) != (few.ci_low, few.ci_high)
    assert default.ci_low < narrow.ci_low < narrow.ci_high < default.ci_high


def test_a_ratio_exactly_the_threshold_is_a_change() -> None:
    """A change is at least the threshold in size: with rounds on both sides, q below alpha and no interval to say
    otherwise, ×1.25 against a threshold of 25% is slower, and ×0.5 against one of 100% (×2) faster."""
    nan = math.nan
    assert verdict(interval(1.25, nan, nan), 0.001, Criteria(threshold=0.25, inconclusive=None)) == "slower"
    assert verdict(interval(0.5, nan, nan), 0.001, Criteria(threshold=1.0, inconclusive=None)) == "faster"


def test_without_a_whole_interval_only_a_cell_with_rounds_on_both_sides_is_called() -> None:
    """No interval (NaN), or only one end of one: with rounds on both sides, q and the ratio decide; with one round on
    a side only the interval could, so without one the cell is not called (inconclusive where a band is set)."""
    rule = Criteria(threshold=0.02, alpha=0.05, inconclusive=None)
    nan = math.nan
    for low, high in ((nan, nan), (nan, 1.6), (1.4, nan)):
        assert verdict(interval(1.5, low, high), 0.001, rule) == "slower"
        assert verdict(interval(1 / 1.5, 1 / high, 1 / low), 0.001, rule) == "faster"
    assert verdict(interval(1.5, nan, nan, separable=False), 0.001, rule) == "no change"
    assert verdict(interval(1 / 1.5, nan, nan, separable=False), 0.001, rule) == "no change"
    assert verdict(interval(1.5, nan, nan, separable=False), 0.001, Criteria()) == "inconclusive"


def test_a_ratio_of_exactly_one_is_no_change_even_at_a_zero_threshold() -> None:
    """--threshold 0 calls any significant difference, but a ratio of exactly 1 is none: with rounds on both sides and
    no interval, it was called "faster"."""
    rule = Criteria(threshold=0.0, alpha=0.05, inconclusive=None)
    assert verdict(interval(1.0, math.nan, math.nan), 0.001, rule) == "no change"
    assert verdict(interval(1.01, math.nan, math.nan), 0.001, rule) == "slower"
    assert verdict(interval(0.99, math.nan, math.nan), 0.001, rule) == "faster"
