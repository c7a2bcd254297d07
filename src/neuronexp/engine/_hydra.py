"""What neuronexp relies on of Hydra beyond its documented plugin API, in one place, pinned to hydra-core 1.3 and
tested against Hydra's own composition (tests/engine/test_hydra_compat.py): value overrides applied to a copy of a
composition (a sweep composes once per choice of config groups: ~60 ms a cell saved), Hydra's override_dirname,
the one test of which launcher runs a sweep (`launcher_kind`), what a basic-launcher job raised, and a job run as the
basic launcher runs it, from a config composed that way (`run_basic_job`).
"""

from __future__ import annotations

import re
from enum import Enum
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf, open_dict

from neuronexp.config import ConfigError
from neuronexp.formatting import first_line

BASIC_LAUNCHER = "hydra._internal.core_plugins.basic_launcher.BasicLauncher"


class LauncherKind(str, Enum):
    """How a sweep's cells are launched, as far as neuronexp cares."""

    basic = "basic"  # Hydra's basic launcher: one job after another, in the sweep's own process
    slurm = "slurm"  # submitit's Slurm launcher, or neuronexp's extension of it: tasks on other machines
    other = "other"  # a parallel launcher on this host (joblib, submitit_local): jobs in worker processes


def launcher_kind(config: Any) -> LauncherKind:
    """The kind of launcher a config's `hydra.launcher._target_` names (`config`: a sweep's composed config, or a
    job's HydraConfig); a class named *SlurmLauncher (submitit's, neuronexp's or a user's subclass) submits to Slurm."""
    key = "hydra.launcher._target_" if "hydra" in config else "launcher._target_"  # (the app has a `launcher` node too)
    target = str(OmegaConf.select(config, key, default="") or "")
    if target == BASIC_LAUNCHER:
        return LauncherKind.basic
    return LauncherKind.slurm if target.rsplit(".", 1)[-1].endswith("SlurmLauncher") else LauncherKind.other


def job_exception(job_return: Any) -> BaseException | None:
    """What a job of the basic launcher raised, or None. Hydra keeps it in the JobReturn and re-raises it only
    from `return_value`, after writing its own "Error executing job" line to stderr."""
    from hydra.core.utils import JobStatus

    if getattr(job_return, "status", None) != JobStatus.FAILED:
        return None
    exc = getattr(job_return, "_return_value", None)
    return exc if isinstance(exc, BaseException) else None


def apply_value_overrides(cfg: DictConfig, overrides: list[Any]) -> None:
    """Apply parsed value overrides (hydra.core.override_parser Override objects) to a composed config.

    Raises:
        ConfigError: naming the override, like Hydra's own composition errors.
    """
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


def subdir_override(subdir: str) -> str:
    """`hydra.sweep.subdir=<subdir>` as an override Hydra parses back to exactly `subdir`.

    Single-quoted; Hydra's grammar escapes only quotes and the backslashes right before a quote or the end.
    """
    quoted = re.sub(r"(\\*)('|$)", lambda m: m.group(1) * 2 + ("\\'" if m.group(2) else ""), subdir)
    return f"hydra.sweep.subdir='{quoted}'"


def run_basic_job(hydra_context: Any, task_function: Any, master: DictConfig, job_config: DictConfig) -> Any:
    """One job, exactly as Hydra's basic launcher runs it (BasicLauncher.launch, hydra-core 1.3), but from
    `job_config`, the job's config as the sweep's plan composed it (sweep.plan.CellComposer): the launcher would
    compose it again from scratch, 0.3 s a cell. The same files and JobReturn: tests/engine/test_hydra_compat.py."""
    from hydra.core.utils import configure_log, run_job, setup_globals

    setup_globals()
    configure_log(master.hydra.hydra_logging, master.hydra.verbose)
    Path(str(master.hydra.sweep.dir)).mkdir(parents=True, exist_ok=True)
    with open_dict(job_config):
        job_config.hydra.job.id = job_config.hydra.job.num  # as the launcher has it: the number, not its text
    job_return = run_job(
        hydra_context=hydra_context,
        task_function=task_function,
        config=job_config,
        job_dir_key="hydra.sweep.dir",
        job_subdir_key="hydra.sweep.subdir",
    )
    configure_log(master.hydra.hydra_logging, master.hydra.verbose)
    return job_return
