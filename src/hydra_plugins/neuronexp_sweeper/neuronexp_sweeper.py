"""The `neuronexp` sweeper: Hydra's grid sweep, with every cell planned and validated before the first runs,
complete cells reused by configuration, and `results/` aggregated at the end (neuronexp.engine.sweeper).

Selected by neuronexp's primary config (`override hydra/sweeper: neuronexp`); any Hydra launcher runs the
cells. Kept small and cheap to import: Hydra imports every plugin module at start-up.
"""

from dataclasses import dataclass, field
from typing import Any

from hydra.core.config_store import ConfigStore
from hydra.core.plugins import Plugins
from hydra.plugins.sweeper import Sweeper
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig


@dataclass
class NeuronexpSweeperConf:
    _target_: str = "hydra_plugins.neuronexp_sweeper.neuronexp_sweeper.NeuronexpSweeper"
    # Swept keys, as on the command line: {"module": "a,b", "input.shape": "[1,8],[1,16]"}.
    params: dict[str, str] | None = field(default_factory=dict)


ConfigStore.instance().store(group="hydra/sweeper", name="neuronexp", node=NeuronexpSweeperConf, provider="neuronexp")


class NeuronexpSweeper(Sweeper):
    def __init__(self, params: dict[str, str] | None = None) -> None:
        super().__init__()
        self.params = dict(params or {})
        self.hydra_context: HydraContext | None = None
        self.config: DictConfig | None = None
        self.launcher: Any = None
        self.task_function: TaskFunction | None = None

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        self.hydra_context, self.config, self.task_function = hydra_context, config, task_function
        self.launcher = Plugins.instance().instantiate_launcher(
            hydra_context=hydra_context, task_function=task_function, config=config
        )

    def sweep(self, arguments: list[str]) -> Any:
        from neuronexp.engine.sweeper import SweepContext, run_sweep  # here: keeps Hydra's plugin scan light

        assert self.config is not None and self.hydra_context is not None
        return run_sweep(
            SweepContext(
                self.config,
                self.params,
                list(arguments),
                self.launcher,
                self.hydra_context.config_loader,
                self.hydra_context,
                self.task_function,
            )
        )
