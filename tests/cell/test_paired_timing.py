"""Paired timing (issue 22): the calls of a group alternate in a fresh random order each pair, every sample keeps
its pair index, short calls are timed in blocks, and the per-pair ratio cancels drift that cells timed apart see."""

from __future__ import annotations

import itertools
import time
import types

import numpy as np
import pytest

from neuronexp.analysis.paired import _RESAMPLE_VALUES, paired_ratio, pooled_round_medians
from neuronexp.backends.cpu.cpu_backend import CpuBackend
from neuronexp.cell.timing import BLOCK_US, time_calls
from neuronexp.config import TimingConfig


class Clocked(CpuBackend):
    """time_call returns what the call itself returns (its scripted latency in µs) instead of measuring."""

    def time_call(self, fn) -> float:
        return float(fn())


def _cfg(**kw) -> TimingConfig:
    return TimingConfig(
        **{
            "min_seconds": 0,
            "warmup": 1,
            "iters": 60,
            "min_iters": 60,
            "rounds": 3,
            "round_gap_s": 0.0,
            "max_seconds": 60,
            "precision": None,  # the fixed count: these tests count samples (the adaptive stop: test_precision.py)
            **kw,
        }
    )


def test_each_pair_calls_every_variant_once_in_a_fresh_random_order() -> None:
    order: list[int] = []

    def call(j: int):
        return lambda: order.append(j) or 100.0

    stats = time_calls([call(0), call(1), call(2)], Clocked(), _cfg(), seed=1)
    # One warm-up pass; round 0's 20 pairs; then each round: one unrecorded call of each, in sweep order (after
    # the host reference that ends the round before), and its 20 pairs.
    assert len(order) == 3 + 60 + 2 * 63 and order[63:66] == order[126:129] == [0, 1, 2]
    timed = order[3:63] + order[66:126] + order[129:]
    pairs = [tuple(timed[i : i + 3]) for i in range(0, len(timed), 3)]
    assert len(pairs) == 60 and all(sorted(p) == [0, 1, 2] for p in pairs)
    assert len(set(pairs)) > 3  # not one fixed order: every permutation position is taken by each variant
    firsts = [p[0] for p in pairs]
    assert all(firsts.count(j) > 5 for j in range(3))
    for s in stats:  # every sample keeps its pair index and round, aligned across the group
        assert s.pairs == list(range(60))
        assert s.rounds == [r for r in range(3) for _ in range(20)]


def test_a_call_alone_has_no_pair_index() -> None:
    (stats,) = time_calls([lambda: 50.0], Clocked(), _cfg())
    assert stats.pairs is None and stats.block == 1


def test_short_paired_calls_are_timed_in_blocks_and_long_ones_call_by_call() -> None:
    calls = {"short": 0, "long": 0}

    def short():
        calls["short"] += 1
        return BLOCK_US / 4

    def long():
        calls["long"] += 1
        return 100.0

    short_stats, long_stats = time_calls([short, long], Clocked(), _cfg(iters=10, min_iters=10, rounds=1))
    assert (short_stats.block, long_stats.block) == (4, 1)
    assert len(short_stats.samples_us) == len(long_stats.samples_us) == 10
    # Blocks are timed on the wall clock (the scripted figure sized them); each sample is one block's mean.
    assert calls["short"] == 1 + 4 * 10 and calls["long"] == 1 + 10


def test_a_block_sample_is_the_time_per_call_not_the_blocks_total(monkeypatch: pytest.MonkeyPatch) -> None:
    # A fake wall clock that each short call advances by 2.5 µs (and the long one by 100 µs): a block of four short
    # calls lasts 10 µs on it, and its sample must say 2.5 µs a call, as the long call's says 100 µs.
    import neuronexp.cell.timing as timing

    clock = {"ns": 0}

    def advancing(us: float):
        def call() -> float:
            clock["ns"] += int(us * 1000)
            return us

        return call

    fake = types.SimpleNamespace(**{n: getattr(time, n) for n in ("perf_counter", "sleep")})
    fake.perf_counter_ns = lambda: clock["ns"]
    monkeypatch.setattr(timing, "time", fake)
    short, long = time_calls([advancing(2.5), advancing(100.0)], Clocked(), _cfg(iters=10, min_iters=10, rounds=1))
    assert short.block == 4 and long.block == 1
    assert short.samples_us == [2.5] * 10 and long.samples_us == [100.0] * 10


def test_the_per_pair_ratio_cancels_a_drift_that_unpaired_medians_do_not() -> None:
    # The host slows down ×3 over the window; the cell is truly ×1.25 faster than its baseline.
    drift = np.linspace(1.0, 3.0, 200)
    base, cell = 100.0 * drift, 80.0 * drift
    speedup, low, high = paired_ratio(base, cell)
    assert speedup == pytest.approx(1.25) and low == pytest.approx(1.25) and high == pytest.approx(1.25)
    # Timed apart (the baseline in the first half of the window, the cell in the second), the medians disagree.
    assert np.median(base[:100]) / np.median(cell[100:]) < 0.8


def test_the_interval_covers_a_known_ratio_about_95_times_in_100_and_widens_with_noise() -> None:
    rng = np.random.default_rng(7)
    truth, covered, widths = 1.10, 0, {"quiet": [], "noisy": []}
    for _ in range(40):
        base = 100 * np.exp(rng.normal(0, 0.3, 200))  # ±35% drift shared by the pair
        for kind, sd in (("quiet", 0.02), ("noisy", 0.2)):
            _, low, high = paired_ratio(base, base / truth * np.exp(rng.normal(0, sd, 200)), resamples=1000)
            covered += low <= truth <= high
            widths[kind].append(high - low)
    assert covered >= 0.85 * 80  # a 95% interval: 76 of 80 expected; 68 allows the bootstrap's slack
    assert np.median(widths["quiet"]) < np.median(widths["noisy"]) / 3


def test_identical_variants_give_an_interval_that_contains_one() -> None:
    rng = np.random.default_rng(3)
    shared = 100 * np.exp(np.cumsum(rng.normal(0, 0.05, 300)))  # a random walk, as a host drifts
    a = shared * np.exp(rng.normal(0, 0.05, 300))
    b = shared * np.exp(rng.normal(0, 0.05, 300))
    speedup, low, high = paired_ratio(a, b)
    assert low <= 1.0 <= high and abs(speedup - 1) < 0.03


def test_the_block_bootstrap_is_wider_than_an_iid_one_when_neighbouring_pairs_share_noise() -> None:
    rng = np.random.default_rng(11)
    # Per-pair ratios that drift slowly: neighbours are alike, so there are fewer independent draws than pairs.
    ratios = np.exp(np.repeat(rng.normal(0, 0.1, 30), 10))
    _, low, high = paired_ratio(ratios * 100, np.full(300, 100.0))
    iid = np.median(rng.choice(ratios, size=(2000, 300)), axis=1)
    il, ih = np.percentile(iid, [2.5, 97.5])
    assert (high - low) > 1.3 * (ih - il)


def test_a_round_gap_is_kept_between_rounds_for_every_call() -> None:
    seen = []
    calls = [lambda: seen.append("a") or 10.0 * 2, lambda: seen.append("b") or 30.0]
    time_calls(calls, Clocked(), _cfg(iters=4, min_iters=4, rounds=2, round_gap_s=0.001))
    # warm-up pass (2), 2 pairs (4), one warm call each after the gap (2), 2 pairs (4)
    assert len(seen) == 12 and seen[6:8] == ["a", "b"]


@pytest.mark.parametrize("n", [2, 5])
def test_every_variant_gets_the_samples_it_would_get_alone(n: int) -> None:
    counter = itertools.count()
    calls = [lambda: 10.0 + next(counter) % 3 for _ in range(n)]
    stats = time_calls(calls, Clocked(), _cfg(iters=30, min_iters=30, rounds=3))
    assert [len(s.samples_us) for s in stats] == [30] * n


def test_a_fast_call_is_sampled_until_min_seconds_have_passed_and_never_past_max_seconds() -> None:
    import time

    from neuronexp.cell.timing import time_calls

    cfg = TimingConfig(warmup=0, iters=10, min_iters=10, rounds=2, round_gap_s=0.0, min_seconds=0.06, max_seconds=60)
    start = time.perf_counter()
    stats = time_calls([lambda: time.sleep(0.001)], CpuBackend(), cfg)[0]
    assert time.perf_counter() - start >= 0.06 and len(stats.samples_us) > 10  # past iters, until min_seconds
    capped = TimingConfig(warmup=0, iters=10, min_iters=10, rounds=1, round_gap_s=0.0, min_seconds=10, max_seconds=0.05)
    start = time.perf_counter()
    time_calls([lambda: time.sleep(0.001)], CpuBackend(), capped)
    assert time.perf_counter() - start < 1.0  # min_seconds beyond max_seconds: max_seconds wins


def test_a_ratio_that_drifts_between_rounds_widens_the_interval_to_cover_it() -> None:
    rng = np.random.default_rng(5)
    # Five rounds whose true ratio differs (0.9 to 1.1: the variants do not slow down alike), tight within each.
    truths = np.array([0.9, 0.95, 1.0, 1.05, 1.1])
    rounds = np.repeat(np.arange(5), 80)
    base = 100 * np.exp(rng.normal(0, 0.3, 400))
    cell = base / truths[rounds] * np.exp(rng.normal(0, 0.01, 400))
    speedup, low, high = paired_ratio(base, cell, rounds)
    assert speedup == pytest.approx(1.0, abs=0.01)
    assert low < 0.96 and high > 1.04  # the rounds' own spread, not the pairs' (±0.2%)
    _, ilow, ihigh = paired_ratio(base, cell)  # without rounds: the pairs alone, blind to the drift's level
    assert (ihigh - ilow) < (high - low)


def test_the_speedup_is_the_median_of_every_pairs_ratio_and_its_interval_holds_each_rounds_placement() -> None:
    # Known per-pair ratios in 20 rounds of 5 pairs: the speedup is the median of all 100, not a median of medians.
    ratios = np.array([1.0, 1.1, 1.2, 1.3, 1.4] * 20)
    rounds = np.repeat(np.arange(20), 5)
    base = np.full(100, 200.0)
    speedup, _, _ = paired_ratio(base, base / ratios, rounds)
    assert speedup == pytest.approx(1.2)
    # Each round a placement that moves the true ratio (log sd 0.05, as measured on the 2-vCPU VM), pairs ±15%:
    # the interval over rounds then pairs holds the truth about 95 times in 100.
    rng = np.random.default_rng(17)
    covered = 0
    for _ in range(60):
        placement = np.exp(rng.normal(0, 0.05, 20))[rounds]
        noisy = base / (1.5 * placement * np.exp(rng.normal(0, 0.15, 100)))
        _, low, high = paired_ratio(base, noisy, rounds, resamples=1000)
        covered += low <= 1.5 <= high
    assert covered >= 0.85 * 60


def _pooled_round_medians_by_value(groups: list[np.ndarray], rng: np.random.Generator, resamples: int) -> np.ndarray:
    """The resampling as its docstring says it, one resample at a time, medians of the values themselves."""
    k, sizes = len(groups), np.array([len(g) for g in groups])
    per_round = max(1, min(round(sizes.mean()), _RESAMPLE_VALUES // k))
    flat, starts = np.concatenate(groups), np.concatenate([[0], np.cumsum(sizes)[:-1]])
    step, out = max(1, 10**6 // (k * per_round)), []
    for first in range(0, resamples, step):  # the same draws, in the same order, as analysis.paired
        picked = rng.integers(0, k, size=(min(step, resamples - first), k))
        offsets = (rng.random((*picked.shape, per_round)) * sizes[picked][:, :, None]).astype(np.int64)
        out += [np.median(row) for row in flat[starts[picked][:, :, None] + offsets].reshape(len(picked), -1)]
    return np.array(out)


@pytest.mark.parametrize("seed", range(12))
def test_the_medians_found_by_rank_are_the_medians_of_the_values(seed: int) -> None:
    """Ties, odd and even resample sizes, rounds of different sizes, and more values than 16-bit ranks hold."""
    rng = np.random.default_rng(seed)
    k = int(rng.integers(1, 12))
    sizes = rng.integers(1, 40, size=k) if seed < 11 else np.full(k, 2**15 // k + 7)
    groups = [np.round(rng.random(int(n)) * 5, int(rng.integers(0, 3))) + 1 for n in sizes]
    expected = _pooled_round_medians_by_value(groups, np.random.default_rng(seed), 300)
    assert np.array_equal(pooled_round_medians(groups, np.random.default_rng(seed), 300), expected)
