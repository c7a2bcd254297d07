"""Rotary position embedding (RoPE) on q and k: written out, and as one complex multiplication, both rotating
interleaved pairs as Meta's Llama reference does (docs/layers.md). PyTorch has no fused rotary operator: the
complex form is the fused variant, and torch.compile (a sweep axis of the study) the real fusion."""

from __future__ import annotations

import torch
from torch import nn


def rope_angles(seq_len: int, head_dim: int, theta: float) -> torch.Tensor:
    """[seq_len, head_dim / 2] rotation angles in float32: position × theta^(-2i / head_dim)."""
    if head_dim % 2:
        raise ValueError(f"head_dim={head_dim}: rotary embeddings rotate pairs, the head size must be even")
    inv_freq = theta ** (-torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim)
    return torch.outer(torch.arange(seq_len, dtype=torch.float32), inv_freq)


class NaiveRotary(nn.Module):
    """(q, k) rotated pair by pair with real arithmetic: x1·cos − x2·sin, x1·sin + x2·cos, stacked back.

    Inputs [batch, heads, seq_len, head_dim] (k may have fewer heads); the tables cover `seq_len` positions.
    """

    cos: torch.Tensor  # buffers, [seq_len, head_dim / 2]
    sin: torch.Tensor

    def __init__(self, head_dim: int, seq_len: int, theta: float = 10000.0) -> None:
        super().__init__()
        angles = rope_angles(seq_len, head_dim, theta)
        self.register_buffer("cos", angles.cos(), persistent=False)
        self.register_buffer("sin", angles.sin(), persistent=False)

    def rotate(self, x: torch.Tensor) -> torch.Tensor:
        x1, x2 = x[..., 0::2], x[..., 1::2]
        return torch.stack((x1 * self.cos - x2 * self.sin, x1 * self.sin + x2 * self.cos), dim=-1).flatten(-2)

    def forward(self, q: torch.Tensor, k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.rotate(q), self.rotate(k)


class FusedRotary(nn.Module):
    """(q, k) rotated as complex numbers: view pairs as complex, multiply by e^(i·angle), view back.

    Computed in float32 (complex bfloat16 does not exist), like Meta's reference: a bfloat16 input costs a
    conversion each way.
    """

    freqs: torch.Tensor  # buffer: (cos, sin) pairs, [seq_len, head_dim / 2, 2]

    def __init__(self, head_dim: int, seq_len: int, theta: float = 10000.0) -> None:
        super().__init__()
        angles = rope_angles(seq_len, head_dim, theta)
        # Stored as real pairs: Module.to(dtype) would drop the imaginary part of a complex buffer.
        self.register_buffer("freqs", torch.stack((angles.cos(), angles.sin()), dim=-1), persistent=False)

    def rotate(self, x: torch.Tensor) -> torch.Tensor:
        pairs = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
        return torch.view_as_real(pairs * torch.view_as_complex(self.freqs.float())).flatten(-2).type_as(x)

    def forward(self, q: torch.Tensor, k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.rotate(q), self.rotate(k)
