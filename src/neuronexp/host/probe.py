"""The host's roofs, measured: a short STREAM-like probe (copy and triad) and a GEMM, on the cell's threads. Nothing
is published for a CPU, so a CPU cell is held against what this host sustained, measured once per host, thread
count and torch version and cached under a file lock (roofline.cache_dir). Each figure records the load it was
measured under; a disturbed one is measured again and the higher kept, since disturbance only lowers a roof
(docs/profile.md, "How far from the limit", has the method).
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from functools import partial
from pathlib import Path
from typing import Any

import torch

from neuronexp.host.memory import available_bytes
from neuronexp.results.files import write_json

GEMM_BUDGET_S = 0.5
STREAM_BUDGET_S = 0.3
# Cores' worth of CPU other processes may use while a probe still counts as undisturbed.
QUIET_OTHERS = 0.25
# A disturbed figure is measured again after this long (not every cell: the probe costs about a second).
RETRY_S = 600.0
_MIB = 1 << 20
CACHE_FILE = "host_roofs.json"
PROBE_VERSION = 2


def _llc_bytes() -> int | None:
    """The largest cache of cpu0 (sysfs), None where the kernel does not say."""
    sizes = []
    for index in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*"):
        try:
            text = (index / "size").read_text().strip().upper()
        except OSError:
            continue
        scale = {"K": 1 << 10, "M": _MIB, "G": 1 << 30}.get(text[-1:], 1)
        digits = text.rstrip("KMG")
        if digits.isdigit():
            sizes.append(int(digits) * scale)
    return max(sizes) if sizes else None


def _busy_seconds() -> float | None:
    """CPU seconds every process of the host has used (/proc/stat), None off Linux."""
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
        user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in fields[:8])
    except (OSError, ValueError, IndexError):
        return None
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


@contextmanager
def _load_meter(record: dict[str, Any]) -> Iterator[None]:
    """Fills `record` with the load while the block ran: load_1m, other_cpu (cores' worth used by others)."""
    busy0, own0, wall0 = _busy_seconds(), time.process_time(), time.perf_counter()
    yield
    busy1, own1, wall = _busy_seconds(), time.process_time(), time.perf_counter() - wall0
    record["load_1m"] = round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None
    others = (busy1 - busy0 - (own1 - own0)) / wall if busy0 is not None and busy1 is not None and wall > 0 else None
    record["other_cpu"] = round(max(others, 0.0), 2) if others is not None else None


def _best_seconds(fn: Callable[[], Any], min_reps: int, budget_s: float, max_reps: int = 1000) -> float:
    """The fastest of at least `min_reps` calls, more while `budget_s` lasts: a call another process delayed
    is simply not the fastest."""
    times: list[float] = []
    deadline = time.perf_counter() + budget_s
    while len(times) < min_reps or (len(times) < max_reps and time.perf_counter() < deadline):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def stream_probe() -> dict[str, Any]:
    """Copy and triad bandwidth of this process on its current torch threads (GB/s, 1 GB = 1e9 B)."""
    llc = _llc_bytes()
    size = min(max(4 * (llc or 16 * _MIB), 64 * _MIB), 512 * _MIB)
    available = available_bytes()
    if available is not None:
        size = max(min(size, available // 8), 8 * _MIB)  # three arrays, with room to spare
    n = size // 4
    record: dict[str, Any] = {
        "array_mib": round(size / _MIB, 1),
        "llc_mib": round(llc / _MIB, 1) if llc else None,
        "threads": torch.get_num_threads(),
    }
    start = time.perf_counter()
    with _load_meter(record):
        a, b, c = torch.zeros(n), torch.ones(n), torch.full((n,), 2.0)  # written once: no first-touch faults later
        copy_s = _best_seconds(partial(a.copy_, b), 3, STREAM_BUDGET_S)
        triad_s = _best_seconds(partial(torch.add, b, c, alpha=3.0, out=a), 3, STREAM_BUDGET_S)
        del a, b, c
    record.update(
        copy_gbs=2 * n * 4 / copy_s / 1e9,
        triad_gbs=3 * n * 4 / triad_s / 1e9,
        seconds=round(time.perf_counter() - start, 3),
    )
    return record


def gemm_probe(dtype: torch.dtype) -> dict[str, Any]:
    """Best dense matmul rate in `dtype` (TFLOP/s) over square sizes from 256 up, doubling while the next size
    fits in GEMM_BUDGET_S. Each size is called once before it is timed (one-time set-up)."""
    record: dict[str, Any] = {"threads": torch.get_num_threads()}
    start, best_rate, best_m = time.perf_counter(), 0.0, 0
    with _load_meter(record):
        m = 256
        while True:
            x, y = torch.randn(m, m).to(dtype), torch.randn(m, m).to(dtype)
            out = torch.empty(m, m, dtype=dtype)
            torch.mm(x, y, out=out)
            seconds = _best_seconds(partial(torch.mm, x, y, out=out), 3, 0.15)
            if 2 * m**3 / seconds > best_rate:
                best_rate, best_m = 2 * m**3 / seconds, m
            left = GEMM_BUDGET_S - (time.perf_counter() - start)
            if m >= 4096 or 8 * 4 * seconds > left:  # the next size: 8x the work, called about four times
                break
            m *= 2
    record.update(m=best_m, tflops=best_rate / 1e12, seconds=round(time.perf_counter() - start, 3))
    return record


def cache_key(threads: int) -> str:
    return f"{socket.gethostname()}|threads={threads}|torch={torch.__version__}|v{PROBE_VERSION}"


@contextmanager
def _locked(cache_dir: Path) -> Iterator[None]:
    cache_dir.mkdir(parents=True, exist_ok=True)
    with open(cache_dir / f".{CACHE_FILE}.lock", "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}  # no cache yet, or a damaged one: measure again


def quiet(figure: dict[str, Any]) -> bool:
    """Measured while other processes used at most QUIET_OTHERS cores (unknown counts as disturbed)."""
    others = figure.get("other_cpu")
    return others is not None and others <= QUIET_OTHERS


def _figure(
    old: dict[str, Any] | None,
    probe: Callable[[], dict[str, Any]],
    value: Callable[[dict[str, Any]], float],
    run: str,
    refresh: bool,
) -> tuple[dict[str, Any], bool]:
    """(the figure to keep, whether it was measured now): measured when missing, when a refresh asks (once per
    run), or when the cached one was disturbed and last tried RETRY_S ago; after a retry the higher one is kept."""
    now = time.time()
    if old is not None:
        due = old.get("run") != run if refresh else not quiet(old) and now - float(old.get("tried_at", 0)) >= RETRY_S
        if not due:
            return old, False
    new = {
        **probe(),
        "probed_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "run": run,
        "tried_at": now,
    }
    if old is None or refresh or value(new) >= value(old):
        return new, True
    return {**old, "tried_at": now}, True  # measured less this time: the earlier figure stays


def host_roofs(dtype: torch.dtype, run: str, refresh: bool, cache_dir: Path) -> dict[str, Any]:
    """This host's entry for the current thread count: `stream` and `gemm[dtype]`, each with when and under
    what load it was measured, probing what is missing or disturbed. `run`: what one run is (the sweep's directory,
    or a single run's), so that a refreshing or retrying run probes once per thread count, not once per cell."""
    threads, name = torch.get_num_threads(), str(dtype).removeprefix("torch.")
    path = cache_dir / CACHE_FILE
    with _locked(cache_dir):
        cache = _read(path)
        key = cache_key(threads)
        found = cache.get(key)
        entry = found if isinstance(found, dict) else {}
        entry = {
            "host": socket.gethostname(),
            "threads": threads,
            "torch": torch.__version__,
            "stream": entry.get("stream"),
            "gemm": dict(entry.get("gemm") or {}),
        }
        entry["stream"], stream_now = _figure(
            entry["stream"], stream_probe, lambda f: max(f["copy_gbs"], f["triad_gbs"]), run, refresh
        )
        entry["gemm"][name], gemm_now = _figure(
            entry["gemm"].get(name), lambda: gemm_probe(dtype), lambda f: f["tflops"], run, refresh
        )
        if stream_now or gemm_now:
            cache[key] = entry
            write_json(path, cache)
    probed = [what for what, now in (("stream", stream_now), (f"gemm {name}", gemm_now)) if now]
    return {**entry, "cache_file": str(path), "probed_now": probed}
