"""From a hot module of a profiled model to the config node that rebuilds it alone (neuronexp-extract): from its
Hugging Face config, else from constructor arguments recovered from its attributes (kept only when they rebuild
the same parameter shapes), else from a pickled copy checked by its sha256 when loaded. Timing does not depend on
the weights' values, so the seeded random ones do (docs/layers.md, "From a model to a layer study")."""

from __future__ import annotations

import hashlib
import inspect
import io
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from neuronexp.cell.extract_inputs import literal
from neuronexp.config.targets import hidden_init, locate

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
    saved: bytes | None = None  # the pickled copy the node loads, for a "saved copy"


def _importable(cls: type) -> str | None:
    """The dotted path a config names `cls` by, when importing it gives this very class back (not a class made
    in a function, nor one whose name was changed, which no `_target_` reaches)."""
    path = f"{cls.__module__}.{cls.__qualname__}"
    try:
        return path if locate(path, key="module._target_") is cls else None
    except Exception:  # ConfigError, or an import that fails: no path reaches it
        return None


# Names Hydra's override grammar reads as something other than a config name (`module=inf` is a float).
_NOT_NAMES = {"true", "false", "null", "inf", "nan"}


def study_name(module_type: str) -> str | None:
    """A file and config name from a module's class (`transformers...LlamaMLP` → `llama_mlp`): ASCII letters,
    digits and `_` only, starting with a letter, at most 64 characters; None when nothing of it is left."""
    short = str(module_type).rsplit(".", 1)[-1]
    snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", short).lower()
    text = unicodedata.normalize("NFKD", snake).encode("ascii", "ignore").decode()
    name = re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")[:64].strip("_")
    if not name:
        return None
    return f"module_{name}" if not name[0].isalpha() or name in _NOT_NAMES else name


def _init_params(cls: type[nn.Module]) -> list[inspect.Parameter]:
    try:
        params = list(inspect.signature(hidden_init(cls) or cls.__init__).parameters.values())[1:]  # without self
    except (TypeError, ValueError):
        return []
    return [p for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]


def _shapes(module: nn.Module) -> dict[str, tuple[int, ...]]:
    return {k: tuple(v.shape) for k, v in module.state_dict().items()}


_SKIP = object()


def _plain(value: Any) -> Any:
    """A config value as a literal of the generated YAML (strings escaped for OmegaConf), or _SKIP: no mapping,
    so no `_target_` a config's value could carry is ever written."""
    if isinstance(value, str):
        return literal(value)
    if value is None or isinstance(value, (int, float, bool)):
        return value
    if isinstance(value, (list, tuple)):
        items = [_plain(v) for v in value]
        return _SKIP if any(v is _SKIP for v in items) else items
    return _SKIP


def _from_config(module: nn.Module, model_config: Any = None) -> Recipe | None:
    """From the module's Hugging Face config, or the whole model's for a layer that keeps none (BertIntermediate):
    then only when a layer built from it has the same parameter shapes."""
    own = getattr(module, "config", None)
    config = own if own is not None else model_config
    params = _init_params(type(module))
    if not hasattr(config, "to_diff_dict") or "config" not in {p.name for p in params}:
        return None
    if any(p.default is p.empty and p.name not in ("config", "layer_idx") for p in params):
        return None  # another argument it needs, which a config does not give
    keys = {k: _plain(v) for k, v in config.to_diff_dict().items() if k not in _HF_DROP and not k.startswith("_")}
    keys = {k: v for k, v in keys.items() if v is not _SKIP and k.isidentifier()}
    impl = getattr(config, "_attn_implementation", None)
    if isinstance(impl, str) and impl:
        keys["attn_implementation"] = literal(impl)
    target, config_target = _importable(type(module)), _importable(type(config))
    if target is None or config_target is None:
        return None
    node: dict[str, Any] = {"_target_": target, "config": {"_target_": config_target, **keys}}
    layer_idx = getattr(module, "layer_idx", None)
    if "layer_idx" in {p.name for p in params} and layer_idx is not None:
        node["layer_idx"] = int(layer_idx)
    if own is None and not _rebuilds(module, config, node.get("layer_idx")):
        return None
    return Recipe(node, "config")


def _rebuilds(module: nn.Module, config: Any, layer_idx: int | None) -> bool:
    extra = {} if layer_idx is None else {"layer_idx": layer_idx}
    try:
        return _shapes(type(module)(config=config, **extra)) == _shapes(module)
    except Exception:  # the config is not what this layer was built from
        return False


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
    if (target := _importable(type(module))) is None:
        return None
    try:
        rebuilt = type(module)(**args)
    except Exception:  # the recovered values are not what the constructor wants
        return None
    if _shapes(rebuilt) != _shapes(module):
        return None
    return Recipe({"_target_": target, **{k: _plain(v) for k, v in args.items()}}, "constructor arguments")


def _saved(module: nn.Module, rel_path: str) -> Recipe:
    """A pickled copy, loaded only when it holds the bytes recorded here (modules.extracted.load_module).
    ValueError: the module cannot be pickled (a class no import reaches, a lambda among its attributes)."""
    buffer = io.BytesIO()
    try:
        torch.save(module, buffer)
    except Exception as exc:  # pickle names what it could not save
        first = str(exc).strip().splitlines()
        raise ValueError(
            f"neither rebuilt from its config or constructor nor saved ({first[0] if first else exc})"
        ) from None
    data = buffer.getvalue()
    node = {
        "_target_": "neuronexp.modules.extracted.load_module",
        "path": rel_path,
        "sha256": hashlib.sha256(data).hexdigest(),
    }
    note = (
        f"rebuilt from {rel_path.rsplit('/', 1)[-1]}, a pickled copy with the model's weights (no config or "
        "recoverable constructor arguments); loaded only while it holds the bytes of the sha256 below"
    )
    return Recipe(node, "saved copy", [note], data)


def recipe(module: nn.Module, saved_path: str, model_config: Any = None) -> Recipe:
    """`saved_path`: where the pickled copy goes, relative to the study's directory (`module/<name>.pt`);
    `model_config`: the whole model's config (`model.config`), for a layer that keeps none."""
    return _from_config(module, model_config) or _from_arguments(module) or _saved(module, saved_path)


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
