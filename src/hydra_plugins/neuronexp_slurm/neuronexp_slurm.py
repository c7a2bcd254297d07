"""The launcher of `hydra/launcher=slurm`: hydra-submitit-launcher's SlurmLauncher, its keys fitted to the cluster.
Under neuronexp's sweeper its keys are read and the engine submits a task per comparison unit itself (engine.launched);
under another sweeper it launches a job per cell, with job states that work without accounting (neuronexp.slurm.jobs).
Kept cheap to import (Hydra imports every plugin module at start-up); without the `slurm` extra it defines none."""

from collections.abc import Sequence
from typing import Any

from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig

try:
    from hydra_plugins.hydra_submitit_launcher.submitit_launcher import SlurmLauncher
except ImportError:  # pip install 'neuronexp[slurm]'
    SlurmLauncher = None

if SlurmLauncher is not None:

    class NeuronexpSlurmLauncher(SlurmLauncher):
        def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
            from neuronexp.slurm.cluster import fit_cpus_per_task

            super().setup(hydra_context=hydra_context, task_function=task_function, config=config)
            self.params.update(fit_cpus_per_task(config))

        def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Any:
            from neuronexp.slurm.jobs import launch_jobs

            return launch_jobs(self, job_overrides, initial_job_idx)

        def __call__(self, *args: Any, **kwargs: Any) -> Any:  # in the Slurm task
            from neuronexp.slurm.jobs import stop_cells_at_time_limit

            stop_cells_at_time_limit(self.params.get("timeout_min"))
            return super().__call__(*args, **kwargs)
