"""Each cell's config, as Hydra would compose it for a job of the sweep, composing only once per choice of config
groups (plain values are applied to a copy: engine._hydra); a single run's one cell is the invocation's own
composition (Hydra composed it with every override already), so it costs no composition of its own."""

from __future__ import annotations

import copy
from typing import Any

from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import DictConfig, OmegaConf, open_dict

from neuronexp.engine._hydra import apply_value_overrides, override_dirname


class CellComposer:
    """Each cell's config, composing only once per choice of config groups. Cells mostly differ in plain values (shapes,
    dtypes) that Hydra applies after composing; those are applied to a copy of the composition (engine._hydra) instead
    of composing every cell from scratch."""

    def __init__(self, master: DictConfig, loader: Any) -> None:
        self.master, self.loader = master, loader
        self.listed: dict[str, set[str]] = {}  # a group's parent → the groups under it
        self.cache: dict[tuple[str, ...], DictConfig] = {}

    def is_group(self, key: str) -> bool:
        """Whether an override's key names a config group (`module`, `hydra/launcher`), asking Hydra once per parent
        it names: each listing copies Hydra's config repository (~20 ms), so the groups are not all listed up front."""
        parent, _, name = key.lstrip("+~").rpartition("/")
        if parent not in self.listed:
            self.listed[parent] = set(self.loader.list_groups(parent))
        return name in self.listed[parent]

    def compose(self, job: list[str], num: int) -> DictConfig:
        parsed = OverridesParser.create().parse_overrides(job)
        group_overrides = [o for o in parsed if self.is_group(o.key_or_group) or o.package is not None]
        values = [o for o in parsed if o not in group_overrides and not o.is_hydra_override()]
        # A value in Hydra's own node (the planned hydra.sweep.subdir, different for every cell) is set on the copy
        # like any value; a choice of a Hydra group (hydra/launcher=...) is composed.
        hydra_values = [o for o in parsed if o.is_hydra_override() and o not in group_overrides]
        # Parsed from text, so each has its input line.
        key = tuple(o.input_line for o in group_overrides if o.input_line is not None)
        if key not in self.cache:
            self.cache[key] = self.loader.load_sweep_config(self.master, list(key))
        cfg = copy.deepcopy(self.cache[key])
        apply_value_overrides(cfg, values)
        with open_dict(cfg):
            for o in hydra_values:  # (set as Hydra sets them: the value as parsed, never resolved first)
                OmegaConf.update(cfg, o.key_or_group, o.value(), merge=True)
                cfg.hydra.overrides.hydra.append(o.input_line)
        return _as_job(cfg, [o for o in parsed if not o.is_hydra_override()], num)

    def compose_single(self, job: list[str]) -> DictConfig:
        """A single run's cell: the invocation's composition, which Hydra made with every override of `job` (a
        single run sweeps none), as a job's config (what `compose` gives: tests/engine/test_hydra_compat.py)."""
        return _as_job(copy.deepcopy(self.master), OverridesParser.create().parse_overrides(job), 0)


def _as_job(cfg: DictConfig, task: list[Any], num: int) -> DictConfig:
    """`cfg` with the job fields Hydra gives job `num` of these task overrides."""
    with open_dict(cfg):
        cfg.hydra.overrides.task = [o.input_line for o in task]
        cfg.hydra.job.override_dirname = override_dirname(cfg, task)
        cfg.hydra.job.num = num
        cfg.hydra.job.id = str(num)
    return cfg
