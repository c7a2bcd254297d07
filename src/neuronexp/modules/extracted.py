"""Helpers for the studies neuronexp-extract writes: the model's weights loaded into a rebuilt module, a module
rebuilt from a saved copy (its last resort), and a wrapper that keeps a layer's first output, so that two forms of
one layer compare on what they both return."""

from __future__ import annotations

import errno
import hashlib
import io
import os
import stat
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import torch
from torch import nn


def _found(path: str, sha256: str | None, what: str) -> bytes:
    """The bytes of the file `path` names that hash to `sha256`: relative to the study's directory and looked up in
    the run's config directories (`--config-dir`, which neuronexp puts on the import path) and the working directory,
    a moved study included; a file there with other bytes, or a link, is never read.

    Raises:
        ValueError: no sha256 recorded, or no file with those bytes (one line, naming `path`).
    """
    if not sha256:
        raise ValueError(f"{path}: no sha256 recorded for this {what}; run neuronexp-extract again to get one")
    dirs = dict.fromkeys([*sys.path, os.getcwd()])
    roots = [Path(path)] if Path(path).is_absolute() else [Path(d or ".") / path for d in dirs]
    for candidate in roots:
        data = _regular_bytes(candidate)
        if data is not None and hashlib.sha256(data).hexdigest() == sha256:
            return data
    raise ValueError(
        f"{path}: no file with the sha256 the config records ({sha256[:12]}...) in the config directories "
        "(--config-dir) or the working directory; a changed or replaced file is never loaded: "
        "run neuronexp-extract again"
    )


def load_module(path: str, sha256: str | None = None) -> nn.Module:
    """The pickled nn.Module neuronexp-extract saved (`{_target_: neuronexp.modules.extracted.load_module, path:
    module/<name>.pt, sha256: ...}`), with its weights. Unpickling runs code, so the file is loaded only when its
    bytes are the ones extract recorded (_found: where it is looked for).

    Raises:
        ValueError: no sha256 recorded, or no file with those bytes (one line, naming `path`).
    """
    data = _found(path, sha256, "saved module")
    module = torch.load(io.BytesIO(data), weights_only=False, map_location="cpu")
    if not isinstance(module, nn.Module):
        raise ValueError(f"{path} holds a {type(module).__name__}, not an nn.Module")
    return module


def with_weights(module: nn.Module, path: str, sha256: str | None = None) -> nn.Module:
    """`module` with the weights neuronexp-extract took from the model (`{_target_:
    neuronexp.modules.extracted.with_weights, module: {...}, path: module/<name>.weights.pt, sha256: ...}`): the
    study computes what the model computed, never on the `torch.empty` memory a layer's constructor may leave for
    the model's initialisation. The file is a state dict, loaded with `weights_only` (tensors only, no code), and
    only while its bytes hash to `sha256` (_found).

    Raises:
        ValueError: no such file, or its tensors do not fit the module (one line, naming `path`).
    """
    return apply_weights(module, _found(path, sha256, "module's weights"), path)


def apply_weights(module: nn.Module, data: bytes, path: str) -> nn.Module:
    """The state dict in `data` loaded into `module`, every key and shape as the module's (strict)."""
    state = torch.load(io.BytesIO(data), weights_only=True, map_location="cpu")
    if not (isinstance(state, dict) and all(isinstance(v, torch.Tensor) for v in state.values())):
        raise ValueError(f"{path} is not a state dict (a mapping of names to tensors)")
    try:
        module.load_state_dict(state, strict=True)
    except RuntimeError as exc:  # missing or unexpected keys, or another shape: not this module's weights
        first = str(exc).strip().splitlines()
        raise ValueError(f"{path}: not this module's weights ({' '.join(first[:2])[:300]})") from None
    return module


def _regular_bytes(path: Path) -> bytes | None:
    """The bytes of a regular file at `path`, never through a link nor blocking; None when there is none."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        with os.fdopen(os.dup(fd), "rb") as f:
            return f.read()
    except OSError:
        return None
    finally:
        os.close(fd)


class FirstOutput(nn.Module):
    """`module(...)[0]`: Hugging Face eager attention returns (output, weights), SDPA (output, None); the output
    check compares what is returned, so both forms of the layer return the output alone."""

    def __init__(self, module: nn.Module) -> None:
        super().__init__()
        self.module = module

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        out = self.module(*args, **kwargs)
        return out[0] if isinstance(out, (tuple, list)) else out


class FusedGateUp(nn.Module):
    """A gated MLP (gate_proj, up_proj, down_proj, act_fn: Llama's, Mistral's, Qwen's) with gate and up stacked in
    one weight: one matmul, then a split (the `swiglu_fused` study's form). The weights are `module`'s own, so
    built from the same config and seed it computes the same function as the module."""

    def __init__(self, module: nn.Module) -> None:
        super().__init__()
        # Any layer's attributes (nn.Module.__getattr__), typed as what a gated MLP holds.
        gate, up = cast(nn.Linear, module.gate_proj), cast(nn.Linear, module.up_proj)
        self.gate_up = nn.Linear(gate.in_features, gate.out_features + up.out_features, bias=gate.bias is not None)
        with torch.no_grad():
            self.gate_up.weight.copy_(torch.cat([gate.weight, up.weight]))
            if gate.bias is not None:
                self.gate_up.bias.copy_(torch.cat([gate.bias, up.bias]))
        self.down_proj = cast(nn.Module, module.down_proj)
        self.act_fn = cast(Callable[[torch.Tensor], torch.Tensor], module.act_fn)  # a module, or a function
        self.split = gate.out_features

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate, up = self.gate_up(x).split(self.split, dim=-1)
        return self.down_proj(self.act_fn(gate) * up)
