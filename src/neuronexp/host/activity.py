"""What the machine was doing while a cell was measured: load average, CPU steal, other processes' CPU time.

Two snapshots bracket the window (`snapshot()` before, `window(before, after)` after): the kernel's counters
are cumulative, so no sampling thread runs beside the measurement. Linux only (/proc); elsewhere the figures
are None and the row says nothing about the machine rather than something wrong.
"""

from __future__ import annotations

import os
import resource
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class Snapshot:
    t: float
    # /proc/stat "cpuN" lines summed over the CPUs this process may run on: user nice system idle iowait irq
    # softirq steal ...
    cpu_ticks: tuple[int, ...] | None
    self_cpu_s: float  # this process's user + system time (all its threads)


@dataclass(frozen=True)
class Activity:
    """The machine over one window. Fractions are of the window's wall time."""

    wall_s: float
    load_avg_1m: float | None  # run-queue length averaged over the last minute (at the window's end)
    # Cores' worth of CPU used by every other process on this process's CPUs during the window: 0 quiet, 1.0
    # one of them busy.
    other_cpu: float | None
    # Share of CPU time the hypervisor gave to other guests (the kernel's "steal"); None where not reported.
    steal: float | None


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="ascii") as f:
            return f.read()
    except OSError:
        return None


def _affinity() -> set[int] | None:
    return set(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None


def _cpu_ticks() -> tuple[int, ...] | None:
    """Ticks summed over the CPUs this process may use (all CPUs where affinity is unknown): other work on
    other cores (another launcher slot, another job) is not this cell's noise."""
    stat = _read("/proc/stat")
    if not stat or not stat.startswith("cpu "):
        return None
    mine = _affinity()
    rows = [line.split() for line in stat.splitlines() if line.startswith("cpu") and line[3:4].isdigit()]
    picked = [r for r in rows if mine is None or int(r[0][3:]) in mine] or [stat.splitlines()[0].split()]
    width = min(len(r) for r in picked) - 1
    return tuple(sum(int(r[i + 1]) for r in picked) for i in range(width))


def snapshot() -> Snapshot:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return Snapshot(time.monotonic(), _cpu_ticks(), usage.ru_utime + usage.ru_stime)


def load_average() -> float | None:
    try:
        return float(os.getloadavg()[0])
    except (AttributeError, OSError):
        return None


def window(before: Snapshot, after: Snapshot) -> Activity:
    """Activity between two snapshots. /proc/stat counts in 1/USER_HZ ticks (10 ms) summed over CPUs, so
    over a window of W seconds `other_cpu` is good to about ±0.01·cores/W; short windows read coarse."""
    wall = max(after.t - before.t, 1e-9)
    other = steal = None
    if before.cpu_ticks and after.cpu_ticks and len(before.cpu_ticks) >= 8:
        d = [b - a for a, b in zip(before.cpu_ticks, after.cpu_ticks)]
        hz = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
        total = sum(d[:8])  # guest time is already inside user/nice
        busy_s = (total - d[3] - d[4] - d[7]) / hz  # all but idle, iowait and steal
        other = max(0.0, busy_s - (after.self_cpu_s - before.self_cpu_s)) / wall
        steal = d[7] / total if total else 0.0
    return Activity(wall, load_average(), other, steal)
