"""Each study's naive and fused variants compute the same function (float32), so their timings compare like
for like; and the fused variants really call the fused operator."""

from __future__ import annotations

import importlib.util
import math

import pytest
import torch
import torch.nn.functional as F
from torch.profiler import profile

from neuronexp import modules as M

B, H, KV, S, D, HIDDEN, INTER = 2, 4, 2, 8, 16, 64, 96


def _same_seed(cls_a, cls_b, *args):
    torch.manual_seed(0)
    a = cls_a(*args).eval()
    torch.manual_seed(0)
    return a, cls_b(*args).eval()


def _ops(module, *inputs) -> set[str]:
    with torch.inference_mode(), profile() as prof:
        module(*inputs)
    return {e.key for e in prof.key_averages()}


def test_layernorm_variants_match_torch() -> None:
    x = torch.randn(B, S, HIDDEN)
    naive, fused = M.NaiveLayerNorm(HIDDEN), M.FusedLayerNorm(HIDDEN)
    torch.testing.assert_close(naive(x), F.layer_norm(x, (HIDDEN,), eps=1e-5))
    torch.testing.assert_close(naive(x), fused(x))
    assert "aten::native_layer_norm" in _ops(fused, x) and "aten::native_layer_norm" not in _ops(naive, x)


def test_softmax_variants_match_torch() -> None:
    x = 30 * torch.randn(B, H, S, S)  # large logits: the max subtraction matters
    torch.testing.assert_close(M.NaiveSoftmax()(x), torch.softmax(x, -1))
    assert "aten::_softmax" in _ops(M.FusedSoftmax(), x)


def test_swiglu_fused_has_the_naive_weights_and_output() -> None:
    naive, fused = _same_seed(M.NaiveSwiGLU, M.FusedSwiGLU, HIDDEN, INTER)
    x = torch.randn(B, S, HIDDEN)
    expected = naive.down(F.silu(x @ naive.gate.weight.T) * (x @ naive.up.weight.T))
    torch.testing.assert_close(naive(x), expected)
    torch.testing.assert_close(fused(x), expected)
    assert fused.gate_up_weight.shape == (2 * INTER, HIDDEN)


def test_rotary_variants_rotate_pairs_by_position() -> None:
    q, k = torch.randn(B, H, S, D), torch.randn(B, KV, S, D)
    naive, fused = M.NaiveRotary(D, S, 10000.0), M.FusedRotary(D, S, 10000.0)
    (nq, nk), (fq, fk) = naive(q, k), fused(q, k)
    torch.testing.assert_close(nq, fq)
    torch.testing.assert_close(nk, fk)
    # Position p, pair i turns by p * theta^(-2i/D); position 0 is unchanged, norms are kept.
    torch.testing.assert_close(nq[:, :, 0], q[:, :, 0])
    torch.testing.assert_close(nq.norm(dim=-1), q.norm(dim=-1))
    angle = 3 * 10000.0 ** (-2 * 1 / D)
    x1, x2 = q[..., 3, 2], q[..., 3, 3]
    torch.testing.assert_close(nq[..., 3, 2], x1 * math.cos(angle) - x2 * math.sin(angle))


def test_rotary_fused_keeps_working_in_bfloat16() -> None:
    q = torch.randn(1, H, S, D)
    fused = M.FusedRotary(D, S).to(torch.bfloat16)
    out, _ = fused(q.bfloat16(), q.bfloat16())
    assert out.dtype == torch.bfloat16
    torch.testing.assert_close(out.float(), M.NaiveRotary(D, S)(q, q)[0], atol=0.05, rtol=0.02)


def test_attention_variants_are_causal_grouped_query_attention() -> None:
    q, k, v = torch.randn(B, H, S, D), torch.randn(B, KV, S, D), torch.randn(B, KV, S, D)
    eager, sdpa = M.NaiveAttention(S), M.FusedAttention(S)
    reference = F.scaled_dot_product_attention(
        q, k.repeat_interleave(H // KV, 1), v.repeat_interleave(H // KV, 1), is_causal=True
    )
    torch.testing.assert_close(eager(q, k, v), reference)
    torch.testing.assert_close(sdpa(q, k, v), reference)
    later = v.clone()
    later[:, :, -1] += 10  # the last token must not change the first token's output
    torch.testing.assert_close(eager(q, k, later)[:, :, 0], eager(q, k, v)[:, :, 0])
    assert any("scaled_dot_product" in op for op in _ops(sdpa, q, k, v))


def test_decoder_blocks_share_weights_and_output() -> None:
    args = (HIDDEN, H, KV, INTER, S)
    naive, fused = _same_seed(M.NaiveDecoderBlock, M.FusedDecoderBlock, *args)
    x = torch.randn(B, S, HIDDEN)
    with torch.inference_mode():
        torch.testing.assert_close(naive(x), fused(x), atol=1e-5, rtol=1e-4)
    assert sum(p.numel() for p in naive.parameters()) == sum(p.numel() for p in fused.parameters())
    ops = _ops(fused, x)
    assert "aten::_fused_rms_norm" in ops and any("scaled_dot_product" in op for op in ops)
    with pytest.raises(ValueError, match="heads must divide hidden_size"):
        M.NaiveDecoderBlock(HIDDEN, 3, 1, INTER, S)


@pytest.mark.skipif(
    importlib.util.find_spec("transformers") is None, reason="transformers not installed (pip install '.[hf]')"
)
def test_the_rotary_factory_gives_hugging_face_its_own_tables() -> None:
    from omegaconf import OmegaConf
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaAttention, LlamaRotaryEmbedding

    from neuronexp.modules.factories import causal_mask, rotary

    config = LlamaConfig(
        hidden_size=HIDDEN, num_attention_heads=H, num_key_value_heads=KV, head_dim=D, attn_implementation="sdpa"
    )
    layer = LlamaAttention(config, layer_idx=0)
    node = OmegaConf.create({"shape": [B, S, HIDDEN], "dtype": "float32"})
    cos, sin = rotary(layer, node)
    ref_cos, ref_sin = LlamaRotaryEmbedding(config)(torch.empty(0), torch.arange(S)[None])
    assert torch.equal(cos, ref_cos) and torch.equal(sin, ref_sin) and cos.shape == (1, S, D)
    mask = causal_mask(layer, node)
    assert mask.shape == (B, 1, S, S) and mask[0, 0, 0, 1] == torch.finfo(torch.float32).min and mask[0, 0, 1, 0] == 0


def test_each_study_names_its_classes_after_its_options() -> None:
    """`<layer>_naive` and `<layer>_fused` build Naive<Layer> and Fused<Layer>: one scheme for every study."""
    import yaml

    from helpers import REPO

    targets = {}
    for path in sorted((REPO / "conf" / "module").glob("*_*.yaml")):
        node = yaml.safe_load(path.read_text())
        targets[path.stem] = (node.get("module") or node)["_target_"].rsplit(".", 1)[-1]
    for option, cls in targets.items():
        layer, _, variant = option.rpartition("_")
        if variant in ("naive", "fused"):
            assert cls.startswith(variant.capitalize()), (option, cls)
            twin = targets.get(f"{layer}_{'fused' if variant == 'naive' else 'naive'}")
            assert twin is not None and twin[5:] == cls[5:], (option, cls, twin)  # the same <Layer> after the variant
