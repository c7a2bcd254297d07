"""A cell's inputs, built from `input.*` (the value specs of config.input_specs) on the cell's device.

Random tensors are drawn on the host from one generator seeded with `input.seed`, in a fixed order (the first
input, then `args`, then `kwargs` in their order), then moved: the same values on every backend, and the same
values `input.extra` gave before it became `input.args`.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import Any, cast

import torch
from omegaconf import DictConfig, OmegaConf

from neuronexp.backends.table import backend_info
from neuronexp.config import DType, InputConfig
from neuronexp.config.input_specs import compute_dtype, default_fill, first_spec, tensor_dtype
from neuronexp.config.targets import instantiate


class InputError(RuntimeError):
    """An input could not be built (a factory raised); names the input's key. The cause stays chained."""


def torch_dtype(dtype: DType | str) -> torch.dtype:
    return getattr(torch, DType(dtype).value)  # every DType is named as torch names it (tests/config)


def make_tensor(spec: Mapping[str, Any], first_dtype: str, gen: torch.Generator) -> torch.Tensor:
    dtype = tensor_dtype(spec, first_dtype)
    td, shape = torch_dtype(dtype), tuple(int(d) for d in spec["shape"])
    fill = spec.get("fill") or default_fill(dtype)
    if fill in ("randn", "rand"):  # drawn in float32, then cast: the same values for every floating dtype
        t = (torch.randn if fill == "randn" else torch.rand)(shape, generator=gen, dtype=torch.float32).to(td)
    elif fill == "randint":
        t = torch.randint(int(spec.get("low", 0)), int(spec.get("high", 2)), shape, generator=gen).to(td)
    elif fill == "bernoulli":
        t = torch.randint(0, 2, shape, generator=gen).to(td)
    elif fill == "arange":  # along the last dimension, the same in every row: position ids
        t = torch.arange(shape[-1], dtype=td).expand(shape).contiguous() if shape else torch.zeros((), dtype=td)
    elif fill == "full":
        t = torch.full(shape, spec.get("value", 0), dtype=td)
    else:
        t = (torch.zeros if fill == "zeros" else torch.ones)(shape, dtype=td)
    return t.requires_grad_(True) if spec.get("requires_grad") else t


def to_device(value: Any, device: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, (tuple, list)):
        return type(value)(to_device(v, device) for v in value)
    if isinstance(value, dict):
        return {k: to_device(v, device) for k, v in value.items()}
    return value


def input_node(cfg: InputConfig) -> DictConfig:
    """The resolved, read-only `input` node factories receive (`input.shape` reads as in the config). A copy, so
    that no factory can change the cell's own config."""
    # A structured config's container is a dict (OmegaConf types it as any kind of node).
    plain = cast(dict[str, Any], OmegaConf.to_container(OmegaConf.structured(cfg), resolve=True, enum_to_str=True))
    node = OmegaConf.create(plain)
    OmegaConf.set_readonly(node, True)
    return node


class _Builder:
    def __init__(self, cfg: InputConfig, module: Any, device: Any) -> None:
        self.first_dtype = compute_dtype(cfg)  # the default of tensors without a dtype of their own
        self.module, self.device, self.cfg = module, device, cfg
        self.gen = torch.Generator().manual_seed(int(cfg.seed))
        self._node: DictConfig | None = None

    def value(self, spec: Any, path: str) -> Any:
        if spec is None or isinstance(spec, (bool, int, float, str)):
            return spec
        if isinstance(spec, (list, tuple)):
            return tuple(self.value(s, f"{path}[{i}]") for i, s in enumerate(spec))
        if "_value_" in spec:
            return spec["_value_"]
        if "_target_" in spec:
            return to_device(self.factory(spec, path), self.device)
        return make_tensor(spec, self.first_dtype, self.gen).to(self.device)

    def factory(self, spec: Mapping[str, Any], path: str) -> Any:
        if self._node is None:
            self._node = input_node(self.cfg)
        try:
            return instantiate(dict(spec), self.module, self._node, key=path)
        except Exception as exc:
            raise InputError(f"{path}: {spec['_target_']} failed: {type(exc).__name__}: {exc}") from exc


def make_inputs(cfg: InputConfig, module: Any, device: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """(args, kwargs) for `module(*args, **kwargs)`: the first input from `input.shape`/`input.dtype`, then
    `input.args`, and `input.kwargs`. Factories get `module` as built and moved, before torch.compile wraps it."""
    b = _Builder(cfg, module, device)
    first = make_tensor(first_spec(cfg), b.first_dtype, b.gen).to(device)
    args = (first, *(b.value(s, f"input.args[{i}]") for i, s in enumerate(cfg.args)))
    return args, {str(k): b.value(v, f"input.kwargs.{k}") for k, v in cfg.kwargs.items()}


def wants_grad(cfg: InputConfig) -> bool:
    """Whether a tensor spec asks for requires_grad anywhere in args/kwargs."""

    def walk(spec: Any) -> bool:
        if isinstance(spec, (list, tuple)):
            return any(walk(s) for s in spec)
        return isinstance(spec, Mapping) and "shape" in spec and bool(spec.get("requires_grad"))

    return walk(list(cfg.args)) or walk(list(cfg.kwargs.values()))


def grad_mode(cfg: InputConfig, backend_name: str) -> AbstractContextManager:
    """How the module is called: with autograd recording when an input asks for requires_grad (the forward of a
    training step, graph building included), else inference mode (no_grad where the backend's tensors reject
    inference mode: Neuron's XLA tensors, BackendInfo.inference_mode)."""
    if wants_grad(cfg):
        return torch.enable_grad()
    return torch.inference_mode() if backend_info(backend_name).inference_mode else torch.no_grad()
