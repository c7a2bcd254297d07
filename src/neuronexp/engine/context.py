"""How an invocation was asked for (SweepContext: its composed config, its swept values, Hydra's loader, the command
line's or Python's extras), which engine.planned_invocation reads once, and what it leaves (Outcome)."""

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
    launcher: Callable[[], Any] | None = None  # makes the Hydra launcher, for a launcher's executor (engine.launched)
    # Modules from this process's memory (neuronexp.sweep(modules=...), engine.in_memory): their cells run here.
    memory: Any = None
    # The fork server the `neuronexp` command started before Hydra (cli.main), for this invocation to adopt or close.
    fork_server: Any = None


@dataclass
class Outcome:
    """What an invocation left: the directory it wrote (None for a dry run), and how it stopped when not with every
    cell ok (the command line's exit status; Python's caller reads the tables there, error rows and all)."""

    directory: Path | None
    stopped: Stopped | None = None
    cached: bool = False  # a single run that reused the complete cell there: its row says `cached`, as printed
