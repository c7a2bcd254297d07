"""The cells of one comparison group in one process: built and called once each, timed together call by call
(cell.timing.time_calls), then profiled and written one by one. Why: the host drifts ±50% over seconds, and only
cells timed in alternation share that drift (docs/timing.md, "Paired timing"). A group of one is a cell timed
alone. The process state a cell sets (malloc mode, threads) is the group's: the sweep pairs only cells equal in it.
"""

from __future__ import annotations

import contextlib
import gc
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import torch

from neuronexp.cell.build import timing_config
from neuronexp.cell.rows import git_state
from neuronexp.cell.run import CellRun
from neuronexp.cell.timing import CallFailed, LatencyStats, time_calls
from neuronexp.config import CellSpec
from neuronexp.host import allocator
from neuronexp.host.threads import default_threads
from neuronexp.results import Results
from neuronexp.results.files import write_phase


def run_cells(specs: list[CellSpec], out_dirs: list[Path], unpaired_note: str | None = None) -> list[Results]:
    """Run the cells (one, or a comparison group), timed together; each cell's tables, in order. `unpaired_note`:
    why cells that were asked to run together were not timed paired (said in their rows)."""
    return [run.results for run in _run(specs, out_dirs, unpaired_note) if run.results is not None]


def write_cells(specs: list[CellSpec], out_dirs: list[Path]) -> None:
    """run_cells in a cell's own process, whose only output is its cells' files: the tables are not made again as
    pandas (a few ms a cell, and the threads pyarrow starts for it)."""
    _run(specs, out_dirs, None)


def _run(specs: list[CellSpec], out_dirs: list[Path], unpaired_note: str | None) -> list[CellRun]:
    # Before the backend, the module or its inputs allocate anything (a fresh cell process applied it even
    # earlier, before importing torch: cellprocess.launch).
    host_alloc = allocator.apply(specs[0].config.allocator.value)
    # The process's own count is restored after the cells: the next cell of this process (a single run's, or
    # a Python caller's) must start from it, not from these cells' `threads`.
    process_threads = torch.get_num_threads()
    threads = specs[0].config.threads or default_threads(process_threads)  # validated: never 0
    git = git_state(Path.cwd().resolve())  # once for the cells of one process (two git commands)
    runs = [CellRun(spec, out_dir, host_alloc, git) for spec, out_dir in zip(specs, out_dirs)]
    try:
        if threads is not None:
            torch.set_num_threads(threads)
        # One Dynamo reset for the group: a reset between its cells would drop the compiled code of the earlier ones.
        live = [
            (run, call)
            for i, run in enumerate(runs)
            if (call := run.start(reset_dynamo=i == 0, crowded=i > 0)) is not None
        ]
        if live:
            _time_and_finish(live, len(runs) - sum(r.deferred for r in runs), unpaired_note)
        del live  # the calls hold their modules and inputs: freed before a deferred cell runs alone
        if any(run.deferred for run in runs):
            gc.collect()  # what the failed attempt's traceback kept alive, too
        for i, run in enumerate(runs):  # out of memory beside its group: alone now, its speedup unpaired
            if run.deferred:
                alone = runs[i] = CellRun(run.spec, run.out_dir, host_alloc, git)
                if (call := alone.start()) is not None:
                    alone.notes.append(
                        "timed alone: it ran out of memory while the other cells of its group were loaded"
                    )
                    _time_and_finish([(alone, call)], 1, None)
    finally:
        torch.set_num_threads(process_threads)
    return runs


def run_cell(spec: CellSpec, out_dir: Path) -> Results:
    """Run one cell and write its tables into `out_dir` (a group of one)."""
    return run_cells([spec], [out_dir])[0]


def _time_and_finish(live: list[tuple[CellRun, Callable[[], object]]], asked: int, unpaired_note: str | None) -> None:
    """Time the live cells together, then finish each. A cell whose call raises during the timed pass (warm-up
    included) gets its error row, and the others are timed again without it (their samples must not straddle it)."""
    while live:
        try:
            stats = _timed_pass(live)
        except CallFailed as failed:  # that cell's failure: its row says its own error
            broken, error = [live[failed.index]], failed.__cause__ or failed
        except Exception as exc:  # no one call's (a device error seen at a synchronize): every cell of the pass
            broken, error = list(live), exc
        else:
            _finish_timed(live, stats, asked, unpaired_note)
            return
        for run, _ in broken:
            run.fail(error, during="timing")
            run.finish(None)
        live = [cell for cell in live if cell not in broken]


def _finish_timed(
    live: list[tuple[CellRun, Callable[[], object]]], stats: list[LatencyStats], asked: int, unpaired_note: str | None
) -> None:
    group = uuid.uuid4().hex[:12] if len(live) > 1 else None
    for (run, _), latency in zip(live, stats):
        run.timing_group = group
        if len(live) < asked and asked > 1:
            run.notes.append(
                f"timed paired with {len(live) - 1} of the {asked - 1} other cells of its group "
                "(the others failed before or during timing)"
                if len(live) > 1
                else "timed alone: the other cells of its group failed before or during timing"
            )
        if unpaired_note and len(live) == 1:
            run.notes.append(unpaired_note)
        run.finish(latency)


def _timed_pass(live: list[tuple[CellRun, Callable[[], object]]]) -> list[LatencyStats]:
    first = live[0][0]
    backend = first.backend
    assert backend is not None
    for run, _ in live:
        write_phase(run.out_dir, "timing")
    modes = {type(run.grad()) for run, _ in live}
    if len(modes) == 1:  # the usual case: one grad mode for the whole pass, entered once
        grad = first.grad()
        calls = [call for _, call in live]
    else:  # cells of one group asking for different grad modes: each call in its own
        grad = contextlib.nullcontext()
        calls = [_in_grad(run, call) for run, call in live]
    # Moving inputs between rounds is measured on the host only (cell.build.Built.relocate); a device keeps its own.
    moves = [run.built.relocate for run, _ in live if run.built is not None] if backend.relocates_inputs else None
    with grad:
        return time_calls(calls, backend, timing_config(first.spec, backend), relocate=moves, report=_Progress(live))


class _Progress:
    """An adaptive pass's status after each round, in its cells' phase files (what the sweep's progress line shows
    and a lost cell's error names), at most every REPORT_S: a file written each round of a fast group costs."""

    REPORT_S = 0.5

    def __init__(self, live: list[tuple[CellRun, Callable[[], object]]]) -> None:
        self.dirs, self.last = [run.out_dir for run, _ in live], time.perf_counter()

    def __call__(self, status: str) -> None:
        if time.perf_counter() - self.last >= self.REPORT_S:
            self.last = time.perf_counter()
            for out_dir in self.dirs:
                write_phase(out_dir, status)


def _in_grad(run: CellRun, call: Callable[[], object]) -> Callable[[], object]:
    def timed() -> object:
        with run.grad():
            return call()

    return timed


__all__ = ["run_cell", "run_cells", "write_cells"]
