"""The wall-clock pass: synchronized per-call samples in rounds, kept apart from the profiled pass.

A cell's latency is the median of its round medians, not of pooled samples: on a shared host a call's time
drifts by ±10% over seconds, so samples taken back to back are not independent. Rounds spread over the window
sample that drift and, each at a new place of the inputs, their placement; the spread between slices of them
is the cell's noise figure (docs/timing.md, "Rounds").
"""

from __future__ import annotations

import gc
import math
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from neuronexp.analysis.precision import PrecisionRule
from neuronexp.backends import Backend
from neuronexp.config import TimingConfig
from neuronexp.host.activity import Activity, snapshot, window
from neuronexp.host.reference import HostReference, ReferenceTimes


@dataclass(kw_only=True)
class LatencyStats:
    samples_us: list[float]
    median_us: float  # median of the round medians
    p10_us: float  # p10/p90 over every sample
    p90_us: float
    rounds: list[int] = field(default_factory=list)  # each sample's round
    round_medians_us: list[float] = field(default_factory=list)
    activity: Activity | None = None
    warmup_calls: int = 0  # made before the samples; fewer than timing.warmup when max_seconds cut them short
    pairs: list[int] | None = None  # each sample's pair index when timed paired with its group (time_calls)
    block: int = 1  # calls per sample: short paired calls are timed in blocks (BLOCK_US)
    host: ReferenceTimes | None = None  # the host reference workloads, each round (host.reference)
    stop: Stopped | None = None  # why the rounds ended, and the precision reached (time_calls' stop hook)

    @property
    def round_spread(self) -> float:
        """(max - min) / median of the medians of the window's slices (SLICES runs of consecutive rounds; the rounds
        themselves when there are no more): 0 with one round."""
        meds = slice_medians(self.samples_us, self.rounds)
        mid = float(np.median(meds)) if meds else math.nan
        return (max(meds) - min(meds)) / mid if len(meds) > 1 and mid > 0 else 0.0


# The noise figure compares SLICES parts of the timed window, whatever the round count: rounds are many and short
# (each one a placement of the inputs, docs/timing.md "Rounds"), and the spread of 20 medians of 5 samples
# each measures how few samples a round has, not how far the host moved; 5 slices keep noise.round_spread's scale.
SLICES = 5


def slice_medians(samples_us: Sequence[float], rounds: Sequence[int]) -> list[float]:
    """The median of each of SLICES runs of consecutive rounds (each round its own slice when there are no more)."""
    if not len(samples_us):
        return []
    labels = np.asarray(rounds)
    order = sorted(set(labels.tolist()))
    slice_of = {r: i * min(SLICES, len(order)) // len(order) for i, r in enumerate(order)}
    arr, parts = np.asarray(samples_us, dtype=float), np.array([slice_of[r] for r in labels.tolist()])
    return [float(np.median(arr[parts == k])) for k in sorted(set(parts.tolist()))]


def summarize_samples(
    samples_us: list[float],
    rounds: list[int] | None = None,
    warmup_calls: int = 0,
    pairs: list[int] | None = None,
    block: int = 1,
) -> LatencyStats:
    arr = np.asarray(samples_us, dtype=float)
    rounds = list(rounds) if rounds is not None else [0] * len(arr)
    if not arr.size:
        return LatencyStats(
            samples_us=[], median_us=math.nan, p10_us=math.nan, p90_us=math.nan, warmup_calls=warmup_calls
        )
    p10, p90 = np.percentile(arr, [10, 90])
    labels = np.asarray(rounds)
    medians = [float(np.median(arr[labels == r])) for r in sorted(set(rounds))]
    return LatencyStats(
        samples_us=list(map(float, arr)),
        median_us=float(np.median(medians)),
        p10_us=float(p10),
        p90_us=float(p90),
        rounds=rounds,
        round_medians_us=medians,
        warmup_calls=warmup_calls,
        pairs=pairs,
        block=block,
    )


@dataclass(frozen=True)
class Stopped:
    """Why a timed pass took the rounds it took (the row's timing_stop and precision_* columns): `count`, the fixed
    count (timing.precision=null); `alone`, a cell with no other to compare (the fixed count too); `precision`, every
    paired ratio of the group known within the target; `max_seconds`, the budget spent before the target was met."""

    why: str
    target: float = math.nan  # timing.precision, NaN for a fixed count
    reached: float = math.nan  # the widest paired ratio's 95% interval, relative half-width (analysis.precision)

    @property
    def met(self) -> bool | None:
        return None if math.isnan(self.target) else self.why == "precision"


# Paired calls shorter than this are timed in blocks of ceil(BLOCK_US / call) calls, one sample a block: the
# clock read and the Python loop around each call cost ~0.2 µs, a bias of 2% and more below 10 µs. Longer calls
# keep one call a sample, as the finer the interleaving, the better pairing cancels drift (docs/methodology.md).
BLOCK_US = 10.0
_MAX_BLOCK = 1000


class CallFailed(Exception):
    """One of the timed calls raised (during warm-up, a round's warm call or a sample): `index` says which; the
    error itself is the `__cause__`. cell.group makes it that cell's error row and times the others again."""

    def __init__(self, index: int) -> None:
        super().__init__(f"timed call {index} raised")
        self.index = index


@contextmanager
def _blamed(index: int) -> Iterator[None]:
    try:
        yield
    except (Exception, SystemExit) as exc:  # a layer's sys.exit is its failure too (cell.run)
        raise CallFailed(index) from exc


def _block_size(call_us: float) -> int:
    if not call_us > 0 or call_us >= BLOCK_US:
        return 1
    return min(_MAX_BLOCK, math.ceil(BLOCK_US / call_us))


def _sample(fn: Callable[[], Any], backend: Backend, block: int) -> float:
    if block == 1:
        return backend.time_call(fn)
    start = time.perf_counter_ns()
    for _ in range(block):
        fn()
    backend.synchronize()
    return (time.perf_counter_ns() - start) / 1e3 / block


# relocate(): a spacer of 0 to 2 MiB in 64-byte steps moves the inputs across every cache set and 4K page offset.
_SPACER_STEPS, _SPACER_STEP = 2**15, 64


def time_calls(
    calls: list[Callable[[], Any]],
    backend: Backend,
    cfg: TimingConfig,
    seed: int | None = None,
    relocate: Sequence[Callable[[int], None]] | None = None,
    report: Callable[[str], None] | None = None,
) -> list[LatencyStats]:
    """Warm up, then take rounds `round_gap_s` apart until the stop hook says enough; several calls (the cells of one
    comparison group) alternate call by call in a fresh random order each pair, each sample keeping its pair index, and
    each call gets the samples and budget it would get alone. With `relocate` (one per call) each round starts with the
    inputs moved (cell.build.Built.relocate). The machine's activity is recorded over the rounds, and they end with
    the host reference (host.reference: after a round at most every EVERY_S, and after the last); `report` hears how
    far the precision is after each round of an adaptive pass. How and why: docs/timing.md, "Paired timing", "Rounds"
    and "Sampling to a precision".
    """
    n = len(calls)
    warmup_calls, warm_us = _warm_up(calls, backend, cfg)
    blocks = [_block_size(us) if n > 1 else 1 for us in warm_us]
    timed = _TimedPass(calls, backend, cfg, np.random.default_rng(seed), relocate, blocks)
    stop = stop_hook(cfg, n)
    reference = HostReference()
    before = snapshot()
    with _collector_off():
        while not stop(timed):
            if report is not None and stop.status:
                report(stop.status)  # why it goes on
            timed.start_round()
            timed.take_round()
            reference.after_round()  # after the samples, so that it never stands between a warm call and them
        reference.close()
    activity, stopped = window(before, snapshot()), stop.outcome(timed)
    out = []
    for j in range(n):
        pairs = timed.pairs[j] if n > 1 else None
        stats = summarize_samples(timed.samples[j], timed.labels[j], warmup_calls, pairs, timed.blocks[j])
        stats.activity, stats.host, stats.stop = activity, reference.times, stopped
        out.append(stats)
    return out


class FixedCount:
    """The stop hook of `timing.precision=null`, and of a cell with no other to compare: the configured rounds, as
    torch.utils.benchmark's blocked_autorange stops at its fixed budget."""

    status = ""

    def __init__(self, why: str) -> None:
        self.why = why

    def __call__(self, timed: _TimedPass) -> bool:
        return timed.round >= timed.rounds

    def outcome(self, timed: _TimedPass) -> Stopped:
        return Stopped(self.why)


class ToPrecision:
    """The stop hook of `timing.precision` (adaptive_autorange's, on the paired ratios): after each round, whether every
    ratio between two of the group's cells is known within the target (analysis.precision); at least
    `timing.min_rounds`, at most `timing.max_seconds` of rounds a cell. The rounds are the fixed count's rounds."""

    def __init__(self, cfg: TimingConfig, calls: int) -> None:
        assert cfg.precision is not None
        self.rule = PrecisionRule(cfg.precision, cfg.min_rounds, calls)
        self.budget_s = cfg.max_seconds * calls
        self.why = self.status = ""

    def __call__(self, timed: _TimedPass) -> bool:
        if timed.round:
            self.rule.add_round(timed.last_round())
            reached, target = math.expm1(self.rule.quick()), self.rule.target
            self.status = f"timing · round {timed.round}, ±{reached:.1%} of ±{target:.1%}"
        if self.rule.met(timed.samples, timed.labels[0]):
            self.why = "precision"
        elif timed.round >= self.rule.min_rounds and timed.elapsed_s() >= self.budget_s:
            self.why = "max_seconds"
        return bool(self.why)

    def outcome(self, timed: _TimedPass) -> Stopped:
        if self.why != "precision":  # the bootstrap has not seen the last rounds: the precision reached, for the row
            self.rule.measure(timed.samples, timed.labels[0])
        return Stopped(self.why, self.rule.target, self.rule.reached)


def stop_hook(cfg: TimingConfig, calls: int) -> FixedCount | ToPrecision:
    """The one difference between a fixed count and sampling until the answer is known."""
    if cfg.precision is None:
        return FixedCount("count")
    return ToPrecision(cfg, calls) if calls > 1 else FixedCount("alone")


@contextmanager
def _collector_off() -> Iterator[None]:
    """No garbage collection while samples are taken (as timeit): it would land on whichever call triggered it."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


@dataclass
class _TimedPass:
    """The rounds of one timed pass (time_calls): each call's samples, with each sample's round and pair index."""

    calls: list[Callable[[], Any]]
    backend: Backend
    cfg: TimingConfig
    rng: np.random.Generator
    relocate: Sequence[Callable[[int], None]] | None
    blocks: list[int]  # calls per sample (_block_size)

    def __post_init__(self) -> None:
        cfg = self.cfg
        self.rounds = max(1, min(cfg.rounds, cfg.iters))  # never more rounds than samples asked for: iters=5 is 5
        self.minimum = max(1, math.ceil(cfg.min_iters / self.rounds))  # samples a round takes before it may stop
        self.samples: list[list[float]] = [[] for _ in self.calls]
        self.labels: list[list[int]] = [[] for _ in self.calls]
        self.pairs: list[list[int]] = [[] for _ in self.calls]
        self.pair = 0
        self.round = 0  # rounds taken
        self.round_start = 0  # the index of the current round's first sample
        self.started = time.perf_counter()

    def elapsed_s(self) -> float:
        return time.perf_counter() - self.started

    def last_round(self) -> list[list[float]]:
        """Each call's samples of the round just taken, aligned by pair."""
        return [s[self.round_start :] for s in self.samples]

    def start_round(self) -> None:
        """The pause between rounds, the inputs moved (timing.relocate), and one warm call of each after either."""
        r, moved = self.round, bool(self.relocate) and self.cfg.relocate
        if r and self.cfg.round_gap_s > 0:
            time.sleep(self.cfg.round_gap_s)
        if moved:
            for j, move in enumerate(self.relocate or ()):
                with _blamed(j):
                    move(int(self.rng.integers(_SPACER_STEPS)) * _SPACER_STEP)
        if moved or r:  # after the move, or the last round's reference and the pause: a round starts warm
            for j, fn in enumerate(self.calls):
                with _blamed(j):
                    fn()
            self.backend.synchronize()

    def take_round(self) -> None:
        """The next round's samples: its share of iters, on until its share of min_seconds, cut at its share of
        max_seconds once it has `minimum`."""
        cfg, n, r = self.cfg, len(self.calls), self.round
        self.round_start = len(self.samples[0])
        started = time.perf_counter()
        deadline = started + cfg.max_seconds * n / self.rounds
        long_enough = started + min(cfg.min_seconds, cfg.max_seconds) * n / self.rounds
        target = cfg.iters // self.rounds + (r < cfg.iters % self.rounds)  # iters in all: 30 in 20 rounds, 2 then 1
        taken = 0
        while taken < target or time.perf_counter() < long_enough:
            for j in self.rng.permutation(n) if n > 1 else (0,):
                with _blamed(int(j)):  # around the sample, not in it: the clock never sees the guard
                    self.samples[j].append(_sample(self.calls[j], self.backend, self.blocks[j]))
                self.labels[j].append(r)
                self.pairs[j].append(self.pair)
            self.pair += 1
            taken += 1
            if taken >= self.minimum and time.perf_counter() > deadline:
                break
        self.round += 1


def _warm_up(calls: list[Callable[[], Any]], backend: Backend, cfg: TimingConfig) -> tuple[int, list[float]]:
    """The warm-up passes made, and each call's time in the last one when there are several. Cut after `max_seconds`
    once the backend's minimum is made: a count meant for a fast cell must not run for hours on a slow one (on an
    asynchronous device the clock sees calls queued, so the cut comes up to a queue's depth later)."""
    n = len(calls)
    deadline = time.perf_counter() + cfg.max_seconds * n
    made, warm_us = 0, [math.nan] * n
    while made < cfg.warmup and (made < backend.min_warmup_calls or time.perf_counter() < deadline):
        for j, fn in enumerate(calls):
            with _blamed(j):
                if n > 1:  # the last warm-up pass sizes the blocks
                    warm_us[j] = backend.time_call(fn)
                else:
                    fn()
        made += 1
    backend.synchronize()
    return made, warm_us
