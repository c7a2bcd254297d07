"""Sampling to a precision (`timing.precision`): a comparison group takes rounds until every paired ratio is known
within the target, between `timing.min_rounds` and `timing.max_seconds`, and says why it stopped; the fixed count and a
cell alone are as before. The calls return scripted latencies (Clocked), so the ratio and its noise are known."""

from __future__ import annotations

import math

import numpy as np
import pytest

from neuronexp.backends.cpu.cpu_backend import CpuBackend
from neuronexp.cell.timing import time_calls
from neuronexp.config import TimingConfig
from neuronexp.host.reference import HostReference


@pytest.fixture(autouse=True)
def _no_host_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each round ends with the host reference, ~6 ms of real work (16 MiB multiplied four times) that these tests do
    not look at (tests/compare/test_host_reference.py does): without it a pass of 30 rounds takes 0.1 s, not 1-8 s."""
    monkeypatch.setattr(HostReference, "measure", lambda self: None)


class Clocked(CpuBackend):
    """time_call returns what the call itself returns (its scripted latency in µs) instead of measuring."""

    def time_call(self, fn) -> float:
        return float(fn())


def _cfg(**kw) -> TimingConfig:
    base = dict(min_seconds=0, warmup=1, iters=100, min_iters=5, rounds=20, round_gap_s=0.0, max_seconds=60)
    return TimingConfig(**{**base, "precision": 0.05, "min_rounds": 10, **kw})


def _group(ratio: float, spread: float, seed: int = 3) -> list:
    """A baseline of ~100 µs and a cell `ratio` times faster, each call's time scattered by exp(N(0, spread))."""
    rng = np.random.default_rng(seed)
    return [
        lambda: 100.0 * math.exp(rng.normal(0, spread)),
        lambda: 100.0 / ratio * math.exp(rng.normal(0, spread)),
    ]


def test_a_tight_ratio_stops_after_min_rounds_with_the_target_met() -> None:
    base, cell = time_calls(_group(2.0, 0.01), Clocked(), _cfg(), seed=1)
    assert base.stop is cell.stop and cell.stop is not None
    assert cell.stop.why == "precision" and cell.stop.met is True
    assert len(cell.round_medians_us) == 10  # min_rounds: a fixed count would have taken 20
    assert 0 < cell.stop.reached <= 0.05 and cell.stop.target == 0.05
    assert cell.pairs == base.pairs and len(cell.samples_us) == 10 * 5  # the fixed count's rounds: 5 pairs each


def test_a_noisy_ratio_takes_more_rounds_than_the_fixed_count_until_the_target_is_met() -> None:
    (_, cell) = time_calls(_group(2.0, 0.1), Clocked(), _cfg(), seed=1)
    assert cell.stop is not None and cell.stop.why == "precision" and cell.stop.reached <= 0.05
    assert len(cell.round_medians_us) > 20


def test_the_budget_stops_a_group_the_target_cannot_be_met_for_and_says_so() -> None:
    # Each cell's share of max_seconds: 0.15 s, 0.3 s for the group; ±5% with a scatter of ×e^1.5 a call: never.
    calls = _group(2.0, 1.5)
    start = __import__("time").perf_counter()
    (_, cell) = time_calls(calls, Clocked(), _cfg(max_seconds=0.15), seed=1)
    assert cell.stop is not None and cell.stop.why == "max_seconds" and cell.stop.met is False
    assert cell.stop.reached > 0.05 and math.isfinite(cell.stop.reached)  # the bootstrap's, on every round taken
    assert len(cell.round_medians_us) >= 10 and __import__("time").perf_counter() - start < 5


def test_min_rounds_come_first_even_past_the_budget() -> None:
    (_, cell) = time_calls(_group(2.0, 1.5), Clocked(), _cfg(max_seconds=1e-6, min_rounds=12), seed=1)
    assert cell.stop is not None and cell.stop.why == "max_seconds" and len(cell.round_medians_us) == 12


def test_where_the_ratio_lies_never_decides_when_to_stop() -> None:
    # The same scatter around ×1 (A/A), ×2 and ×0.5: the same draws, so the same widths, round by round; a rule that
    # stopped once the interval left 1 would stop the ×2 and ×0.5 groups sooner than the A/A one.
    taken = []
    for ratio in (1.0, 2.0, 0.5):
        (_, cell) = time_calls(_group(ratio, 0.11, seed=7), Clocked(), _cfg(), seed=2)
        assert cell.stop is not None and cell.stop.why == "precision"
        taken.append((len(cell.round_medians_us), round(cell.stop.reached, 9)))
    assert taken[0] == taken[1] == taken[2] and taken[0][0] > 10, taken


def test_a_fixed_count_and_a_cell_alone_take_the_configured_rounds() -> None:
    fixed = time_calls(_group(2.0, 0.01), Clocked(), _cfg(precision=None), seed=1)
    assert all(s.stop is not None and s.stop.why == "count" and s.stop.met is None for s in fixed)
    assert [len(s.round_medians_us) for s in fixed] == [20, 20] and len(fixed[0].samples_us) == 100
    assert math.isnan(fixed[0].stop.target) and math.isnan(fixed[0].stop.reached)  # type: ignore[union-attr]
    (alone,) = time_calls(_group(2.0, 0.01)[:1], Clocked(), _cfg(), seed=1)
    assert alone.stop is not None and alone.stop.why == "alone" and alone.stop.met is None
    assert len(alone.round_medians_us) == 20 and len(alone.samples_us) == 100


def test_each_round_of_an_adaptive_pass_reports_how_far_the_precision_is() -> None:
    heard: list[str] = []
    (_, cell) = time_calls(_group(2.0, 0.1), Clocked(), _cfg(), seed=1, report=heard.append)
    # Before each round after the first: the rounds so far and how far from the target (not yet the bootstrap's).
    assert len(heard) == len(cell.round_medians_us) - 1
    assert heard[0] == "timing · round 1, ±inf% of ±5.0%"  # one round: no spread to estimate from yet
    assert all(h.startswith(f"timing · round {i + 1}, ±") and h.endswith(" of ±5.0%") for i, h in enumerate(heard))
    fixed: list[str] = []
    time_calls(_group(2.0, 0.1), Clocked(), _cfg(precision=None), seed=1, report=fixed.append)
    assert fixed == []  # a fixed count has nothing to report
