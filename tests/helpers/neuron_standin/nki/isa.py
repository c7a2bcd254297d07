"""STAND-IN nki.isa (tests only): the instructions the recipe uses, as the torch operations they stand for."""

from __future__ import annotations

from collections.abc import Callable

import torch


def dma_copy(dst: torch.Tensor, src: torch.Tensor) -> None:
    dst.copy_(src)


def tensor_tensor(dst: torch.Tensor, data1: torch.Tensor, data2: torch.Tensor, op: Callable) -> None:
    dst.copy_(op(data1, data2))
