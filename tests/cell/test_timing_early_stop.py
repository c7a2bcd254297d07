"""The wall-clock pass's early stop: `timing.max_seconds` cuts sampling short once `timing.min_iters` are in.

The callable sleeps a known time, so how many samples fit is known without trusting the clock's resolution:
each sample takes at least the sleep, so no more than max_seconds / sleep + 1 fit before the cut. One round
(timing.rounds=1): how rounds share the budget is tests/cell/test_timing.py's.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

import neuronexp
from helpers import FAST, run_dirs
from neuronexp.backends.cpu.cpu_backend import CpuBackend
from neuronexp.cell.timing import time_calls
from neuronexp.config import TimingConfig


def _sleeper(seconds: float):
    return lambda: time.sleep(seconds)


def test_sampling_stops_after_max_seconds_once_min_iters_are_in() -> None:
    cfg = TimingConfig(min_seconds=0, rounds=1, round_gap_s=0.0, warmup=0, iters=200, max_seconds=0.1, min_iters=3)
    stats = time_calls([_sleeper(0.01)], CpuBackend(), cfg)[0]
    # Without the cut: all 200 samples (2 s). With it: at most 0.1 s / 0.01 s + 1 samples, at least min_iters.
    assert 3 <= len(stats.samples_us) <= 11, len(stats.samples_us)
    assert all(s >= 10_000 for s in stats.samples_us)  # each sample is one call's wall time, in µs


def test_min_iters_are_taken_even_when_max_seconds_has_passed() -> None:
    cfg = TimingConfig(min_seconds=0, rounds=1, round_gap_s=0.0, warmup=0, iters=100, max_seconds=0.001, min_iters=6)
    stats = time_calls([_sleeper(0.005)], CpuBackend(), cfg)[0]
    assert len(stats.samples_us) == 6  # the first sample is already past the deadline; sampling goes on to 6


def test_without_a_deadline_every_iteration_is_sampled() -> None:
    cfg = TimingConfig(min_seconds=0, rounds=1, round_gap_s=0.0, warmup=2, iters=7, max_seconds=60.0, min_iters=1)
    calls: list[int] = []
    stats = time_calls([lambda: calls.append(1)], CpuBackend(), cfg)[0]
    assert len(stats.samples_us) == 7 and stats.warmup_calls == 2 and len(calls) == 9


def test_warm_up_stops_after_max_seconds() -> None:
    backend = CpuBackend()
    cfg = TimingConfig(min_seconds=0, rounds=1, round_gap_s=0.0, warmup=10**9, iters=3, max_seconds=0.05, min_iters=3)
    stats = time_calls([_sleeper(0.01)], backend, cfg)[0]
    assert backend.min_warmup_calls <= stats.warmup_calls <= 6 and len(stats.samples_us) == 3


@pytest.mark.slow  # 5 s on the 2-core VM
def test_the_command_line_keys_cut_sampling_and_the_cell_records_how_many(cli, tmp_path: Path) -> None:
    # timing.iters=50, but a deadline of a microsecond: exactly min_iters samples, recorded as the cell's count.
    args = [a for a in FAST if not a.startswith(("timing.iters=", "timing.min_iters="))]
    res = cli(
        *args,
        "timing.iters=50",
        "timing.min_iters=4",
        "timing.max_seconds=0.000001",
        "timing.rounds=1",
        "backend=cpu",
        "roofline.probe=off",
    )
    assert res.returncode == 0, res.stderr
    tables = neuronexp.load(run_dirs(tmp_path)[0])
    assert tables.cells.iloc[0]["latency_samples"] == len(tables.samples) == 4
