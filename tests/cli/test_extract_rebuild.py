"""A module rebuilt alone computes what it computed inside the model (issue 43), checked on the very input the model
gave it: per architecture family (T5, ViT, Mixtral, Llama; tiny configs, random weights), the study's module built as
its cell builds it (its node, the model's weights) against the module's own output, captured by a hook in a forward
of the whole model; the implementation the model chose carried (the experts' grouped matmul); no `torch.empty`
memory; the inputs a module expects (a router's distinct choices, weights in [0, 1]); the fused form of an RMSNorm
found by what it computes. Fast: no profiling here (tests/cli/test_extract_models.py runs the whole path)."""

from __future__ import annotations

import functools
import hashlib
import io
import json
import os
import pickle
from typing import Any

import pytest
import torch
import torch._dynamo  # noqa: F401 - what a dispatch mode's first use imports (3 s here): paid at collection
from torch import nn

from neuronexp.extract.check import check, run_recorded, state_bytes, study_module
from neuronexp.extract.fused import fused_alternative, rms_norm_like
from neuronexp.extract.recipe import recipe
from neuronexp.extract.study_inputs import input_node, read_specs
from neuronexp.moduletime.module_rows import value_spec

transformers = pytest.importorskip("transformers")
# The four families' modules imported here, at collection, not inside the first test's time (5 s on a loaded VM).
from transformers import LlamaForCausalLM, MixtralForCausalLM, T5ForConditionalGeneration, ViTModel  # noqa: E402


def _captured(model: nn.Module, path: str, *args: Any, **kwargs: Any) -> dict[str, Any]:
    """The args, kwargs and output of the module at `path` in one forward of the whole model."""
    seen: dict[str, Any] = {}
    hook = model.get_submodule(path).register_forward_hook(
        lambda m, a, k, out: seen.update(args=a, kwargs=k, out=out), with_kwargs=True
    )
    with torch.inference_mode():
        model(*args, **kwargs)
    hook.remove()
    return seen


def _first(out: Any) -> torch.Tensor:
    return out[0] if isinstance(out, (tuple, list)) else out


@functools.cache  # one model per family for the module's tests (they only read it)
def _t5() -> tuple[nn.Module, dict[str, Any]]:
    torch.manual_seed(0)
    config = transformers.T5Config(vocab_size=64, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=1,
                                   num_heads=4, use_cache=False)  # fmt: skip
    ids = torch.randint(0, 64, (1, 12), generator=torch.Generator().manual_seed(1))
    return T5ForConditionalGeneration(config).eval(), {"input_ids": ids, "decoder_input_ids": ids[:, :6]}


@functools.cache  # one model per family for the module's tests (they only read it)
def _vit() -> tuple[nn.Module, dict[str, Any]]:
    torch.manual_seed(0)
    config = transformers.ViTConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
                                    image_size=16, patch_size=8, attn_implementation="eager")  # fmt: skip
    return ViTModel(config).eval(), {"pixel_values": torch.randn(1, 3, 16, 16)}


@functools.cache  # one model per family for the module's tests (they only read it)
def _mixtral() -> tuple[nn.Module, dict[str, Any]]:
    torch.manual_seed(0)
    config = transformers.MixtralConfig(vocab_size=64, hidden_size=32, intermediate_size=48, num_hidden_layers=1,
                                        num_attention_heads=4, num_key_value_heads=2, num_local_experts=4,
                                        num_experts_per_tok=2, use_cache=False)  # fmt: skip
    return MixtralForCausalLM(config).eval(), {"input_ids": torch.arange(10).unsqueeze(0)}


@functools.cache  # one model per family for the module's tests (they only read it)
def _llama() -> tuple[nn.Module, dict[str, Any]]:
    torch.manual_seed(0)
    config = transformers.LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=48, num_hidden_layers=1,
                                      num_attention_heads=4, num_key_value_heads=2, attn_implementation="eager",
                                      use_cache=False)  # fmt: skip
    return LlamaForCausalLM(config).eval(), {"input_ids": torch.arange(10).unsqueeze(0)}


FAMILIES = {
    "t5 encoder attention (relative bias)": (_t5, "encoder.block.0.layer.0.SelfAttention"),
    "t5 encoder attention (given the bias)": (_t5, "encoder.block.1.layer.0.SelfAttention"),
    "t5 decoder cross-attention": (_t5, "decoder.block.0.layer.1.EncDecAttention"),
    "t5 layer norm": (_t5, "encoder.block.0.layer.1.layer_norm"),
    "t5 dense": (_t5, "decoder.block.0.layer.2.DenseReluDense"),
    "vit attention": (_vit, "layers.0.attention"),
    "mixtral experts": (_mixtral, "model.layers.0.mlp.experts"),
    "llama attention": (_llama, "model.layers.0.self_attn"),
}


@pytest.mark.parametrize("family", FAMILIES)
def test_the_rebuilt_module_computes_what_the_model_computed_on_its_captured_input(family: str) -> None:
    build, path = FAMILIES[family]
    torch.manual_seed(0)
    model, inputs = build()
    seen = _captured(model, path, **inputs)
    module = model.get_submodule(path)
    how = recipe(module, "module/x.pt", model.config)
    assert how.saved is None, how.how  # rebuilt from its class, not a pickled copy
    study = study_module(how.node, state_bytes(module), "float32")
    with torch.inference_mode():
        out = study(*seen["args"], **seen["kwargs"])
    torch.testing.assert_close(_first(out), _first(seen["out"]), rtol=0, atol=0)  # the same kernels, the same bits
    # No torch.empty memory: the study holds the model's own weights, every one.
    theirs = module.state_dict()
    assert (
        all(torch.equal(v, theirs[k]) for k, v in study.state_dict().items())
        and study.state_dict().keys() == theirs.keys()
    )


def test_the_moe_study_runs_the_models_experts_kernel_and_a_routers_distinct_choices() -> None:
    torch.manual_seed(0)
    model, inputs = _mixtral()
    path = "model.layers.0.mlp.experts"
    assert model.config._experts_implementation == "grouped_mm"  # what the model chose when built
    seen = _captured(model, path, **inputs)
    module = model.get_submodule(path)
    how = recipe(module, "module/x.pt", model.config)
    assert how.node["config"]["experts_implementation"] == "grouped_mm"  # carried into the rebuilt module
    # The recorded call: top-k expert ids, distinct per token, and routing weights in [0, 1].
    specs = {"args": [value_spec(a) for a in seen["args"]], "kwargs": {}}
    assert specs["args"][1] == {"shape": [10, 2], "dtype": "int64", "low": 0, "high": 4, "distinct": True} or (
        specs["args"][1]["distinct"] and specs["args"][1]["high"] <= 4
    )
    assert specs["args"][2]["fill"] == "rand"
    node, _ = input_node(module, *read_specs(json.dumps(specs), "t"))
    assert node["args"][0]["_target_"] == "neuronexp.modules.factories.distinct_ids"
    study = study_module(how.node, state_bytes(module), "float32")
    from neuronexp.extract.check import study_inputs

    args, kwargs = study_inputs(study, {**node, "dtype": "float32"})
    ids = args[1]
    assert all(len(set(row.tolist())) == 2 for row in ids) and ids.min() >= 0 and ids.max() < 4
    result = check(module, study, args, kwargs, "float32")
    assert result.same and not result.kernel_words()
    assert "aten::_grouped_mm" in run_recorded(study, args, kwargs)[1]  # not the per-expert loop of aten::mm


def test_distinct_ids_are_drawn_per_row_and_refused_when_the_range_is_too_small() -> None:
    from neuronexp.modules.factories import distinct_ids

    torch.manual_seed(3)
    ids = distinct_ids(nn.Identity(), None, shape=[64, 3], high=9, low=5)
    assert ids.shape == (64, 3) and ids.dtype == torch.int64 and ids.min() >= 5 and ids.max() < 9
    assert all(len(set(row.tolist())) == 3 for row in ids)
    torch.manual_seed(3)
    assert torch.equal(ids, distinct_ids(nn.Identity(), None, shape=[64, 3], high=9, low=5))  # the cell's seed
    with pytest.raises(ValueError, match="3 distinct ids per row need high - low >= 3"):
        distinct_ids(nn.Identity(), None, shape=[4, 3], high=2)
    assert "distinct" not in value_spec(torch.tensor([[1, 1], [0, 2]]))  # a repeat in a row: plain bounds


class GemmaLike(nn.Module):
    """An RMSNorm by its state (one 1-D weight, an eps) that scales by (1 + weight): not torch.rms_norm's."""

    def __init__(self, hidden_size: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight, self.eps = nn.Parameter(torch.zeros(hidden_size)), eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.rms_norm(x, (x.shape[-1],), None, self.eps) * (1 + self.weight)


class BiasedRMSNorm(nn.Module):
    """torch.rms_norm plus a bias: zero, so the same values, but a parameter FusedRMSNorm has no place for."""

    def __init__(self, hidden_size: int) -> None:
        super().__init__()
        self.weight, self.bias, self.eps = (
            nn.Parameter(torch.ones(hidden_size)),
            nn.Parameter(torch.zeros(hidden_size)),
            1e-6,
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.rms_norm(x, (x.shape[-1],), self.weight, self.eps) + self.bias


def test_an_rms_norm_is_found_by_what_it_computes_not_its_class_name() -> None:
    from transformers.models.t5.modeling_t5 import T5LayerNorm

    norm = T5LayerNorm(16, eps=1e-6)
    with torch.no_grad():
        norm.weight.copy_(torch.linspace(0.5, 2.0, 16))  # not all ones: the fused form must carry them
    assert rms_norm_like(norm) == (16, 1e-6)
    found = fused_alternative(norm, recipe(norm, "module/n.pt").node, lambda n: {"with_weights": n})
    assert found is not None
    weighted, words = found
    fused = weighted["with_weights"]  # the fused form gets the model's weights too
    assert fused == {"_target_": "neuronexp.modules.FusedRMSNorm", "hidden_size": 16, "eps": 1e-6}
    assert "torch.rms_norm" in words
    built = study_module(fused, state_bytes(norm), "float32")
    x = torch.randn(2, 5, 16)
    with torch.inference_mode():
        torch.testing.assert_close(built(x), norm(x))  # with the model's weights, the same function
    assert rms_norm_like(nn.LayerNorm(16)) is None  # it subtracts the mean (and has a bias)
    assert rms_norm_like(nn.LayerNorm(16, bias=False)) is None
    assert rms_norm_like(GemmaLike(16)) is None
    assert rms_norm_like(BiasedRMSNorm(16)) is None  # FusedRMSNorm has no bias to take it, even a zero one


def test_a_config_layer_keeps_the_arguments_its_attributes_give() -> None:
    from transformers.models.t5.modeling_t5 import T5Attention

    config = transformers.T5Config(d_model=32, d_kv=8, num_heads=4, is_decoder=True)
    attention = T5Attention(config, has_relative_attention_bias=True, layer_idx=0)
    node = recipe(attention, "module/a.pt").node
    assert node["has_relative_attention_bias"] is True and node["layer_idx"] == 0 and node["config"]["is_decoder"]
    assert "is_causal" not in node  # its default, left out


def _weights_file(tmp_path: Any, data: bytes) -> dict[str, Any]:
    (tmp_path / "module").mkdir(exist_ok=True)
    (tmp_path / "module" / "n.weights.pt").write_bytes(data)
    return {"path": "module/n.weights.pt", "sha256": hashlib.sha256(data).hexdigest()}


class Payload:
    def __reduce__(self):  # noqa: ANN204
        return (os.system, ("touch PWNED",))


def test_weights_load_only_as_tensors_with_the_recorded_bytes(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from neuronexp.modules.extracted import with_weights

    monkeypatch.chdir(tmp_path)
    norm = nn.LayerNorm(8)
    with torch.no_grad():
        norm.weight.fill_(3.0)
    where = _weights_file(tmp_path, state_bytes(norm))
    assert torch.equal(with_weights(nn.LayerNorm(8), **where).weight, norm.weight)
    with pytest.raises(ValueError, match="no file with the sha256"):  # another file's bytes under the name
        with_weights(nn.LayerNorm(8), where["path"], "0" * 64)
    with pytest.raises(ValueError, match=r"module/n.weights.pt: not this module's weights \(.*"):
        with_weights(nn.Linear(8, 8), **where)
    with pytest.raises(ValueError, match="not this module's weights"):  # every name must be the module's (strict)
        with_weights(nn.Sequential(nn.LayerNorm(8)), **where)
    # A pickle that runs code, recorded with its own sha256 (a tampered study): weights_only refuses it, runs nothing.
    buffer = io.BytesIO()
    pickle.dump({"weight": Payload()}, buffer)
    evil = _weights_file(tmp_path, buffer.getvalue())
    with pytest.raises(Exception) as refused:  # noqa: PT011 - torch's UnpicklingError, whatever its class
        with_weights(nn.LayerNorm(8), **evil)
    assert "weights_only" in str(refused.value) or "Unsupported" in str(refused.value)
    assert not (tmp_path / "PWNED").exists()
