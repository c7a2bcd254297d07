"""The cells of a grid sweep, composed and validated before the first one runs (Hydra edge).

Hydra's basic sweeper composes each batch just before launching it and checks only composition; a bad
value in the last cell would surface after all the others ran. Here every cell goes through the same
validation as a single run, up front, so a sweep either starts clean or fails in one line with no files.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

from hydra import compose
from hydra._internal.config_loader_impl import ConfigLoaderImpl
from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import DictConfig, OmegaConf, open_dict

from neuronexp.backends import check_available
from neuronexp.config.compose import spec_from_sweep_config

_GRID_SWEEPERS = ("hydra._internal.core_plugins.basic_sweeper.BasicSweeper",)


@dataclass
class PlannedCell:
    num: int
    dir: str  # relative to the sweep directory
    overrides: list[str]


def grid_jobs(config: DictConfig) -> list[list[str]] | None:
    """Each job's overrides, in the order the basic sweeper launches them (None for other sweepers)."""
    if OmegaConf.select(config, "hydra.sweeper._target_") not in _GRID_SWEEPERS:
        return None
    params = OmegaConf.select(config, "hydra.sweeper.params") or {}
    arguments = [f"{k}={v}" for k, v in params.items()] + list(config.hydra.overrides.task)
    overrides = OverridesParser.create().parse_overrides(arguments)
    return BasicSweeper.split_arguments(overrides, None)[0]


def plan_sweep(config: DictConfig) -> list[PlannedCell] | None:
    """Compose and validate every cell of the sweep.

    Raises:
        ConfigError: the first bad value found, naming its key.
    """
    jobs = grid_jobs(config)
    if jobs is None:
        return None
    composer = _CellComposer(config)
    cells, backends = [], set()
    for num, job in enumerate(jobs):
        cfg = composer.compose(job)
        with open_dict(cfg):
            cfg.hydra.job.num = num
            cfg.hydra.job.id = str(num)
        spec = spec_from_sweep_config(cfg)
        backends.add(spec.config.backend)
        cells.append(PlannedCell(num, str(OmegaConf.select(cfg, "hydra.sweep.subdir")), job))
    for name in backends:  # an unavailable backend fails here, once, before any cell runs
        check_available(name)
    return cells


class _CellComposer:
    """Each cell's config, composing only once per choice of config groups.

    A full Hydra composition costs ~60 ms; cells mostly differ in plain values (shapes, dtypes), which
    Hydra itself applies after composing (ConfigLoaderImpl._apply_overrides_to_config). So: compose
    once per distinct set of group overrides (`module=...`, `+experiment=...`), then apply the value
    overrides to a copy, exactly as Hydra's loader does.
    """

    def __init__(self, config: DictConfig) -> None:
        self.config_name = config.hydra.job.config_name
        self.hydra_overrides = list(config.hydra.overrides.hydra)
        self.repository = GlobalHydra.instance().config_loader().repository  # type: ignore[attr-defined]
        self.cache: dict[tuple[str, ...], DictConfig] = {}

    def compose(self, job: list[str]) -> DictConfig:
        parsed = OverridesParser.create().parse_overrides(job)
        groups = [o for o in parsed if self.repository.group_exists(o.key_or_group)]
        values = [o for o in parsed if o not in groups]
        key = tuple(o.input_line for o in groups)
        if key not in self.cache:
            self.cache[key] = compose(self.config_name, overrides=self.hydra_overrides + list(key), return_hydra_config=True)
        cfg = copy.deepcopy(self.cache[key])
        ConfigLoaderImpl._apply_overrides_to_config(values, cfg)
        with open_dict(cfg):
            cfg.hydra.overrides.task = list(job)
        return cfg
