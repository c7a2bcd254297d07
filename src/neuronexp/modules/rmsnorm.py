"""RMSNorm written line by line (six operator calls) and as one fused `torch.rms_norm` call."""

from __future__ import annotations

import torch
from torch import nn


class NaiveRMSNorm(nn.Module):
    """RMSNorm as the study wrote it: x*x, mean, +eps, rsqrt, x*rms, *weight.

    No upcast on purpose: the point is to show each elementwise op dispatched separately, in the input's
    dtype, exactly the six calls the profile should list.
    """

    def __init__(self, hidden_size: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden_size))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        variance = (x * x).mean(-1, keepdim=True)
        rms = torch.rsqrt(variance + self.eps)
        return x * rms * self.weight


class FusedRMSNorm(NaiveRMSNorm):
    """The same normalisation through `torch.rms_norm` (dispatches to `aten::_fused_rms_norm`)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.rms_norm(x, (x.shape[-1],), self.weight, self.eps)
