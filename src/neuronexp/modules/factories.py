"""Input factories for YAML: `{_target_: neuronexp.modules.factories.rotary}` under `input.kwargs` or `input.args`.

neuronexp calls a factory as `target(module, input, **params)` once the module is built and moved to its device
and dtype (before torch.compile wraps it). `input` is the cell's resolved, read-only `input` node
(`input.shape`, `input.dtype`, `input.seed`, ...). The result — a tensor, or any tuple/list/dict of them — is
moved to the cell's device; it is built once per cell, outside the timed and profiled passes.
"""

from __future__ import annotations

import importlib
import inspect
import math
import sys
from typing import Any

import torch
from torch import nn


def _dtype(input: Any) -> torch.dtype:
    """The cell's compute dtype: input.model_dtype, else the first input's when floating (not token ids')."""
    first = getattr(torch, str(input.dtype))
    model = input.get("model_dtype") if hasattr(input, "get") else getattr(input, "model_dtype", None)
    return getattr(torch, str(model)) if model is not None else first if first.is_floating_point else torch.float32


def hf_config(module: nn.Module) -> tuple[Any, nn.Module]:
    """(config, the submodule that holds it) of a Hugging Face layer: its own `config`, else the first
    submodule's (LlamaDecoderLayer has none of its own; self_attn and mlp share one)."""
    for _, sub in module.named_modules():
        cfg = getattr(sub, "config", None)
        if cfg is not None and hasattr(cfg, "to_dict"):
            return cfg, sub
    raise LookupError(f"{type(module).__name__} holds no Hugging Face `config`; give the factory a config: node")


def _class(path: str) -> type:
    """`rotary_class: pkg.mod.Name` imported (a cell process imports no Hydra, so not hydra.utils.get_class)."""
    module, _, name = path.rpartition(".")
    cls = getattr(importlib.import_module(module), name)
    if not isinstance(cls, type):
        raise TypeError(f"rotary_class: {path} is not a class")
    return cls


def _rotary_class(owner: nn.Module) -> type:
    """The model's own *RotaryEmbedding class, from the module that defines the layer's class."""
    source = sys.modules[type(owner).__module__]
    found = [
        obj
        for name, obj in vars(source).items()
        if inspect.isclass(obj) and name.endswith("RotaryEmbedding") and issubclass(obj, nn.Module)
    ]
    if len(found) != 1:
        names = [c.__name__ for c in found]
        raise LookupError(
            f"{source.__name__} defines {len(found)} *RotaryEmbedding classes {names}; name one with rotary_class:"
        )
    return found[0]


def rotary(
    module: nn.Module,
    input: Any,
    *,
    seq_len: int | None = None,
    offset: int = 0,
    rotary_class: str | None = None,
    config: Any = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The `(cos, sin)` a Hugging Face attention or decoder layer takes as `position_embeddings`.

    Built by the model's own rotary class (LlamaRotaryEmbedding next to LlamaAttention) from the layer's config,
    for positions offset … offset + S − 1 (S = input.shape[1], or `seq_len`), in the cell's dtype, each
    [1, S, head_dim] as LlamaModel makes them.
    """
    owner = module
    if config is None:
        config, owner = hf_config(module)
    cls = _class(rotary_class) if rotary_class else _rotary_class(owner)
    length = int(seq_len if seq_len is not None else input.shape[1])
    positions = torch.arange(offset, offset + length).unsqueeze(0)
    with torch.no_grad():  # only x's dtype and device are read
        return cls(config=config)(torch.empty(0, dtype=_dtype(input)), positions)


def causal_mask(module: nn.Module, input: Any, *, seq_len: int | None = None) -> torch.Tensor:
    """An additive causal mask [B, 1, S, S] in the cell's dtype: 0 on and below the diagonal, the dtype's minimum
    above. Eager attention needs it to be causal: with `attention_mask=None` it attends to every token (SDPA
    with None is causal), so an eager-vs-SDPA comparison without it compares different computations."""
    b, length = int(input.shape[0]), int(seq_len if seq_len is not None else input.shape[1])
    dtype = _dtype(input)
    mask = torch.full((length, length), torch.finfo(dtype).min, dtype=dtype).triu(1)
    return mask[None, None].expand(b, 1, length, length).contiguous()


def distinct_ids(
    module: nn.Module, input: Any, *, shape: list[int], high: int, low: int = 0, dtype: str = "int64"
) -> torch.Tensor:
    """Integer ids in [low, high), distinct along the last dimension: a router's top-k choice (each token picks k
    different experts), which a `randint` draw breaks by picking one twice. Drawn from the cell's seeded generator."""
    rows, k = math.prod(shape[:-1]), int(shape[-1])
    if high - low < k:
        raise ValueError(f"distinct_ids: {k} distinct ids per row need high - low >= {k}, got [{low}, {high})")
    ids = torch.rand(rows, high - low).topk(k, dim=-1).indices + low
    return ids.reshape(shape).to(getattr(torch, dtype))
