"""LayerNorm written out (nine operator calls) and as one fused `F.layer_norm` call."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class NaiveLayerNorm(nn.Module):
    """LayerNorm line by line: mean, x - mean, its square, mean (the variance), +eps, rsqrt, scale, *weight, +bias.

    In the input's dtype, no upcast: each step is dispatched on its own, which is what the profile should show.
    """

    def __init__(self, hidden_size: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.bias = nn.Parameter(torch.zeros(hidden_size))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        centered = x - x.mean(-1, keepdim=True)
        variance = (centered * centered).mean(-1, keepdim=True)
        return centered * torch.rsqrt(variance + self.eps) * self.weight + self.bias


class FusedLayerNorm(NaiveLayerNorm):
    """The same normalisation through `F.layer_norm` (aten::native_layer_norm)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(x, (x.shape[-1],), self.weight, self.bias, self.eps)
