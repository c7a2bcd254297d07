"""Where an invocation's cells run: an Executor, as pyperf's Manager and Hydra's launchers are, chosen once per
invocation (engine.planned_invocation.executor_for). A new one overrides `run_unit`, or `run` where it runs units
otherwise than one after another; `slotted` says which cells hold a device slot of their own. Here: Inline (this
process) and Local (this host's fork server); engine.launched: the Slurm array and any other Hydra launcher."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from typing import Any

from neuronexp.config import CellSpec
from neuronexp.engine.grouping import Unit
from neuronexp.engine.planned import PlannedCell

log = logging.getLogger("neuronexp.engine")
Start = Callable[[Unit], list[CellSpec]]  # prepares a unit's job directories; its cells, placed there


class Executor:
    """Runs the planned units (engine.grouping: a comparison group or a lone cell each). `start(unit)` prepares their
    job directories just before they run; `progress.finished(cell)` is called as each cell ends (or
    `progress.watching()` sees their files appear). Whatever runs a cell leaves its row, even where its process dies
    (a supervisor's `write_lost_cell`)."""

    unpaired: str | None = None  # why no comparison group is timed together here (None: groups are)
    remote = False  # cells run on other machines: this host's memory and device slots are not theirs
    forks = False  # the cells' code is checked in a process forked from this host's fork server

    def slotted(self, cell: PlannedCell) -> bool:
        """Whether the cell runs on a device slot of its own (its locks taken), rather than with its supervisor's
        cores: the one formula the checks and the run both read."""
        return cell.isolated

    def __enter__(self) -> Executor:  # set up before the cells are planned (a fork server, a cluster's fit)
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def planned(self, cells: list[PlannedCell]) -> None:
        """Told the planned cells, before any runs."""

    def check(self, cells: list[PlannedCell]) -> None:
        """ConfigError where the cells cannot run here as asked: by default, the device slots this host must give."""
        from neuronexp.engine.preflight import check_local_slots

        check_local_slots(cells, self.slotted)

    def run(self, units: list[Unit], start: Start, progress: Any) -> None:
        for unit in units:
            self.run_unit(start(unit))
            for cell in unit.cells:
                progress.finished(cell)

    def run_unit(self, specs: list[CellSpec]) -> None:
        raise NotImplementedError


class Inline(Executor):
    """In this process. `limited`: under `launcher.cell_timeout_s` (modules from memory: engine.in_memory); a single
    run has none, so that a debugger may stop in it for as long as it likes."""

    def __init__(self, limited: bool = False) -> None:
        self.limited = limited

    def slotted(self, cell: PlannedCell) -> bool:
        return False

    def run_unit(self, specs: list[CellSpec]) -> None:
        if self.limited:
            from neuronexp.engine.in_memory import run_limited

            run_limited(specs)
        else:
            from neuronexp.cellprocess.entry import run_placed

            run_placed(specs)


class Local(Executor):
    """This host's fork server (cellprocess.forkserver): each unit in a supervised process forked from its warm
    template, `slots` at a time (launcher.devices under hydra/launcher=parallel, else one). The server is the one the
    command started before Hydra where its malloc mode is the cells', else one already running for this process (a
    caller's, e.g. a test session's), else its own. `isolate`: every cell on a slot (a single run given a time limit,
    which needs a supervisor)."""

    forks = True

    def __init__(self, slots: int, allocator: str, early: Any = None, isolate: bool = False) -> None:
        self.slots, self.allocator, self.early, self.isolate = slots, allocator, early, isolate
        self.server: Any = None  # the server this invocation serves (not a caller's)
        self.own: Any = None  # ... and stops, when it started it

    def slotted(self, cell: PlannedCell) -> bool:
        return self.isolate or self.slots > 1 or cell.isolated

    def __enter__(self) -> Local:
        from neuronexp.cellprocess.forkserver import ForkServer, server_address

        early, self.early = self.early, None
        if early is not None and early.allocator == self.allocator:
            early.announce()
            self.server = early
            return self
        if early is not None:  # not this invocation's: its cells need another template
            early.__exit__(None, None, None)
        if server_address() is None:
            self.server = self.own = ForkServer(warm=None, allocator=self.allocator).__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.own is not None:
            self.own.__exit__(*exc)

    def planned(self, cells: list[PlannedCell]) -> None:
        if self.server is None:
            return
        self.server.serve(warm=["compile"] if any(c.compiled for c in cells) else [])
        # While it still imports torch (2-3 s; the code checks wait for it), this process imports what placing the
        # cells and writing their tables need, and what aggregating and printing them needs (0.35 s, then 0.07 s).
        import neuronexp.cellprocess.launch  # noqa: F401
        import neuronexp.engine.aggregate  # noqa: F401
        import neuronexp.engine.progress  # noqa: F401
        import neuronexp.report.terminal  # noqa: F401

    def run(self, units: list[Unit], start: Start, progress: Any) -> None:
        from neuronexp.cellprocess.launch import supervise

        def one(unit: Unit) -> Unit:
            supervise(start(unit), slotted=any(self.slotted(c) for c in unit.cells))
            return unit

        try:
            with _pool(self.slots) as submit:
                pending: set[Future[Unit]] = set()
                queue = list(units)
                while queue or pending:
                    while queue and len(pending) < self.slots:
                        pending.add(submit(one, queue.pop(0)))
                    done, pending = wait(pending, return_when=FIRST_COMPLETED)
                    for future in done:
                        for cell in future.result().cells:
                            progress.finished(cell, where=self.slots > 1)
        finally:
            if self.server is not None:  # no cell is left to fork: the kernel frees the template while results gather
                self.server.release()


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
