"""A Llama-style decoder block built from the studies' parts: every part naive, or every part fused."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from neuronexp.modules.attention import FusedAttention, NaiveAttention
from neuronexp.modules.mlp import FusedSwiGLU, NaiveSwiGLU
from neuronexp.modules.rmsnorm import FusedRMSNorm, NaiveRMSNorm
from neuronexp.modules.rotary import FusedRotary, NaiveRotary


class NaiveDecoderBlock(nn.Module):
    """h = x + o(attention(rotary(q, k), v)) over RMSNorm(x); out = h + MLP(RMSNorm(h)), with the naive parts:
    RMSNorm written out, separate q/k/v projections, real-arithmetic rotary, eager attention, separate gate/up.

    Input [batch, seq_len, hidden_size]; head_dim = hidden_size / num_heads; causal, grouped-query heads.
    """

    # Seven arguments: the module options conf/module/decoder_*.yaml set and users override (module.num_heads=...),
    # named after a Llama config's fields; grouping them would rename those keys. The fused block takes the same.
    def __init__(  # noqa: PLR0913
        self,
        hidden_size: int,
        num_heads: int,
        num_kv_heads: int,
        intermediate_size: int,
        seq_len: int,
        rope_theta: float = 500000.0,
        eps: float = 1e-5,
    ) -> None:
        super().__init__()
        if hidden_size % num_heads or num_heads % num_kv_heads:
            raise ValueError(
                f"hidden_size={hidden_size}, num_heads={num_heads}, num_kv_heads={num_kv_heads}: "
                "heads must divide hidden_size and kv heads must divide heads"
            )
        self.heads, self.kv_heads, self.head_dim = num_heads, num_kv_heads, hidden_size // num_heads
        kv_width = num_kv_heads * self.head_dim
        self.attn_norm = NaiveRMSNorm(hidden_size, eps)
        self.q = nn.Linear(hidden_size, hidden_size, bias=False)
        self.k = nn.Linear(hidden_size, kv_width, bias=False)
        self.v = nn.Linear(hidden_size, kv_width, bias=False)
        self.o = nn.Linear(hidden_size, hidden_size, bias=False)
        self.rotary: nn.Module = NaiveRotary(self.head_dim, seq_len, rope_theta)
        self.attention: nn.Module = NaiveAttention(seq_len)
        self.mlp_norm = NaiveRMSNorm(hidden_size, eps)
        self.mlp: nn.Module = NaiveSwiGLU(hidden_size, intermediate_size)
        self._fuse(hidden_size, seq_len, rope_theta, eps)

    def _fuse(self, hidden_size: int, seq_len: int, rope_theta: float, eps: float) -> None:
        """The naive block keeps its parts as built; the fused block replaces them (after the same draws)."""

    def qkv(self, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        return self.q(h), self.k(h), self.v(h)

    def attend(self, h: torch.Tensor) -> torch.Tensor:
        b, s, _ = h.shape
        q, k, v = (t.view(b, s, -1, self.head_dim).transpose(1, 2) for t in self.qkv(h))
        q, k = self.rotary(q, k)
        return self.o(self.attention(q, k, v).transpose(1, 2).reshape(b, s, -1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x + self.attend(self.attn_norm(x))
        return h + self.mlp(self.mlp_norm(h))


class FusedDecoderBlock(NaiveDecoderBlock):
    """The same block with the fused parts: torch.rms_norm, one q/k/v projection, complex rotary,
    scaled_dot_product_attention, one gate/up projection. Same weights as the naive block (stacked)."""

    def _fuse(self, hidden_size: int, seq_len: int, rope_theta: float, eps: float) -> None:
        self.qkv_weight = nn.Parameter(torch.cat([self.q.weight, self.k.weight, self.v.weight]).detach())
        self.split = [self.q.out_features, self.k.out_features, self.v.out_features]
        del self.q, self.k, self.v
        self.attn_norm, self.mlp_norm = FusedRMSNorm(hidden_size, eps), FusedRMSNorm(hidden_size, eps)
        self.rotary = FusedRotary(self.head_dim, seq_len, rope_theta)
        self.attention = FusedAttention(seq_len)
        self.mlp = FusedSwiGLU.fused_from(self.mlp)  # type: ignore[arg-type]  # the naive block built a NaiveSwiGLU

    def qkv(self, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        q, k, v = F.linear(h, self.qkv_weight).split(self.split, dim=-1)
        return q, k, v
