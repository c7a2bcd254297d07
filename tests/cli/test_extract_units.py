"""neuronexp-extract's plan, before any model is built: each unit's own file names (never another's fused form's),
its per-call figure in the model, its name as words (issue 43, and issue 44's survivors in extract/hot_units.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from neuronexp.extract.hot_units import plan_units
from neuronexp.extract.recipe import study_name

SPEC = json.dumps({"args": [{"shape": [1, 8, 16], "dtype": "float32"}], "kwargs": {}})


def _plan(classes: list[tuple[str, float, float]]) -> list:
    """The units of hot classes given as (class, total µs of its hottest form, calls of that form)."""
    rows = [
        {"module_type": f"pkg.layers.{name}", "paths": [f"m{i}"], "share": 0.1, "form_total_device_us": total,
         "form_calls": calls, "forms": 1, "noise": ""}
        for i, (name, total, calls) in enumerate(classes)
    ]  # fmt: skip
    table = pd.DataFrame({"input_specs": [SPEC] * len(rows)}, index=[f"m{i}" for i in range(len(rows))])
    return plan_units(pd.DataFrame(rows), table, Path("RUN/modules.parquet"))


@pytest.mark.parametrize("order", [["Norm", "NormFused"], ["NormFused", "Norm"]])
def test_a_unit_named_like_another_units_fused_form_gets_files_of_its_own(order: list[str]) -> None:
    # `norm` writes module/norm_fused.yaml for its fused form; a class NormFused would be `norm_fused` and write the
    # same file (and whichever came second would replace the first's). Each order: every file belongs to one unit.
    units = _plan([(name, 10.0, 1.0) for name in order])
    files = [f for u in units for f in u.files()]
    assert len(files) == len(set(files)), files


def test_the_per_call_figure_is_the_forms_time_over_its_calls() -> None:
    (unit,) = _plan([("Attention", 900.0, 3.0)])  # three calls a step, 900 µs together
    assert unit.per_call_us == pytest.approx(300.0)
    (never,) = _plan([("Attention", 900.0, 0.0)])
    assert never.per_call_us != never.per_call_us  # NaN: no call, no figure (missing is not zero)


@pytest.mark.parametrize(
    ("module_type", "name"),
    [
        ("transformers.models.vit.modeling_vit.ViTMLP", "vit_mlp"),  # was vi_tmlp
        ("transformers.models.vit.modeling_vit.ViTAttention", "vit_attention"),  # was vi_t_attention
        ("transformers.models.t5.modeling_t5.T5LayerNorm", "t5_layer_norm"),
        ("transformers.models.llama.modeling_llama.LlamaRMSNorm", "llama_rms_norm"),
        ("transformers.models.gpt_neox.modeling_gpt_neox.GPTNeoXMLP", "gpt_neox_mlp"),
        ("transformers.models.qwen2_moe.modeling_qwen2_moe.Qwen2MoeSparseMoeBlock", "qwen2_moe_sparse_moe_block"),
        ("torch.nn.modules.linear.Linear", "linear"),
        ("pkg.layers.Linearity", "linearity"),  # a module named `linear` does not split `Linearity`
        ("helpers.extract_models.Tagged", "tagged"),
    ],
)
def test_class_names_are_split_as_words_the_model_kept_whole(module_type: str, name: str) -> None:
    assert study_name(module_type) == name
