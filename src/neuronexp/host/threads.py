"""How many threads a cell uses when `threads` is null: torch's own count, less one where that would take every CPU.

Why: a team that needs every CPU waits at each barrier for whichever thread another process preempted (a 1.5 ms
cell took 32 ms beside one other busy process here); with one CPU spare the rest of the machine runs there.
Measured and explained in docs/methodology.md, "Threads".
"""

from __future__ import annotations

import os


def host_cpus() -> list[int]:
    """The cores this process may run on (its affinity: a Slurm job sees only its allocation)."""
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return list(range(os.cpu_count() or 1))


def default_threads(torch_threads: int) -> int | None:
    """The cell's thread count for `threads: null`; None keeps torch's."""
    if os.environ.get("OMP_NUM_THREADS"):
        return None
    cpus = len(host_cpus())
    return cpus - 1 if cpus > 1 and torch_threads >= cpus else None
