"""Executors whose cells run outside this process's fork server: a Slurm array of one task per comparison unit, which
carries the unit's planned cells as plain data (a task prepares their directories and runs them on a device slot of
its node, timed together: never composed or checked again), and any other Hydra launcher (submitit_local, joblib, a
user's), each of whose jobs plans and runs its one cell where the launcher puts it (cli.main's task function)."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from neuronexp.config import ConfigError
from neuronexp.engine._hydra import subdir_override
from neuronexp.engine.executor import Executor, Start
from neuronexp.engine.grouping import Unit
from neuronexp.engine.planned import PlannedCell

log = logging.getLogger("neuronexp.engine")


class HydraLauncher(Executor):
    """A Hydra launcher's jobs, one cell each, on a device slot of their own wherever they land."""

    unpaired = "a Hydra launcher runs each cell in a process of its own"

    def __init__(self, make: Any) -> None:
        self.make, self.launcher = make, None  # made and set up before the plan: it may fit the config first

    def slotted(self, cell: PlannedCell) -> bool:
        return True

    def __enter__(self) -> HydraLauncher:
        self.launcher = self.make()
        return self

    def run(self, units: list[Unit], start: Start, progress: Any) -> None:
        jobs = [[*c.overrides, subdir_override(c.dir)] for unit in units for c in unit.cells]
        with progress.watching():  # each job writes its cell's files into the sweep directory
            list(self.launcher.launch(jobs, initial_job_idx=0))  # type: ignore[attr-defined]


class Slurm(Executor):
    """submitit's Slurm executor (hydra/launcher=slurm, or any *SlurmLauncher's keys): one array task per comparison
    unit, the cells of a group timed together in the task's one cell process, as on this host."""

    remote = True

    def __init__(self, master: Any) -> None:
        self.master = master

    def slotted(self, cell: PlannedCell) -> bool:
        return True  # tasks Slurm packs onto one node share it through the node's slot locks

    def __enter__(self) -> Slurm:
        from neuronexp.slurm.cluster import fit_cpus_per_task

        fit_cpus_per_task(self.master)  # a preset's CPUs lowered to the nodes' before the cells are planned
        return self

    def check(self, cells: list[PlannedCell]) -> None:
        from neuronexp.engine.preflight import host_slots
        from neuronexp.slurm.cluster import check_slurm_sweep

        if not shutil.which("sbatch"):
            raise ConfigError(
                "hydra/launcher",
                "slurm",
                "no Slurm here (sbatch is not on PATH); hydra/launcher=parallel runs the sweep's units on this machine",
            )
        check_slurm_sweep(self.master, host_slots([c.spec for c in cells if c.spec is not None]))

    def run(self, units: list[Unit], start: Start, progress: Any) -> None:
        from neuronexp.slurm.jobs import submit_and_wait

        params = dict(OmegaConf.to_container(self.master.hydra.launcher, resolve=True))  # type: ignore[arg-type]
        params.pop("_target_", None)
        where = Path(str(self.master.hydra.sweep.dir))
        for cell in (c for unit in units for c in unit.cells):
            cell.yaml()  # its config.yaml as text: no Hydra node travels to the task
        work = [(tuple((c, str(where / c.dir)) for c in unit.cells),) for unit in units]
        with progress.watching():
            submit_and_wait(params, self.master.hydra.sweep, SlurmUnits(params.get("timeout_min")), work)


class SlurmUnits:
    """What an array task runs (submitit pickles it with its unit): the unit's cells, each prepared in its job
    directory and run in one supervised process on a device slot of the node, stopped at Slurm's time-limit warning
    with their rows written. Its result is their run_ids (a task that ends without one: SlurmTasksLost)."""

    def __init__(self, timeout_min: Any) -> None:
        self.timeout_min = timeout_min

    def __call__(self, cells: tuple[tuple[PlannedCell, str], ...]) -> list[str]:
        from neuronexp.cellprocess.launch import supervise
        from neuronexp.engine.planned import prepare
        from neuronexp.slurm.jobs import stop_cells_at_time_limit

        stop_cells_at_time_limit(self.timeout_min)
        specs = [prepare(cell, Path(where)) for cell, where in cells]
        supervise(specs, slotted=True)
        return [spec.run_id for spec in specs]

    def checkpoint(self, *args: Any) -> Any:
        """Preempted: submitit requeues the task with the same unit (out of time: its cells are timed-out rows)."""
        import submitit

        return submitit.helpers.DelayedSubmission(self, *args)
