"""How many threads a cell uses when `threads` is null: torch's own count, less one where that would take every CPU.

Why: an OpenMP team that needs every CPU the process may run on waits at each barrier for whichever of its threads
another process has preempted. On a 2-vCPU VM one other busy process (a type checker at nice 19) made a 1.5 ms
RMSNorm take 32 ms with two threads; with one, the other CPU absorbs the rest of the machine (docs/methodology.md,
"Threads"). Where torch already leaves CPUs free (its default is the physical cores, fewer than the CPUs on an SMT
host), or OMP_NUM_THREADS says how many (a user, a sweep slot), nothing changes.
"""

from __future__ import annotations

import os


def default_threads(torch_threads: int) -> int | None:
    """The cell's thread count for `threads: null`; None keeps torch's."""
    if os.environ.get("OMP_NUM_THREADS"):
        return None
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return cpus - 1 if cpus > 1 and torch_threads >= cpus else None
