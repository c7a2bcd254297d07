"""What an invocation is handed (SweepContext: its composed config, its swept values, Hydra's loader, how it was
asked for) and what it leaves (Outcome): shared by the sweep and the single run (engine.sweeper, engine.single)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from neuronexp.engine.stopped import Stopped


@dataclass
class SweepContext:
    master: DictConfig  # the invocation's composed config (with its `hydra` node)
    params: dict[str, str]  # hydra.sweeper.params
    arguments: list[str]  # the command line's overrides
    loader: Any  # Hydra's config loader (public ConfigLoader interface)
    single: bool = False  # no -m: a run of one cell into hydra.run.dir, unless the config sweeps (params)
    launcher: Callable[[], Any] | None = None  # the Hydra launcher, made only for the launcher executor
    # Modules from this process's memory (neuronexp.sweep(modules=...), engine.in_memory): their cells run here.
    memory: Any = None
    # The fork server the `neuronexp` command started before Hydra (cli.main), for this invocation to adopt or close.
    fork_server: Any = None

    @property
    def in_process(self) -> bool:
        return self.memory is not None


@dataclass
class Outcome:
    """What an invocation left: the directory it wrote (None for a dry run), and how it stopped when not with every
    cell ok (the command line's exit status; Python's caller reads the tables there, error rows and all)."""

    directory: Path | None
    stopped: Stopped | None = None
    cached: bool = False  # a single run that reused the complete cell there: its row says `cached`, as printed
