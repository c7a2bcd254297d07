"""STAND-IN nki.language (tests only): buffers as torch tensors, the partition limit, the ops the recipe uses."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import torch

sbuf, psum, shared_hbm = "sbuf", "psum", "shared_hbm"
tile_size = SimpleNamespace(pmax=128)  # the SBUF's partitions (Trn2)
add, multiply = torch.add, torch.mul


def ndarray(shape: Any, dtype: Any, buffer: str = sbuf) -> torch.Tensor:
    return torch.empty(tuple(shape), dtype=dtype)
