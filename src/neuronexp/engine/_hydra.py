"""What neuronexp relies on of Hydra beyond its documented plugin API, in one place, pinned to hydra-core 1.3 and tested
against Hydra's own composition (tests/engine/test_hydra_compat.py): each cell's config as Hydra would compose it for a
job (CellComposer: once per choice of config groups, plain values applied to a copy, ~60 ms a cell saved; a single
run's cell is the invocation's own composition), Hydra's override_dirname, the one test of which launcher runs a sweep
(`launcher_kind`), a launcher made from Python, a value quoted for Hydra's override grammar, and Hydra's parser on
Python 3.14 (hydra#3121)."""

from __future__ import annotations

import argparse
import copy
import re
from collections.abc import Iterator
from contextlib import contextmanager
from enum import Enum
from typing import Any

from hydra.core.override_parser.overrides_parser import OverridesParser
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


def launcher_maker(master: DictConfig, loader: Any, task_function: Any) -> Any:
    """What makes the Hydra launcher `master` chose, set up as Hydra's own main sets it up (its callbacks included),
    for a sweep composed with Hydra's compose API (neuronexp.api), where no Hydra main made a context."""
    from hydra._internal.callbacks import Callbacks
    from hydra.core.plugins import Plugins
    from hydra.types import HydraContext

    context = HydraContext(config_loader=loader, callbacks=Callbacks(master))
    return lambda: Plugins.instance().instantiate_launcher(
        hydra_context=context, task_function=task_function, config=master
    )


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
                written, _, typed = line.partition("=")  # (a value override's line always holds one)
                raise ConfigError(written, typed, first_line(exc) or type(exc).__name__) from None


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


def subdir_override(subdir: str) -> str:
    """`hydra.sweep.subdir=<subdir>` as an override Hydra parses back to exactly `subdir`."""
    return f"hydra.sweep.subdir={quoted(subdir)}"


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


@contextmanager
def hydra_parser_on_python_314() -> Iterator[None]:
    """hydra#3121: Python 3.14's argparse checks each argument's help string as the argument is added, and every
    released Hydra (1.3.8 included) adds --shell-completion with a lazily rendered help object that is no string, so
    `hydra.main` dies building its parser, before neuronexp can print anything. While it runs, argparse skips that
    check for help that is not a string only (strings are checked as before); argparse's own method is put back after.
    Nothing of Hydra is changed. A no-op where argparse has no such check (Python 3.13 and older)."""
    owner = next((c for c in argparse.ArgumentParser.__mro__ if "_check_help" in vars(c)), None)
    if owner is None:
        yield
        return
    original = vars(owner)["_check_help"]

    def check_help(self: Any, action: argparse.Action) -> None:
        if action.help is None or isinstance(action.help, str):
            original(self, action)

    owner._check_help = check_help  # type: ignore[attr-defined]
    try:
        yield
    finally:
        owner._check_help = original  # type: ignore[attr-defined]
