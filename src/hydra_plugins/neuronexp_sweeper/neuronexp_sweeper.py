"""The `neuronexp` sweeper: every invocation of the `neuronexp` command reaches neuronexp's engine through it, a single
run as a plan of one (neuronexp.engine.sweeper.run): every cell planned and validated before the first runs, complete
cells reused by configuration, `results/` aggregated at the end.

Selected by neuronexp's primary config (`override hydra/sweeper: neuronexp`). Kept small and cheap to import: Hydra
imports every plugin module at start-up."""

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
    # Set by the `neuronexp` command when -m is not given: one cell into hydra.run.dir, unless `params` sweep.
    single: bool = False
    # Set by `neuronexp --help`: print the help from the composed config (neuronexp.engine.help), run nothing.
    help: bool = False


ConfigStore.instance().store(group="hydra/sweeper", name="neuronexp", node=NeuronexpSweeperConf, provider="neuronexp")


class NeuronexpSweeper(Sweeper):
    def __init__(self, params: dict[str, str] | None = None, single: bool = False, help: bool = False) -> None:
        super().__init__()
        self.params, self.single, self.help = dict(params or {}), single, help
        self.hydra_context: HydraContext | None = None
        self.config: DictConfig | None = None
        self.task_function: TaskFunction | None = None

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        self.hydra_context, self.config, self.task_function = hydra_context, config, task_function

    def make_launcher(self) -> Any:
        """The configured Hydra launcher, set up; made only when a Hydra launcher runs the cells (Slurm)."""
        assert self.hydra_context is not None and self.task_function is not None and self.config is not None
        return Plugins.instance().instantiate_launcher(
            hydra_context=self.hydra_context, task_function=self.task_function, config=self.config
        )

    def sweep(self, arguments: list[str]) -> Any:
        assert self.config is not None and self.hydra_context is not None
        if self.help:
            from neuronexp.engine.help import help_text

            print(help_text(self.config, self.hydra_context.config_loader))
            return None
        from neuronexp.engine.context import SweepContext  # here: keeps Hydra's plugin scan light
        from neuronexp.engine.sweeper import run

        context = SweepContext(
            self.config,
            self.params,
            list(arguments),
            self.hydra_context.config_loader,
            self.single,
            self.make_launcher,
            # The fork server the command started before Hydra (neuronexp.cli.main), carried by its task function.
            fork_server=getattr(self.task_function, "fork_server", None),
        )
        outcome = run(context)
        if outcome.stopped is not None:  # the exit status (cli.main)
            raise outcome.stopped
        return outcome.directory
