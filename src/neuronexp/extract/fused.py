"""A known fused form of an extracted module, by what the module does: an RMSNorm-shaped module (whatever its class
is called: T5LayerNorm, LlamaRMSNorm) whose output is `torch.rms_norm`'s with its own weight and eps → FusedRMSNorm;
a gated MLP → gate and up in one projection; a Hugging Face layer on eager attention → the same layer on SDPA. Each
form computes the same function with the model's weights, which the study's output check verifies when it runs."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

Node = dict[str, Any]
_EPS = ("variance_epsilon", "eps", "epsilon")


def _eps(module: nn.Module) -> float | None:
    return next((v for a in _EPS if isinstance(v := getattr(module, a, None), float)), None)


def rms_norm_like(module: nn.Module) -> tuple[int, float] | None:
    """(hidden size, eps) where the module is an RMSNorm by what it computes: one 1-D `weight` and nothing else in its
    state (FusedRMSNorm's), an eps, and on a random input the output of `torch.rms_norm` with that weight and eps
    (float32, within float32's rounding). A LayerNorm (it subtracts the mean), Gemma's (1 + weight) and anything else
    fail the comparison."""
    state = module.state_dict()
    weight, eps = state.get("weight"), _eps(module)
    if list(state) != ["weight"] or weight is None or weight.dim() != 1 or eps is None:
        return None
    size = int(weight.shape[0])
    probe = copy.deepcopy(module).float().eval()
    x = torch.randn(2, 3, size, generator=torch.Generator().manual_seed(0))
    try:
        with torch.inference_mode():
            fused = torch.rms_norm(x, (size,), weight.float(), eps)
            same = torch.allclose(probe(x), fused, rtol=1e-5, atol=1e-6)
    except Exception:  # a module that takes other inputs: not a norm of its input
        return None
    return (size, eps) if same else None


def fused_alternative(module: nn.Module, node: Node, weighted: Callable[[Node], Node]) -> tuple[Node, str] | None:
    """(the fused form's module node, what it is) or None. `node` rebuilds the module without its weights, and
    `weighted(n)` gives node `n` the model's weights (modules.extracted.with_weights)."""
    if (norm := rms_norm_like(module)) is not None:
        fused = {"_target_": "neuronexp.modules.FusedRMSNorm", "hidden_size": norm[0], "eps": norm[1]}
        return weighted(fused), "torch.rms_norm (neuronexp.modules.FusedRMSNorm)"
    if all(
        isinstance(getattr(module, a, None), nn.Linear) for a in ("gate_proj", "up_proj", "down_proj")
    ) and isinstance(getattr(module, "act_fn", None), nn.Module):
        return (
            {"_target_": "neuronexp.modules.extracted.FusedGateUp", "module": weighted(node)},
            "gate and up in one projection (neuronexp.modules.extracted.FusedGateUp)",
        )
    config = node.get("config")
    if (
        isinstance(config, dict)
        and config.get("attn_implementation") == "eager"
        and any("Attention" in type(m).__name__ for m in module.modules())
    ):
        sdpa = {**node, "config": {**config, "attn_implementation": "sdpa"}}
        return weighted(sdpa), "the same layer with SDPA attention"
    return None


def first_output(node: Node) -> Node:
    """The node wrapped in neuronexp.modules.extracted.FirstOutput (eager attention's weights are not SDPA's)."""
    return {"_target_": "neuronexp.modules.extracted.FirstOutput", "module": node}
