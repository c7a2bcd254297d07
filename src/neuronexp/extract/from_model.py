"""The model a run profiled, rebuilt for neuronexp-extract from the run's `config.yaml`. That file is part of a results
directory, so it is read as plain YAML (no interpolation resolved) and built only from classes: every `_target_`
must name an nn.Module or a configuration class (a Hugging Face PretrainedConfig) that imports as named; a function,
another class or a `_partial_` is refused in one line before anything is built (docs/guarantees.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
import yaml
from torch import nn

from neuronexp.config.input_specs import DTYPES, floating
from neuronexp.config.targets import instantiate, locate
from neuronexp.extract.study_inputs import shown
from neuronexp.results.regular import read_regular

_CONFIG_CLASSES = ("PretrainedConfig", "PreTrainedConfig")


class ModelRefused(ValueError):
    """The run's config cannot be rebuilt safely or at all: one line, naming the file and the key."""


def run_config(job_dir: Path) -> dict[str, Any]:
    """The run's config.yaml as plain data: a regular file (no link followed), a mapping with `module` and `input`."""
    path = job_dir / "config.yaml"
    try:
        cfg = yaml.safe_load(read_regular(path))
    except (OSError, yaml.YAMLError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else "not valid YAML"
        raise ModelRefused(f"{path}: cannot be read ({why}); extract needs the run's config") from None
    if not (isinstance(cfg, dict) and isinstance(cfg.get("module"), dict) and isinstance(cfg.get("input"), dict)):
        raise ModelRefused(f"{path}: not a neuronexp run config (a mapping with module and input)")
    return cfg


def _is_config_class(cls: type) -> bool:
    return any(c.__name__ in _CONFIG_CLASSES and c.__module__.startswith("transformers.") for c in cls.__mro__)


def check_targets(node: Any, where: str, key: str = "module") -> None:
    """Every `_target_` under `node` names an nn.Module or configuration class; no `_partial_` (ModelRefused: the
    first that does not, naming `where`, the file, and its key)."""
    if isinstance(node, list):
        for i, item in enumerate(node):
            check_targets(item, where, f"{key}[{i}]")
        return
    if not isinstance(node, dict):
        return
    if "_target_" in node:
        target = node["_target_"]
        if node.get("_partial_"):
            raise ModelRefused(f"{where}: {key}._partial_ is set; extract builds a model only from classes")
        try:
            cls = locate(str(target), key=f"{key}._target_") if isinstance(target, str) else None
        except Exception as exc:  # ConfigError: it does not import (one line already)
            raise ModelRefused(f"{where}: {shown(exc)}") from None
        if not (isinstance(cls, type) and (issubclass(cls, nn.Module) or _is_config_class(cls))):
            raise ModelRefused(
                f"{where}: {key}._target_={shown(target)} is not an nn.Module or a model config class; "
                "extract builds the run's model only from those (a results directory's config never calls a function)"
            )
    for name, value in node.items():
        check_targets(value, where, f"{key}.{shown(name)}")


def build_model(cfg: dict[str, Any], where: str) -> tuple[nn.Module, str]:
    """(the model as the cell built it: the same node, seed and dtype; the dtype it computes in). ModelRefused: a
    target outside the rule, a bad input dtype or seed, or a constructor that fails."""
    check_targets(cfg["module"], where)
    inputs = cfg["input"]
    dtype, model_dtype, seed = inputs.get("dtype"), inputs.get("model_dtype"), inputs.get("seed", 0)
    if dtype not in DTYPES or (model_dtype is not None and model_dtype not in DTYPES) or type(seed) is not int:
        raise ModelRefused(f"{where}: input.dtype, input.model_dtype or input.seed is not one neuronexp writes")
    compute = model_dtype or (dtype if floating(dtype) else "float32")  # as config.input_specs.compute_dtype
    torch.manual_seed(seed)
    try:
        model = instantiate(cfg["module"])
    except Exception as exc:  # the run's own model no longer builds (its code changed, a package missing)
        first = str(exc).strip().splitlines()
        raise ModelRefused(f"{where}: building its module failed: {shown(first[0] if first else exc)}") from None
    if not isinstance(model, nn.Module):
        raise ModelRefused(f"{where}: its module did not build an nn.Module")
    if model_dtype is not None or getattr(torch, dtype).is_floating_point:
        model = model.to(dtype=getattr(torch, compute))
    return model.eval(), compute
