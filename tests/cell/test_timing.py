"""The wall-clock pass in rounds, and the noise figures a row gets from it (issue 9, points 3 and 4)."""

from __future__ import annotations

import itertools
import time

import pytest

from neuronexp.backends.cpu.cpu_backend import CpuBackend
from neuronexp.cell.noise_columns import noise_columns, profile_warning
from neuronexp.cell.timing import summarize_samples, time_calls
from neuronexp.config import TimingConfig
from neuronexp.host.activity import Activity, Snapshot, window
from neuronexp.host.reference import EVERY_S


class ScriptedBackend(CpuBackend):
    """time_call returns the next scripted latency instead of measuring one."""

    def __init__(self, latencies: list[float]) -> None:
        super().__init__()
        self.latencies = itertools.cycle(latencies)

    def time_call(self, fn) -> float:
        fn()
        return next(self.latencies)


def test_samples_are_taken_in_rounds_and_the_median_is_over_round_medians() -> None:
    calls = []
    cfg = TimingConfig(min_seconds=0, warmup=2, iters=9, min_iters=3, rounds=3, round_gap_s=0.0, max_seconds=60)
    stats = time_calls(
        [lambda: calls.append(1)], ScriptedBackend([10.0, 10.0, 10.0, 50.0, 50.0, 50.0, 11.0, 12.0, 13.0]), cfg
    )[0]
    assert stats.rounds == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert stats.round_medians_us == [10.0, 50.0, 12.0]
    assert stats.median_us == 12.0  # the median of the round medians
    assert stats.round_spread == pytest.approx((50 - 10) / 12)
    # Warm-up, the samples, and one warm call before rounds 1 and 2.
    assert len(calls) == 2 + 9 + 2
    assert stats.activity is not None and stats.activity.wall_s > 0
    # Rounds of microseconds: one host reference, after the last (host.reference.EVERY_S).
    assert stats.host is not None and len(stats.host.dispatch_us) == len(stats.host.memory_us) == 1
    assert all(0 < d < m for d, m in zip(stats.host.dispatch_us, stats.host.memory_us))


def test_a_round_as_long_as_the_host_reference_interval_ends_with_one() -> None:
    cfg = TimingConfig(min_seconds=3 * EVERY_S, warmup=0, iters=3, min_iters=1, rounds=3, max_seconds=60)
    stats = time_calls([lambda: time.sleep(0.001)], CpuBackend(), cfg)[0]
    assert sorted(set(stats.rounds)) == [0, 1, 2]
    assert stats.host is not None and len(stats.host.dispatch_us) == len(stats.host.memory_us) == 3


def test_short_rounds_share_a_host_reference_every_interval() -> None:
    cfg = TimingConfig(min_seconds=0.3, warmup=0, iters=30, min_iters=1, rounds=30, max_seconds=60)
    stats = time_calls([lambda: time.sleep(0.0005)], CpuBackend(), cfg)[0]
    assert stats.host is not None
    # 30 rounds of 10 ms: one reference after the round that passes each 25 ms (or so, on a loaded host), and the last.
    assert 2 <= len(stats.host.memory_us) <= 30 * 10 // 25 + 1


def test_rounds_are_separated_by_the_gap_and_restart_warm() -> None:
    calls: list[float] = []
    cfg = TimingConfig(min_seconds=0, warmup=0, iters=4, min_iters=4, rounds=4, round_gap_s=0.03, max_seconds=60)
    start = time.perf_counter()
    stats = time_calls([lambda: calls.append(time.perf_counter())], ScriptedBackend([5.0]), cfg)[0]
    assert time.perf_counter() - start >= 3 * 0.03
    assert stats.rounds == [0, 1, 2, 3]
    assert len(calls) == 4 + 3  # one warm call after each pause


def test_there_are_never_more_rounds_than_samples_asked_for() -> None:
    calls: list[int] = []
    cfg = TimingConfig(min_seconds=0, warmup=0, iters=4, min_iters=4, rounds=20, round_gap_s=0.0, max_seconds=60)
    stats = time_calls([lambda: calls.append(1)], ScriptedBackend([5.0, 6.0, 7.0, 8.0]), cfg)[0]
    assert stats.rounds == [0, 1, 2, 3] and stats.samples_us == [5.0, 6.0, 7.0, 8.0]
    # Four rounds, not twenty empty ones: one warm call before each round after the first.
    assert len(calls) == 4 + 3


def test_each_round_gets_its_share_of_the_time_budget() -> None:
    cfg = TimingConfig(min_seconds=0, warmup=0, iters=1000, min_iters=4, rounds=2, round_gap_s=0.0, max_seconds=0.02)
    stats = time_calls([lambda: time.sleep(0.004)], CpuBackend(), cfg)[0]
    per_round = [stats.rounds.count(r) for r in (0, 1)]
    assert all(2 <= n < 20 for n in per_round), per_round  # min_iters/rounds = 2 each, then the 10 ms share ran out


def test_one_round_is_the_plain_median() -> None:
    stats = summarize_samples([3.0, 1.0, 2.0, 10.0])
    assert stats.median_us == 2.5 and stats.round_medians_us == [2.5] and stats.round_spread == 0.0


def test_activity_window_counts_other_processes_and_steal() -> None:
    # user nice system idle iowait irq softirq steal: 2 s of wall on 2 CPUs at 100 ticks/s = 400 ticks
    before = Snapshot(t=0.0, cpu_ticks=(0,) * 10, self_cpu_s=0.0)
    after = Snapshot(t=2.0, cpu_ticks=(250, 0, 10, 100, 0, 0, 0, 40, 0, 0), self_cpu_s=1.0)
    act = window(before, after)
    hz = 100  # SC_CLK_TCK on Linux
    assert act.other_cpu == pytest.approx(((250 + 10) / hz - 1.0) / 2.0)
    assert act.steal == pytest.approx(40 / 400)


def _latency(rounds: list[list[float]], other: float | None = 0.0, steal: float | None = 0.0):
    stats = summarize_samples([x for r in rounds for x in r], [i for i, r in enumerate(rounds) for _ in r])
    stats.activity = Activity(1.0, 0.5, other, steal)
    return stats


def test_a_quiet_cell_is_not_noisy() -> None:
    cols = noise_columns(_latency([[100, 101, 102], [99, 100, 103], [101, 100, 102]]))
    assert not cols["noisy"] and cols["noise"] is None and cols["latency_rounds"] == 3
    assert cols["round_spread"] < 0.05 and cols["p90_p10"] < 1.1


@pytest.mark.parametrize(
    "rounds, other, steal, reason",
    [
        ([[100, 100], [200, 200], [100, 100]], 0.0, 0.0, "rounds spread 100%"),
        ([[10, 100, 10, 100]], 0.0, 0.0, "p90/p10"),
        ([[100, 100], [100, 100]], 0.4, 0.0, "other processes used 0.40 cores"),
        ([[100, 100], [100, 100]], 0.0, 0.2, "CPU steal 20%"),
    ],
)
def test_noise_beyond_a_threshold_flags_the_cell(rounds, other, steal, reason) -> None:
    cols = noise_columns(_latency(rounds, other, steal))
    assert cols["noisy"] and reason in cols["noise"]


def test_a_little_other_work_is_not_noise() -> None:
    assert not noise_columns(_latency([[100, 100]], other=0.2, steal=0.01))["noisy"]


def test_a_distorting_profile_is_named() -> None:
    assert profile_warning(1.2) is None
    assert "2.0x the wall-clock median" in profile_warning(2.0)


def test_only_the_cells_own_cpus_count(monkeypatch: pytest.MonkeyPatch) -> None:
    """Other work on cores the cell may not use (another slot, another job) is not the cell's noise."""
    from neuronexp.host import activity

    stat = "cpu  300 0 0 100 0 0 0 0 0 0\ncpu0 100 0 0 50 0 0 0 0 0 0\ncpu1 200 0 0 50 0 0 0 0 0 0\nintr 1\n"
    monkeypatch.setattr(activity, "_read", lambda path: stat)
    monkeypatch.setattr(activity, "_affinity", lambda: {0})
    assert activity._cpu_ticks() == (100, 0, 0, 50, 0, 0, 0, 0, 0, 0)
    monkeypatch.setattr(activity, "_affinity", lambda: {0, 1})
    assert activity._cpu_ticks() == (300, 0, 0, 100, 0, 0, 0, 0, 0, 0)


def test_iters_is_the_number_of_samples_in_all_whatever_the_rounds() -> None:
    cfg = TimingConfig(min_seconds=0, warmup=0, iters=30, min_iters=1, rounds=20, round_gap_s=0.0, max_seconds=60)
    stats = time_calls([lambda: None], ScriptedBackend([5.0]), cfg)[0]
    assert len(stats.samples_us) == 30 and stats.rounds == [r for r in range(20) for _ in range(2 if r < 10 else 1)]
