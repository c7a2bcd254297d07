"""Who runs the planned cells. One path for every invocation, three executors:

- `inline`: in this process (a single run: the interactive path, where a debugger and the layer's prints work);
- `local`: this host's fork server, each comparison group (timed paired) or lone cell in a supervised process of its
  own, as many at once as there are device slots (`hydra/launcher=parallel`: `launcher.devices`; else one);
- `launcher`: a Hydra launcher's jobs (Slurm tasks, submitit_local, ...), each running its cell where it lands.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from enum import Enum
from typing import Any

from neuronexp.config import CellSpec
from neuronexp.engine._hydra import LauncherKind, launcher_kind
from neuronexp.engine.grouping import Unit

log = logging.getLogger("neuronexp.engine")


class Executor(str, Enum):
    inline = "inline"
    local = "local"
    launcher = "launcher"


def executor_for(master: Any) -> Executor:
    """A sweep's executor: the fork server of this host, unless a Hydra launcher that runs jobs elsewhere (Slurm) or
    in processes of its own was chosen."""
    return Executor.local if launcher_kind(master) in (LauncherKind.basic, LauncherKind.parallel) else Executor.launcher


def local_slots(master: Any) -> int:
    """How many units the local executor runs at once: `launcher.devices` under hydra/launcher=parallel, else one."""
    return max(1, int(master.launcher.devices)) if launcher_kind(master) == LauncherKind.parallel else 1


def run_local(
    units: list[Unit], start: Callable[[Unit], list[CellSpec]], slots: int, finished: Callable[[Any], None]
) -> None:
    """Each unit in a supervised process of its own (cellprocess.launch), `slots` at a time, each on a device slot
    when there are several; `start(unit)` prepares its cells' directories just before it runs, `finished(cell)` is
    called as each of its cells ends, in this thread."""
    from neuronexp.cellprocess.launch import supervise

    def run(unit: Unit) -> Unit:
        supervise(start(unit), slotted=slots > 1 or any(c.isolated for c in unit.cells))
        return unit

    with _pool(slots) as submit:
        pending: set[Future[Unit]] = set()
        queue = list(units)
        while queue or pending:
            while queue and len(pending) < slots:
                pending.add(submit(run, queue.pop(0)))
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                for cell in future.result().cells:
                    finished(cell)


@contextmanager
def _pool(slots: int) -> Iterator[Callable[..., Future[Unit]]]:
    """Threads that each supervise a cell process. On the way out with an error (Ctrl-C), queued units are dropped
    and running ones are not waited for: the fork server's end, next, kills their processes."""
    pool = ThreadPoolExecutor(max_workers=slots, thread_name_prefix="neuronexp-unit")
    try:
        yield pool.submit
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


def run_launched(launcher: Any, jobs: list[list[str]], watching: Callable[[], Any]) -> list[Any]:
    """Hand the jobs (their overrides, each with its planned `hydra.sweep.subdir`) to the Hydra launcher; each job
    runs its cell where the launcher puts it (cli.main's task function) and writes its files into the sweep
    directory, where `watching` sees them finish."""
    with watching():
        return list(launcher.launch(jobs, initial_job_idx=0))
