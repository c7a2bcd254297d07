"""Seeded input tensors for a cell, built on the cell's device."""

from __future__ import annotations

import torch

from neuronexp.config import DType, InputConfig

TORCH_DTYPES = {
    DType.float32: torch.float32,
    DType.bfloat16: torch.bfloat16,
    DType.float16: torch.float16,
    DType.float64: torch.float64,
    DType.int64: torch.int64,
    DType.int32: torch.int32,
    DType.bool: torch.bool,
}


def torch_dtype(dtype: DType | str) -> torch.dtype:
    return TORCH_DTYPES[DType(dtype)]


def _tensor(shape: list[int], dtype: DType, high: int, gen: torch.Generator) -> torch.Tensor:
    td = torch_dtype(dtype)
    if td.is_floating_point:
        return torch.randn(*shape, generator=gen, dtype=torch.float32).to(td)
    if td == torch.bool:
        return torch.randint(0, 2, tuple(shape), generator=gen).bool()
    return torch.randint(0, high, tuple(shape), generator=gen, dtype=td)


def make_inputs(cfg: InputConfig, device: torch.device) -> tuple[torch.Tensor, ...]:
    """The first input from `input.shape/dtype`, then one tensor per `input.extra` entry.

    Tensors are drawn on the host from a fixed seed, then moved: the same values on every backend.
    """
    gen = torch.Generator().manual_seed(cfg.seed)
    tensors = [_tensor(list(cfg.shape), cfg.dtype, 2, gen)]
    tensors += [_tensor(list(e.shape), e.dtype, e.high, gen) for e in cfg.extra]
    return tuple(t.to(device) for t in tensors)
