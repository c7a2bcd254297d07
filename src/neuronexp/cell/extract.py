"""From a hot module of a profiled model to the config nodes that rebuild it alone (neuronexp-extract): from its
Hugging Face config, else from constructor arguments recovered from its attributes (kept only when they rebuild
the same parameter shapes), else from a pickled copy; its inputs from the first call the model made. Timing does
not depend on the weights' values, so the seeded random ones do (docs/layers.md, "From a model to a layer study")."""

from __future__ import annotations

import inspect
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

_HF_DROP = {"transformers_version", "architectures", "_name_or_path", "torch_dtype", "dtype", "use_cache"}
_ALIASES = {
    "eps": ("variance_epsilon", "eps", "epsilon"),
    "hidden_size": ("hidden_size", "dim"),
    "dim": ("dim", "hidden_size"),
}


@dataclass
class Recipe:
    node: dict[str, Any]  # the module node (`_target_` + arguments)
    how: str  # "config" | "constructor arguments" | "saved copy"
    notes: list[str] = field(default_factory=list)


def qualified(obj: Any) -> str:
    cls = obj if isinstance(obj, type) else type(obj)
    return f"{cls.__module__}.{cls.__qualname__}"


def snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


def _init_params(cls: type[nn.Module]) -> list[inspect.Parameter]:
    try:
        params = list(inspect.signature(cls.__init__).parameters.values())[1:]
    except (TypeError, ValueError):
        return []
    return [p for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]


def _shapes(module: nn.Module) -> dict[str, tuple[int, ...]]:
    return {k: tuple(v.shape) for k, v in module.state_dict().items()}


def _from_config(module: nn.Module) -> Recipe | None:
    config = getattr(module, "config", None)
    if config is None or not hasattr(config, "to_diff_dict"):
        return None
    names = {p.name for p in _init_params(type(module))}
    if "config" not in names:
        return None
    keys = {
        k: v
        for k, v in config.to_diff_dict().items()
        if k not in _HF_DROP and not k.startswith("_") and isinstance(v, (int, float, str, bool, type(None), list))
    }
    impl = getattr(config, "_attn_implementation", None)
    if impl:
        keys["attn_implementation"] = impl
    node: dict[str, Any] = {"_target_": qualified(module), "config": {"_target_": qualified(config), **keys}}
    layer_idx = getattr(module, "layer_idx", None)
    if "layer_idx" in names and layer_idx is not None:
        node["layer_idx"] = int(layer_idx)
    return Recipe(node, "config")


def _recovered(module: nn.Module, p: inspect.Parameter) -> Any:
    for attr in _ALIASES.get(p.name, (p.name,)):
        if hasattr(module, attr) and not callable(getattr(module, attr)):
            value = getattr(module, attr)
            if isinstance(p.default, bool) and (value is None or isinstance(value, torch.Tensor)):
                return value is not None  # nn.Linear(bias=True) keeps the Parameter, or None
            if isinstance(value, (int, float, str, bool)) or (
                isinstance(value, tuple) and all(isinstance(v, int) for v in value)
            ):
                return list(value) if isinstance(value, tuple) else value
    weight = getattr(module, "weight", None)
    if (
        p.name in ("hidden_size", "dim", "normalized_shape", "num_features")
        and isinstance(weight, torch.Tensor)
        and weight.dim() == 1
    ):
        return int(weight.shape[0])
    return inspect.Parameter.empty


def _from_arguments(module: nn.Module) -> Recipe | None:
    args: dict[str, Any] = {}
    for p in _init_params(type(module)):
        value = _recovered(module, p)
        if value is inspect.Parameter.empty:
            if p.default is inspect.Parameter.empty:
                return None  # a required argument we cannot see
            continue
        if p.default is inspect.Parameter.empty or value != p.default:
            args[p.name] = value
    try:
        rebuilt = type(module)(**args)
    except Exception:  # the recovered values are not what the constructor wants
        return None
    if _shapes(rebuilt) != _shapes(module):
        return None
    return Recipe({"_target_": qualified(module), **args}, "constructor arguments")


def _saved(module: nn.Module, path: Path) -> Recipe:
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(module, path)
    return Recipe(
        {"_target_": "neuronexp.modules.extracted.load_module", "path": str(path.resolve())},
        "saved copy",
        [
            f"rebuilt from {path.name}, a pickled copy with the model's weights (no config or recoverable "
            "constructor arguments)"
        ],
    )


def recipe(module: nn.Module, saved_path: Path) -> Recipe:
    return _from_config(module) or _from_arguments(module) or _saved(module, saved_path)


def fused_alternative(module: nn.Module, node: dict[str, Any]) -> tuple[dict[str, Any], str] | None:
    """A known fused form of the same computation, as a module node: RMSNorm-like → torch.rms_norm
    (neuronexp.modules.FusedRMSNorm), a gated MLP → gate and up in one projection, a Hugging Face layer with eager
    attention → the same layer on SDPA."""
    name = type(module).__name__
    weight = getattr(module, "weight", None)
    eps = next(
        (getattr(module, a) for a in ("variance_epsilon", "eps") if isinstance(getattr(module, a, None), float)), None
    )
    if "RMSNorm" in name and isinstance(weight, torch.Tensor) and weight.dim() == 1 and eps is not None:
        return (
            {"_target_": "neuronexp.modules.FusedRMSNorm", "hidden_size": int(weight.shape[0]), "eps": eps},
            "torch.rms_norm (neuronexp.modules.FusedRMSNorm)",
        )
    if all(
        isinstance(getattr(module, a, None), nn.Linear) for a in ("gate_proj", "up_proj", "down_proj")
    ) and isinstance(getattr(module, "act_fn", None), nn.Module):
        return (
            {"_target_": "neuronexp.modules.extracted.FusedGateUp", "module": node},
            "gate and up in one projection (neuronexp.modules.extracted.FusedGateUp)",
        )
    config = node.get("config")
    if (
        isinstance(config, dict)
        and config.get("attn_implementation") == "eager"
        and any("Attention" in type(m).__name__ for m in module.modules())
    ):
        return ({**node, "config": {**config, "attn_implementation": "sdpa"}}, "the same layer with SDPA attention")
    return None


def first_output(node: dict[str, Any]) -> dict[str, Any]:
    """The node wrapped in neuronexp.modules.extracted.FirstOutput (eager attention's weights are not SDPA's)."""
    return {"_target_": "neuronexp.modules.extracted.FirstOutput", "module": node}


def _first_param(module: nn.Module) -> str | None:
    try:
        params = list(inspect.signature(module.forward).parameters.values())
    except (TypeError, ValueError):
        return None
    return params[0].name if params else None


def _spec(name: str, spec: Any, notes: list[str]) -> Any:
    if isinstance(spec, dict) and "_unsupported_" in spec:
        notes.append(f"{name}: a {spec['_unsupported_']} was passed; given as null (neuronexp has no spec for it)")
        return None
    if isinstance(spec, dict) and spec.pop("causal_mask", False):
        return {"_target_": "neuronexp.modules.inputs.causal_mask"}
    if name.endswith("position_embeddings") and isinstance(spec, list) and len(spec) == 2:
        return {"_target_": "neuronexp.modules.inputs.rotary"}
    if isinstance(spec, list):
        return [_spec(f"{name}[{i}]", s, notes) for i, s in enumerate(spec)]
    if isinstance(spec, dict) and "shape" in spec and str(spec.get("dtype", "")).startswith(("float", "bfloat")):
        spec = {k: v for k, v in spec.items() if k != "dtype"}  # floating inputs follow the cell's dtype
    return spec


def input_node(module: nn.Module, specs_json: str) -> tuple[dict[str, Any], list[str]]:
    """The `input` node that calls `module` as the model called it first."""
    specs = json.loads(specs_json)
    args, kwargs = list(specs["args"]), dict(specs["kwargs"])
    notes: list[str] = []
    if not args and _first_param(module) in kwargs:  # called by keyword (HF attention: hidden_states=...)
        args = [kwargs.pop(str(_first_param(module)))]
    first = args[0] if args else None
    if not (isinstance(first, dict) and "shape" in first):
        raise ValueError(
            f"{type(module).__name__} was not called with a tensor first; neuronexp needs one as input.shape"
        )
    node: dict[str, Any] = {"shape": first["shape"], "dtype": first["dtype"]}
    node.update({k: first[k] for k in ("fill", "low", "high") if k in first and first.get("fill") != "full"})
    if not str(first["dtype"]).startswith(("float", "bfloat")):
        node["model_dtype"] = "float32"
    node["args"] = [_spec(f"input.args[{i}]", s, notes) for i, s in enumerate(args[1:])]
    node["kwargs"] = {k: _spec(f"input.kwargs.{k}", v, notes) for k, v in kwargs.items()}
    return node, notes
