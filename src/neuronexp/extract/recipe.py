"""From a hot module of a profiled model to the config node that rebuilds it alone (neuronexp-extract): its
constructor's arguments, the Hugging Face config among them (with the implementation it chose: attention, experts)
and the rest recovered from its attributes, kept only when the node builds the same parameter shapes; else a
pickled copy checked by its sha256 when loaded. The weights are the model's own (extract.check saves them):
a layer's constructor may leave them as `torch.empty` memory (docs/layers.md, "From a model to a layer study")."""

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

from neuronexp.config.targets import hidden_init, locate
from neuronexp.extract.study_inputs import literal

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


def _snake(name: str) -> str:
    """`RMSNorm` → `rms_norm`, `LayerNorm` → `layer_norm`: a word starts at a capital after a small letter or digit,
    or at the last capital of a run followed by a small letter."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


def _words(module_type: str) -> str:
    """The class name in snake case, its model's name kept as one word where the class is named after the folder or
    file it lives in (`...models.vit.modeling_vit.ViTMLP` → `vit_mlp`, not `vi_tmlp`; `T5LayerNorm` →
    `t5_layer_norm`)."""
    where, _, short = str(module_type).rpartition(".")
    for family in reversed(where.split(".")[-2:]):
        family = family.removeprefix("modeling_")
        squashed = family.replace("_", "").lower()
        rest = short[len(squashed) :]
        if squashed and short.lower().startswith(squashed) and (not rest or not rest[0].islower()):
            return family.lower() + ("_" + _snake(rest).strip("_") if rest.strip("_") else "")
    return _snake(short)


def study_name(module_type: str) -> str | None:
    """A file and config name from a module's class (`transformers...LlamaMLP` → `llama_mlp`): ASCII letters,
    digits and `_` only, starting with a letter, at most 64 characters; None when nothing of it is left."""
    text = unicodedata.normalize("NFKD", _words(module_type)).encode("ascii", "ignore").decode()
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


def _config_node(config: Any) -> dict[str, Any] | None:
    """A Hugging Face config as a node: its keys that differ from the defaults, as literals, and the implementations
    it chose (`_attn_implementation`, `_experts_implementation`, ...: what a model sets when built, and what picks a
    layer's kernels, eager attention or SDPA, a loop over experts or one grouped matmul)."""
    target = _importable(type(config))
    if not hasattr(config, "to_diff_dict") or target is None:
        return None
    keys = {k: _plain(v) for k, v in config.to_diff_dict().items() if k not in _HF_DROP and not k.startswith("_")}
    keys = {k: v for k, v in keys.items() if v is not _SKIP and k.isidentifier()}
    for attr in dir(type(config)):
        chosen = getattr(config, attr, None) if _IMPLEMENTATION.fullmatch(attr) else None
        if isinstance(chosen, str) and chosen:
            keys[attr.lstrip("_")] = literal(chosen)
    return {"_target_": target, **keys}


_IMPLEMENTATION = re.compile(r"_[a-z]+_implementation")


def _argument(module: nn.Module, p: inspect.Parameter, config: dict[str, Any] | None) -> Any:
    """One constructor argument: the config node for `config`, else what the module's attributes say."""
    if p.name == "config":
        return config if config is not None else inspect.Parameter.empty
    return _recovered(module, p)


def _from_signature(module: nn.Module, model_config: Any = None) -> Recipe | None:
    """Every argument of the module's constructor: `config` from its Hugging Face config (or the whole model's, for
    a layer that keeps none: BertIntermediate), the others from its attributes (`layer_idx`, T5's
    `has_relative_attention_bias`); None when one it needs cannot be found, or the node does not build the same
    parameter shapes (the model's config is not this layer's)."""
    own = getattr(module, "config", None)
    config = _config_node(own if own is not None else model_config)
    args: dict[str, Any] = {}
    for p in _init_params(type(module)):
        value = _argument(module, p, config)
        if value is inspect.Parameter.empty:
            if p.default is inspect.Parameter.empty:
                return None  # a required argument we cannot see
            continue
        if p.name == "config" or p.default is inspect.Parameter.empty or value != p.default:
            args[p.name] = value if p.name == "config" else _plain(value)
    if (target := _importable(type(module))) is None or any(v is _SKIP for v in args.values()):
        return None
    node = {"_target_": target, **args}
    if not _rebuilds(module, node):
        return None
    return Recipe(node, "config" if "config" in args else "constructor arguments")


def _rebuilds(module: nn.Module, node: dict[str, Any]) -> bool:
    """Whether `node`, built as a study builds it, has the module's parameter and buffer shapes."""
    from neuronexp.config.targets import instantiate

    try:
        return _shapes(instantiate(node)) == _shapes(module)
    except Exception:  # the recovered values are not what the constructor wants
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
    return _from_signature(module, model_config) or _saved(module, saved_path)
