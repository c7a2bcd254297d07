"""Layers named by dotted path in tests (`module._target_=helpers.layers.GraphBreak`)."""

from __future__ import annotations

import torch
from torch import nn


class GraphBreak(nn.Module):
    """Two graphs under torch.compile: Dynamo breaks the graph at the explicit break between the ops."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(x)
        torch._dynamo.graph_break()
        return y * 2


class WeightsOnly(nn.Module):
    """Returns its randomly initialised weight, whatever the input: an output that shows the weights alone."""

    def __init__(self, width: int = 64) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.weight.expand_as(x) + 0 * x
