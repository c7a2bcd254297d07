"""Input factories named by dotted path in tests (`helpers.factories.seen_by_factory`)."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn


def seen_by_factory(module: nn.Module, input: Any, *, scale: int = 1) -> tuple:
    """What the factory was called with, and a tensor built from it."""
    return type(module).__name__, input, torch.full((int(input.shape[1]),), float(scale))


def failing_factory(module: nn.Module, input: Any) -> None:
    raise LookupError("no config here")
