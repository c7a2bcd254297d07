"""The two textbook statistics compare rests on, checked against SciPy (a test-only dependency, the dev extra) over
many random cases rather than one value each: Mann–Whitney's U test (the normal approximation with tie and
continuity corrections: SciPy's `asymptotic` method) and Benjamini–Hochberg's q-values. And P(B faster), the share of
the bootstrap's ratios below 1, on cases whose answer is known."""

from __future__ import annotations

import numpy as np
import pytest

from neuronexp.analysis.stats import benjamini_hochberg, compare_rounds, compare_samples, mann_whitney_p

scipy_stats = pytest.importorskip("scipy.stats", reason="pip install '.[dev]'")


def _samples(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Two samples of random sizes (1–60), continuous or rounded to few values (ties), shifted apart or not."""
    n_a, n_b = rng.integers(1, 61, size=2)
    shift = rng.choice([0.0, 0.2, 1.0])
    a, b = rng.lognormal(0, 0.3, n_a), rng.lognormal(shift, 0.3, n_b)
    if rng.random() < 0.5:  # latencies on a coarse clock: many ties
        a, b = np.round(a, 1), np.round(b, 1)
    return a, b


@pytest.mark.parametrize("seed", range(10))
def test_mann_whitney_is_scipys_asymptotic_test(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(25):
        a, b = _samples(rng)
        if np.all(np.concatenate([a, b]) == a[0]):  # every value equal: no test (ours says 1, SciPy NaN)
            assert mann_whitney_p(a, b) == 1.0
            continue
        expected = scipy_stats.mannwhitneyu(a, b, alternative="two-sided", method="asymptotic").pvalue
        assert mann_whitney_p(a, b) == pytest.approx(expected, rel=1e-9, abs=1e-15), (a, b)


def test_mann_whitney_on_one_or_two_samples_a_side_is_scipys_too() -> None:
    """Where the variance is below 1 but the values differ: a p-value, not the all-equal answer."""
    for a, b in (([1.0], [2.0, 3.0]), ([2.0, 3.0], [1.0]), ([1.0, 2.0], [3.0, 4.0]), ([1.0], [2.0])):
        expected = scipy_stats.mannwhitneyu(a, b, alternative="two-sided", method="asymptotic").pvalue
        assert mann_whitney_p(np.array(a), np.array(b)) == pytest.approx(expected, rel=1e-9), (a, b)


def test_mann_whitney_says_no_difference_when_every_value_is_equal() -> None:
    assert mann_whitney_p(np.full(5, 3.0), np.full(7, 3.0)) == 1.0


@pytest.mark.parametrize("seed", range(10))
def test_benjamini_hochberg_is_scipys_false_discovery_control(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(25):
        m = int(rng.integers(1, 200))
        p = rng.choice([rng.random(m), rng.beta(0.3, 3, m), np.round(rng.random(m), 2)])  # spread, small, tied
        p[rng.random(m) < 0.05] = rng.choice([0.0, 1.0])
        expected = scipy_stats.false_discovery_control(p, method="bh")
        np.testing.assert_allclose(benjamini_hochberg(p), expected, rtol=1e-12, atol=0)


def test_benjamini_hochberg_leaves_missing_p_values_out_of_m() -> None:
    """A cell without a p-value (n/a) is not a test: it does not count towards m, and its q stays NaN."""
    rng = np.random.default_rng(7)
    p = rng.random(30)
    holes = p.copy()
    holes[[3, 11, 29]] = np.nan
    q = benjamini_hochberg(holes)
    assert np.isnan(q[[3, 11, 29]]).all()
    kept = ~np.isnan(holes)
    np.testing.assert_allclose(q[kept], scipy_stats.false_discovery_control(p[kept], method="bh"), rtol=1e-12)


def _rounds(rng: np.random.Generator, level: float, n_rounds: int = 8, per_round: int = 10) -> tuple:
    x = level * rng.lognormal(0, 0.05, n_rounds * per_round)
    return x, np.repeat(np.arange(n_rounds), per_round)


@pytest.mark.parametrize("seed", range(3))
def test_p_faster_is_the_share_of_bootstrap_ratios_below_one(seed: int) -> None:
    """B twice as fast: every ratio below 1; twice as slow: none; the same level: about half (each side its own
    draws). Over rounds and over pooled samples alike."""
    rng = np.random.default_rng(seed)
    a = _rounds(rng, 100.0)
    assert compare_rounds(a, _rounds(rng, 50.0), seed=seed).p_faster == 1.0
    assert compare_rounds(a, _rounds(rng, 200.0), seed=seed).p_faster == 0.0
    assert 0.05 < compare_rounds(a, _rounds(rng, 100.0), seed=seed).p_faster < 0.95
    assert compare_samples(a[0], a[0] * 0.5, seed=seed).p_faster == 1.0
    assert compare_samples(a[0], a[0] * 2.0, seed=seed).p_faster == 0.0
    assert np.isnan(compare_samples([], a[0]).p_faster)


def test_p_faster_moves_with_the_shift() -> None:
    """The more B's level lies below A's, the likelier B is faster, within one seed's draws."""
    rng = np.random.default_rng(1)
    a, base = _rounds(rng, 100.0), _rounds(rng, 1.0)
    shares = [compare_rounds(a, (base[0] * level, base[1]), seed=1).p_faster for level in (104, 101, 99, 96)]
    assert shares == sorted(shares) and shares[0] < 0.5 < shares[-1]
