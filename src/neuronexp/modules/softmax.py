"""Softmax written out (max, subtract, exp, sum, divide) and as one fused `torch.softmax` call."""

from __future__ import annotations

import torch
from torch import nn


class NaiveSoftmax(nn.Module):
    """The numerically safe softmax step by step: subtract the row maximum, exp, sum, divide.

    In the input's dtype (attention implementations usually upcast to float32; this one shows the raw steps).
    """

    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        e = (x - x.amax(self.dim, keepdim=True)).exp()
        return e / e.sum(self.dim, keepdim=True)


class FusedSoftmax(NaiveSoftmax):
    """`torch.softmax` (aten::_softmax): one kernel that reads the input once per pass."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, self.dim)
