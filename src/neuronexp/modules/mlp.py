"""Llama's SwiGLU MLP with separate gate and up projections, and with the two fused into one."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class NaiveSwiGLU(nn.Module):
    """down(silu(gate(x)) * up(x)): gate and up are two matmuls over the same input."""

    def __init__(self, hidden_size: int, intermediate_size: int) -> None:
        super().__init__()
        self.gate = nn.Linear(hidden_size, intermediate_size, bias=False)
        self.up = nn.Linear(hidden_size, intermediate_size, bias=False)
        self.down = nn.Linear(intermediate_size, hidden_size, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(F.silu(self.gate(x)) * self.up(x))


class FusedSwiGLU(nn.Module):
    """The same MLP with gate and up stacked in one [2 × intermediate, hidden] weight: one matmul, then a split.

    Its weights are the naive variant's (drawn in the same order, then stacked), so with the same seed both
    compute the same function.
    """

    def __init__(self, hidden_size: int, intermediate_size: int) -> None:
        super().__init__()
        self._take(NaiveSwiGLU(hidden_size, intermediate_size))

    @classmethod
    def fused_from(cls, naive: NaiveSwiGLU) -> FusedSwiGLU:
        """The fused MLP with `naive`'s weights (no new random draws)."""
        fused = cls.__new__(cls)
        nn.Module.__init__(fused)
        fused._take(naive)
        return fused

    def _take(self, naive: NaiveSwiGLU) -> None:
        self.gate_up_weight = nn.Parameter(torch.cat([naive.gate.weight, naive.up.weight]).detach())
        self.down = naive.down

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate, up = F.linear(x, self.gate_up_weight).chunk(2, dim=-1)
        return self.down(F.silu(gate) * up)
