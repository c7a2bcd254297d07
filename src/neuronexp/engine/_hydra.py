"""What neuronexp relies on of Hydra beyond its documented plugin API, in one place, pinned to hydra-core 1.3 and tested
against Hydra's own composition (tests/engine/test_hydra_compat.py): value overrides applied to a copy of a composition
(a sweep composes once per choice of config groups: ~60 ms a cell saved), Hydra's override_dirname, the one test of
which launcher runs a sweep (`launcher_kind`), and a value quoted for Hydra's override grammar."""

from __future__ import annotations

import re
from enum import Enum
from typing import Any

from omegaconf import DictConfig, OmegaConf, open_dict

from neuronexp.config import ConfigError
from neuronexp.formatting import first_line

BASIC_LAUNCHER = "hydra._internal.core_plugins.basic_launcher.BasicLauncher"


class LauncherKind(str, Enum):
    """Who runs a sweep's cells, as far as neuronexp cares (engine.executor)."""

    basic = "basic"  # the default: the sweep's fork server, one cell or comparison group at a time
    parallel = "parallel"  # hydra/launcher=parallel: the sweep's fork server, one per device slot at once
    slurm = "slurm"  # submitit's Slurm launcher, or neuronexp's extension of it: tasks on other machines
    other = "other"  # any other Hydra launcher (submitit_local, joblib, a user's): jobs in its processes


def launcher_kind(config: Any) -> LauncherKind:
    """The kind of launcher a config chose (`config`: a sweep's composed config, or a job's HydraConfig): the
    `parallel` option by its name (it composes to Hydra's basic launcher, which neuronexp never calls), else by the
    `hydra.launcher._target_` it names; a class named *SlurmLauncher (submitit's, neuronexp's or a user's
    subclass) submits to Slurm."""
    node = config.hydra if "hydra" in config else config  # (the app has a `launcher` node too)
    if OmegaConf.select(node, "runtime.choices", default={}).get("hydra/launcher") == "parallel":
        return LauncherKind.parallel
    target = str(OmegaConf.select(node, "launcher._target_", default="") or "")
    if target == BASIC_LAUNCHER:
        return LauncherKind.basic
    return LauncherKind.slurm if target.rsplit(".", 1)[-1].endswith("SlurmLauncher") else LauncherKind.other


def apply_value_overrides(cfg: DictConfig, overrides: list[Any]) -> None:
    """Apply parsed value overrides (hydra.core.override_parser Override objects) to a composed config; a ConfigError
    names the override, like Hydra's own composition errors."""
    for override in overrides:
        key, value, line = override.key_or_group, override.value(), override.input_line
        current = OmegaConf.select(cfg, key, throw_on_missing=False)
        if override.is_delete():
            if current is None:
                raise ConfigError(line, "", f"cannot delete {key}: no such key")
            parent, _, leaf = key.rpartition(".")
            with open_dict(cfg):
                node = OmegaConf.select(cfg, parent) if parent else cfg
                del node[leaf]
        elif override.is_add():
            if current is not None and not isinstance(value, (dict, list)):
                raise ConfigError(line, "", f"{key} already exists: drop the + to set it, or use ++ to add or set it")
            OmegaConf.update(cfg, key, value, merge=True, force_add=True)
        elif override.is_force_add():
            OmegaConf.update(cfg, key, value, merge=True, force_add=True)
        else:
            try:
                OmegaConf.update(cfg, key, value, merge=True)
            except Exception as exc:  # unknown key, or a value of the wrong type for the schema
                raise ConfigError(
                    line.split("=", 1)[0], line.split("=", 1)[-1], first_line(exc) or type(exc).__name__
                ) from None


def override_dirname(cfg: DictConfig, task_overrides: list[Any]) -> str:
    """${hydra.job.override_dirname} for these task overrides, with the config's separators and exclusions."""
    conf = cfg.hydra.job.config.override_dirname
    lines = sorted(o.input_line for o in task_overrides if o.key_or_group not in conf.exclude_keys)
    return conf.item_sep.join(lines).replace("=", conf.kv_sep)


def quoted(value: str) -> str:
    """`value` as an override's value that Hydra parses back to exactly `value`. Single-quoted; Hydra's grammar escapes
    only quotes and the backslashes right before a quote or the end."""
    escaped = re.sub(r"(\\*)('|$)", lambda m: m.group(1) * 2 + ("\\'" if m.group(2) else ""), value)
    return f"'{escaped}'"
