"""The RMSNorm variants agree with a float64 reference within their dtype's tolerance."""

from __future__ import annotations

import pytest
import torch

from neuronexp.modules import FusedRMSNorm, NaiveRMSNorm

TOLERANCE = {torch.float32: 1e-5, torch.bfloat16: 2e-2, torch.float16: 2e-3}


def reference(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    x64 = x.double()
    return x64 * torch.rsqrt(x64.pow(2).mean(-1, keepdim=True) + eps) * weight.double()


def _modules(hidden: int, dtype: torch.dtype):
    torch.manual_seed(0)
    naive = NaiveRMSNorm(hidden, eps=1e-6)
    with torch.no_grad():
        naive.weight.copy_(torch.rand(hidden) + 0.5)
    fused = FusedRMSNorm(hidden, eps=1e-6)
    fused.load_state_dict(naive.state_dict())
    return naive.to(dtype), fused.to(dtype)


@pytest.mark.parametrize("dtype", list(TOLERANCE))
def test_naive_and_fused_match_reference(dtype: torch.dtype) -> None:
    naive, fused = _modules(256, dtype)
    x = torch.randn(2, 16, 256).to(dtype)
    ref = reference(x, naive.weight, 1e-6)
    tol = TOLERANCE[dtype]
    for module in (naive, fused):
        out = module(x)
        assert out.dtype == dtype and out.shape == x.shape
        torch.testing.assert_close(out.double(), ref, rtol=tol, atol=tol)


def test_naive_differs_from_unnormalised_input() -> None:
    # Guards the reference itself: normalisation must change a non-unit-RMS input.
    naive, _ = _modules(64, torch.float32)
    x = 3 * torch.randn(4, 64)
    assert not torch.allclose(naive(x), x * naive.weight, atol=1e-2)


@pytest.mark.slow
def test_compiled_naive_matches_eager() -> None:
    naive, _ = _modules(128, torch.float32)
    torch._dynamo.reset()
    compiled = torch.compile(naive, backend="inductor", dynamic=False)
    x = torch.randn(1, 8, 128)
    torch.testing.assert_close(compiled(x), naive(x), rtol=1e-5, atol=1e-5)
