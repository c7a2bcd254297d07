"""Causal attention with grouped-query heads: written out (eager math) and through
`F.scaled_dot_product_attention`."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def repeat_kv(x: torch.Tensor, groups: int) -> torch.Tensor:
    """[batch, kv_heads, seq, dim] -> [batch, kv_heads × groups, seq, dim], as Hugging Face's repeat_kv (a copy)."""
    if groups == 1:
        return x
    b, kv, s, d = x.shape
    return x[:, :, None].expand(b, kv, groups, s, d).reshape(b, kv * groups, s, d)


class NaiveAttention(nn.Module):
    """softmax(q·kᵀ/√d + causal mask)·v step by step, as Hugging Face's eager attention: key/value heads
    repeated for grouped-query attention, the [seq, seq] scores materialised, softmax in float32.

    Inputs q [batch, heads, seq_len, head_dim], k and v [batch, kv_heads, seq_len, head_dim], where kv_heads
    divides heads. The mask covers `seq_len` positions.
    """

    def __init__(self, seq_len: int, causal: bool = True) -> None:
        super().__init__()
        self.causal = causal
        self.register_buffer("mask", torch.ones(seq_len, seq_len, dtype=torch.bool).triu(1), persistent=False)

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        groups = q.shape[1] // k.shape[1]
        k, v = repeat_kv(k, groups), repeat_kv(v, groups)
        scores = torch.matmul(q, k.transpose(-2, -1)) * q.shape[-1] ** -0.5
        if self.causal:
            scores = scores.masked_fill(self.mask, float("-inf"))
        return torch.matmul(torch.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype), v)


class FusedAttention(NaiveAttention):
    """The same attention in one `F.scaled_dot_product_attention` call (is_causal, enable_gqa): the backend
    picks a fused kernel (flash attention where it has one) and never builds the mask or repeats heads."""

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return F.scaled_dot_product_attention(q, k, v, is_causal=self.causal, enable_gqa=k.shape[1] != q.shape[1])
