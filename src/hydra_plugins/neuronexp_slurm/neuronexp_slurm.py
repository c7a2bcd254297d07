"""The launcher of `hydra/launcher=slurm`: hydra-submitit-launcher's SlurmLauncher, extended where a sweep needs more
than submitting and waiting (neuronexp.slurm.jobs, docs/slurm.md). Kept cheap to import (Hydra imports
every plugin module at start-up); without the `slurm` extra there is nothing to extend and it defines no launcher."""

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
            from neuronexp.slurm.jobs import submit_and_wait

            return submit_and_wait(self, job_overrides, initial_job_idx)

        def __call__(self, *args: Any, **kwargs: Any) -> Any:  # in the Slurm task
            from neuronexp.slurm.jobs import stop_cells_at_time_limit

            stop_cells_at_time_limit(self.params.get("timeout_min"))
            return super().__call__(*args, **kwargs)
