"""The "Time an NKI kernel" recipe's two sides (docs/neuron.md): an nn.Module that calls an @nki.jit kernel on its
inputs, as the TorchNeuron NKI guide calls one in eager mode (and inside torch.compile, where the call becomes one
node of the graph), and its PyTorch reference. neuronexp times, profiles and checks both as any layer."""

from __future__ import annotations

import importlib
from typing import Any

import torch
from torch import nn


class NkiKernel(nn.Module):
    """Calls the @nki.jit kernel `kernel` (a dotted path: your own, or neuronexp.modules.nki_kernels.tensor_add) on
    the module's two inputs. The kernel is imported when the module is built: on Trainium, with the `nki` package."""

    def __init__(self, kernel: str = "neuronexp.modules.nki_kernels.tensor_add") -> None:
        super().__init__()
        where, _, name = kernel.rpartition(".")
        self.kernel_name = kernel
        self.kernel = getattr(importlib.import_module(where), name)

    def forward(self, x: torch.Tensor, y: torch.Tensor | None = None) -> Any:
        """The kernel on (x, y); y defaults to x, so that the module option runs on one input too."""
        return self.kernel(x, x if y is None else y)


class TorchAdd(nn.Module):
    """The PyTorch reference of neuronexp.modules.nki_kernels.tensor_add: x + y (y defaults to x, as NkiKernel's)."""

    def forward(self, x: torch.Tensor, y: torch.Tensor | None = None) -> torch.Tensor:
        return x + (x if y is None else y)
