"""Helpers for the studies neuronexp-extract writes: a module rebuilt from a saved copy (its last resort), and a
wrapper that keeps a layer's first output, so that two forms of one layer compare on what they both return."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import torch
from torch import nn


def load_module(path: str) -> nn.Module:
    """The pickled nn.Module at `path`, with its weights (`{_target_: neuronexp.modules.extracted.load_module,
    path: ...}`). Unpickling runs code: load only files you wrote (here, neuronexp-extract did, from your model)."""
    module = torch.load(path, weights_only=False, map_location="cpu")
    if not isinstance(module, nn.Module):
        raise TypeError(f"{path} holds a {type(module).__name__}, not an nn.Module")
    return module


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
