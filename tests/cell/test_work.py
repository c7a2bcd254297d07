"""A cell's work with known answers: RMSNorm's bytes, a Linear's FLOPs, attention counted the same either way,
and the bytes rule's edges (a tensor passed twice, a pass-through output, a buffer never read)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from neuronexp.backends.base import Backend
from neuronexp.cell.work import count_work
from neuronexp.modules import FusedRMSNorm, NaiveRMSNorm
from neuronexp.modules.attention import FusedAttention, NaiveAttention


@pytest.mark.parametrize("dtype, size", [(torch.bfloat16, 2), (torch.float32, 4)])
@pytest.mark.parametrize("layer", [NaiveRMSNorm, FusedRMSNorm])
def test_rmsnorm_bytes_are_input_output_and_weight(layer: type, dtype: torch.dtype, size: int) -> None:
    batch, seq, hidden = 2, 128, 512
    x = torch.randn(batch, seq, hidden, dtype=dtype)
    with torch.inference_mode():
        work = count_work(layer(hidden).to(dtype), (x,), {})
    elements = batch * seq * hidden
    assert work.bytes_read == elements * size + hidden * size  # x once, the weight once
    assert work.bytes_written == elements * size
    assert work.bytes_min == 2 * elements * size + hidden * size
    assert work.flops == 0 and "counted 0" in work.note  # elementwise: FlopCounterMode has no formula


def test_linear_flops_are_2mnk() -> None:
    m, k, n = 16, 256, 64
    with torch.inference_mode():
        work = count_work(nn.Linear(k, n, bias=False), (torch.randn(m, k),), {})
    assert work.flops == 2 * m * n * k and work.note is None
    assert work.bytes_min == (m * k + k * n + m * n) * 4


def test_attention_flops_match_with_and_without_the_fused_kernel() -> None:
    b, heads, kv_heads, seq, dim = 1, 8, 2, 64, 16
    q, kv = torch.randn(b, heads, seq, dim), torch.randn(b, kv_heads, seq, dim)
    with torch.inference_mode():
        eager = count_work(NaiveAttention(seq), (q, kv, kv), {})
        fused = count_work(FusedAttention(seq), (q, kv, kv), {})
    assert eager.flops == fused.flops == 4 * b * heads * seq * seq * dim  # q·kᵀ and p·v
    assert eager.bytes_read == fused.bytes_read + seq * seq  # the eager one reads its [seq, seq] bool mask
    assert "aten.softmax" in eager.note and fused.note is None


class _Edges(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.scale = nn.Parameter(torch.ones(8))
        self.register_buffer("unused", torch.zeros(1000))

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return x * self.scale + y, x  # x is also returned as it came: not written


def test_a_tensor_passed_twice_counts_once_and_a_pass_through_output_not_at_all() -> None:
    x = torch.randn(4, 8)
    with torch.inference_mode():
        work = count_work(_Edges(), (x, x), {})
    assert work.bytes_read == x.numel() * 4 + 8 * 4  # x once (given twice), the parameter; not the unused buffer
    assert work.bytes_written == x.numel() * 4  # the new tensor only


def test_cpu_peak_memory_is_the_calls_allocations() -> None:
    n = 1 << 20  # 4 MiB of float32

    def temp_and_output() -> torch.Tensor:
        temp = torch.ones(n)
        return temp * 2  # the temporary and the output are alive together: 8 MiB

    out, peak = Backend().call_memory(temp_and_output)
    assert out.shape == (n,)
    assert 2 * n * 4 <= peak < 2 * n * 4 + (1 << 16)


def test_when_the_counting_modes_fail_every_tensor_is_listed_and_the_profiler_counts_flops(monkeypatch) -> None:
    from neuronexp.cell import limits
    from neuronexp.cell.build import Built
    from neuronexp.cell.profiling import CycleProfile, ProfileResult

    def refuse(*args, **kwargs):
        raise RuntimeError("no dispatch modes on this device")

    monkeypatch.setattr(limits, "count_work", refuse)
    layer, x = nn.Linear(64, 32, bias=False), torch.randn(8, 64)
    built = Built(layer, layer, (x,), {})
    with torch.inference_mode():
        out = layer(x)
        cycles = [CycleProfile(**{**_cycle_fields(), "ops": [{"flops": 32768.0}, {"flops": None}]}) for _ in range(3)]
        work = limits._work(built, out, ProfileResult(cycles=cycles))
    assert work.fallback and work.flops == 2 * 8 * 32 * 64  # the profiler's with_flops count
    assert work.bytes_read == (8 * 64 + 32 * 64) * 4 and work.bytes_written == 8 * 32 * 4
    assert "no dispatch modes on this device" in work.note and "with_flops" in work.note
    with torch.inference_mode():
        unknown = limits._work(built, out, None)
    assert unknown.flops != unknown.flops and "profiler.with_flops=true" in unknown.note  # NaN: not counted, not 0


def _cycle_fields() -> dict:
    from dataclasses import fields

    from neuronexp.cell.profiling import CycleProfile

    return {f.name: 0.0 for f in fields(CycleProfile) if f.name != "ops"}
