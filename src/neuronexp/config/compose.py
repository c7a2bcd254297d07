"""From a composed Hydra config to the core's CellSpec (Hydra edge: used by the cli and the sweeper), built and
validated once: what crosses into the job and the cell process after it is that spec, never a Hydra node."""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
from enum import Enum
from typing import Any, cast

from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig, ListConfig, OmegaConf, open_dict, read_write

from neuronexp.config.errors import ConfigError
from neuronexp.config.fingerprint import code_fingerprint
from neuronexp.config.key_roles import drop_unmeasured, measured
from neuronexp.config.schema import RunConfig
from neuronexp.config.spec import CellSpec, InMemory
from neuronexp.config.validate import check_known_keys, check_shape, validate_code, validate_values

# A config node `hidden_size: ${nx.last:${input.shape}}` follows the swept input shape, so module
# options never need editing when `input.shape` changes.
OmegaConf.register_new_resolver("nx.last", lambda xs: xs[-1], replace=True)


def typed(value: Any) -> str:
    """A config value as it is typed on the command line (`[1,1024,4096]`, `bfloat16`, `false`, `null`,
    `{module: x}`)."""
    if isinstance(value, Enum):
        return str(value.name)
    if value is None or isinstance(value, bool):
        return "null" if value is None else str(value).lower()
    if isinstance(value, (list, tuple, ListConfig)):
        return "[" + ",".join(typed(v) for v in value) + "]"
    if isinstance(value, (dict, DictConfig)):
        return "{" + ", ".join(f"{k!s}: {typed(v)}" for k, v in value.items()) + "}"
    return str(value)


# `neuronexp --help` shows the current values this way (conf/hydra/help/neuronexp.yaml).
OmegaConf.register_new_resolver("nx.typed", typed, replace=True)
ConfigStore.instance().store(name="base_config", node=RunConfig)

NO_EXPERIMENT = "adhoc"
FROM_MEMORY = "module from Python's memory (neuronexp.sweep(modules=...)): no code fingerprint, so never reused"


def labels_from(cfg: DictConfig, choices: dict[str, Any], task_overrides: list[str]) -> tuple[str, str]:
    """(experiment, module) labels: the chosen options, or the target's class for an inline module."""
    experiment = choices.get("experiment") or NO_EXPERIMENT
    module = choices.get("module") or ""
    inline = any(o.lstrip("+").startswith("module._target_=") for o in task_overrides)
    if inline or not module:
        module = str(OmegaConf.select(cfg, "module._target_", default="module")).rsplit(".", 1)[-1]
    return str(experiment), str(module)


def run_id_for(resolved: dict[str, Any], experiment: str, module: str) -> str:
    """Content hash of what was measured: the resolved config plus the labels."""
    blob = json.dumps({"config": resolved, "experiment": experiment, "module": module}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def to_run_config(cfg: DictConfig) -> RunConfig:
    """Resolve and type the job config; interpolation errors become ConfigErrors."""
    job_cfg = without_hydra(cfg)  # the sweeper's configs still carry it; the job never sees it
    check_known_keys(job_cfg)
    _check_shape_first(job_cfg)
    try:
        run_cfg = OmegaConf.to_object(job_cfg)
    except Exception as exc:  # interpolation or conversion problem in a user config
        key = getattr(exc, "full_key", None) or "config"
        raise ConfigError(str(key), "?", str(exc).splitlines()[0]) from None
    assert isinstance(run_cfg, RunConfig), type(run_cfg)
    if not isinstance(run_cfg.module, dict):
        raise ConfigError("module", run_cfg.module, "must be a config node with a _target_ (pick module=<option>)")
    return run_cfg


def without_hydra(cfg: DictConfig) -> DictConfig:
    """A copy of a job's config without Hydra's node (`cfg` itself when it has none). The node is never copied: it is
    most of a composed config, and copying it twice per cell was a fifth of planning one (issue 47)."""
    if "hydra" not in cfg:
        return cfg
    node = cfg._get_node("hydra")
    job = copy.deepcopy(cfg, {id(node): node})  # the copy holds the original node, then lets go of it
    with read_write(job), open_dict(job):
        del job["hydra"]
    return job


def as_plain(value: Any) -> Any:
    """A RunConfig (and what it holds) as plain data, enums by name: what OmegaConf.structured then to_container gave
    (its values are resolved: to_run_config), in 0.1 ms instead of 21 ms, a third of planning a cell (issue 47)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: as_plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Enum):
        return value.name
    if isinstance(value, dict):
        return {k: as_plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [as_plain(v) for v in value]
    return value


def _plain(node: DictConfig, resolve: bool, enum_to_str: bool = False) -> dict[str, Any]:
    """A config node as plain data: a DictConfig always gives a dict keyed by str (OmegaConf's return type is the
    union over every kind of node)."""
    return cast(dict[str, Any], OmegaConf.to_container(node, resolve=resolve, enum_to_str=enum_to_str))


def _check_shape_first(cfg: DictConfig) -> None:
    """`input.shape` on its own, before the rest resolves: module options computed from it
    (`${nx.last:${input.shape}}`) would otherwise report a bad shape as their own interpolation error."""
    node = cfg.get("input")
    if not isinstance(node, DictConfig) or "shape" not in node:
        return
    try:
        shape = _plain(node, resolve=True)["shape"]
    except Exception as exc:  # an interpolation in the shape (or in input.*) that does not resolve
        key = str(getattr(exc, "key", None) or "shape")
        raw = _plain(node, resolve=False).get(key, "?")
        raise ConfigError(f"input.{key}", raw, str(exc).splitlines()[0]) from None
    if isinstance(shape, list) and all(isinstance(d, int) and not isinstance(d, bool) for d in shape):
        check_shape("input.shape", shape)


def spec_from(
    cfg: DictConfig,
    choices: dict[str, Any],
    task_overrides: list[str],
    override_dirname: str,
    check_code: bool = True,
    memory: InMemory | None = None,
) -> CellSpec:
    """Build and validate the CellSpec of one job (ConfigError: any bad value, before work starts). `check_code`
    False checks the plain values only, importing no torch: a sweep runs validate_code once every cell's are good.
    `memory`: the cell's module is the caller's (its config names its class), labelled with the caller's name."""
    run_cfg = to_run_config(cfg)
    validate_values(run_cfg)
    warnings = validate_code(run_cfg) if check_code else []
    experiment, module = labels_from(cfg, choices, task_overrides)
    resolved = as_plain(run_cfg)
    drop_unmeasured(resolved)  # where it runs, what it is compared with, how it is judged (config.key_roles)
    # What the cell runs, beside what it is configured with: a changed layer is a new cell (config.fingerprint).
    resolved["code"] = code_fingerprint(run_cfg.module.get("_target_")) if memory is None else memory.invocation
    if memory is not None:
        module, warnings = memory.name, [*warnings, FROM_MEMORY]
    return CellSpec(
        config=run_cfg,
        run_id=run_id_for(resolved, experiment, module),
        experiment=experiment,
        module_name=module,
        overrides=override_dirname,
        warnings=tuple(warnings),
        memory=memory,
    )


def spec_from_sweep_config(cfg: DictConfig, check_code: bool = True) -> CellSpec:
    """For a config composed by the sweeper (it still carries its `hydra` node)."""
    task = task_overrides(cfg.hydra.overrides.task)
    choices = dict(OmegaConf.select(cfg, "hydra.runtime.choices", default={}) or {})
    return spec_from(cfg, choices, task, override_dirname(task), check_code)


def task_overrides(task: Any) -> list[str]:
    """The overrides as typed: unresolved, since `key=${x}` is text here, not an interpolation to resolve."""
    if not OmegaConf.is_config(task):
        return list(task)
    return [str(o) for o in cast(list[Any], OmegaConf.to_container(task, resolve=False))]


def override_dirname(task_overrides: list[str]) -> str:
    """Hydra's override_dirname (sorted, comma-joined), recomputed so sweeper and job agree; the keys that are not
    what a cell measured (config.key_roles: where it ran, what it is compared with) are left out."""
    return ",".join(sorted(o for o in task_overrides if measured(o.partition("=")[0])))
