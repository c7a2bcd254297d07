"""The latency is the median of the round medians, not the median of the pooled samples: rounds of unequal size
tell the two apart ([10,10,10 | 50,50,50 | 11,12,13] gives 12 both ways; these do not)."""

from __future__ import annotations

from neuronexp.cell.timing import summarize_samples


def test_unequal_rounds_give_the_median_of_round_medians() -> None:
    samples = [1.0] * 5 + [2.0] * 2 + [3.0] * 2
    rounds = [0] * 5 + [1] * 2 + [2] * 2
    stats = summarize_samples(samples, rounds)
    assert stats.round_medians_us == [1.0, 2.0, 3.0]
    assert stats.median_us == 2.0  # pooled, the five 1.0s would make it 1.0
    assert stats.round_spread == (3.0 - 1.0) / 2.0


def test_a_long_slow_round_cannot_outvote_the_others() -> None:
    stats = summarize_samples([100.0] * 20 + [10.0] * 3 + [11.0] * 3, [0] * 20 + [1] * 3 + [2] * 3)
    assert stats.median_us == 11.0
