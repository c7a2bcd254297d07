"""neuronexp-extract: the hottest modules of a run profiled with profiler.modules=true, rebuilt alone as layer
studies whose printed commands run (eager, compiled, fused where known, the module as baseline)."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import pytest
import torch
import yaml
from torch import nn

from helpers import EXPERIMENTS, run_cli
from helpers.layers import HiddenInit, WeightsOnly
from helpers.user_model import write_user_model
from neuronexp.cli.extract import main
from neuronexp.extract.fused import fused_alternative
from neuronexp.extract.recipe import recipe
from neuronexp.extract.study_inputs import BadSpecs, input_node, read_specs


def _same(node: dict) -> dict:
    return node  # the weights wrapper, left out where only the node's form is checked


FAST = ["profiler=quick", "timing.warmup=1", "timing.iters=3", "timing.min_iters=1", "timing.min_seconds=0"]


def test_each_way_of_rebuilding_a_module_is_chosen_where_it_applies(tmp_path: Path, monkeypatch) -> None:
    transformers = pytest.importorskip("transformers")
    from transformers.models.llama import modeling_llama as llama

    config = transformers.LlamaConfig(
        hidden_size=64, intermediate_size=128, num_attention_heads=4, num_key_value_heads=2, attn_implementation="eager"
    )
    attention = llama.LlamaAttention(config, layer_idx=3)
    by_config = recipe(attention, "module/a.pt")
    assert by_config.how == "config" and by_config.node["layer_idx"] == 3
    assert by_config.node["config"]["hidden_size"] == 64 and by_config.node["config"]["attn_implementation"] == "eager"
    weighted, what = fused_alternative(attention, by_config.node, lambda n: {"with_weights": n})  # type: ignore[misc]
    fused = weighted["with_weights"]  # the SDPA form gets the model's weights too
    assert fused["config"]["attn_implementation"] == "sdpa" and "SDPA" in what

    mlp = llama.LlamaMLP(config)
    fused_mlp, what = fused_alternative(mlp, recipe(mlp, "module/m.pt").node, _same)  # type: ignore[misc]
    assert fused_mlp["_target_"] == "neuronexp.modules.extracted.FusedGateUp" and "one projection" in what
    from neuronexp.modules.extracted import FusedGateUp

    x = torch.randn(2, 5, 64)
    with torch.no_grad():
        assert torch.allclose(FusedGateUp(mlp)(x), mlp(x), atol=1e-6)  # the same weights, the same function

    norm = recipe(llama.LlamaRMSNorm(64, eps=1e-5), "module/n.pt")
    assert norm.how == "constructor arguments" and norm.node["hidden_size"] == 64 and norm.node["eps"] == 1e-5
    fused_norm = fused_alternative(llama.LlamaRMSNorm(64), norm.node, _same)
    assert fused_norm is not None and fused_norm[0]["_target_"] == "neuronexp.modules.FusedRMSNorm"
    # A decorator without functools.wraps shows (*args, **kwargs); the __init__ it calls still gives the arguments.
    hidden = recipe(HiddenInit(48, eps=1e-5), "module/h.pt")
    assert hidden.how == "constructor arguments"
    assert hidden.node == {"_target_": "helpers.layers.HiddenInit", "hidden_size": 48, "eps": 1e-5}
    linear = recipe(nn.Linear(8, 4, bias=False), "module/l.pt")
    assert linear.node == {
        "_target_": "torch.nn.modules.linear.Linear",
        "in_features": 8,
        "out_features": 4,
        "bias": False,
    }

    opaque = WeightsOnly(5)  # nothing to recover `width` from: saved with its weights
    saved = recipe(opaque, "module/o.pt")
    assert saved.how == "saved copy" and saved.saved and "weights" in saved.notes[0]
    assert saved.node["path"] == "module/o.pt" and not (tmp_path / "module").exists()  # bytes, written by the caller
    from neuronexp.modules.extracted import load_module

    (tmp_path / "module").mkdir()
    (tmp_path / "module" / "o.pt").write_bytes(saved.saved)
    monkeypatch.chdir(tmp_path)  # the study's directory: found from the working directory or the import path
    assert torch.equal(load_module("module/o.pt", saved.node["sha256"]).weight, opaque.weight)


def test_a_layer_that_keeps_no_config_is_rebuilt_from_the_models_when_its_shapes_match() -> None:
    transformers = pytest.importorskip("transformers")

    config = transformers.BertConfig(
        hidden_size=64, num_hidden_layers=1, num_attention_heads=4, intermediate_size=128, vocab_size=100
    )
    model = transformers.BertModel(config)
    intermediate = model.get_submodule("encoder.layer.0.intermediate")
    assert not hasattr(intermediate, "config")  # once only a saved copy could rebuild it
    rebuilt = recipe(intermediate, "module/i.pt", model.config)
    assert rebuilt.how == "config" and rebuilt.node["config"]["intermediate_size"] == 128 and rebuilt.saved is None
    other = transformers.BertConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=4, vocab_size=100)
    assert recipe(intermediate, "module/i.pt", other).how == "saved copy"  # another model's config: shapes differ


def test_inputs_are_rebuilt_as_specs_with_the_factories_of_a_llama_layer() -> None:
    specs = (
        '{"args": [], "kwargs": {"hidden_states": {"shape": [1, 8, 64], "dtype": "float32"}, '
        '"attention_mask": {"shape": [1, 1, 8, 8], "dtype": "float32", "causal_mask": true}, '
        '"position_embeddings": [{"shape": [1, 8, 16], "dtype": "float32"}, '
        '{"shape": [1, 8, 16], "dtype": "float32"}], '
        '"past_key_values": {"_unsupported_": "DynamicCache"}, '
        '"position_ids": {"shape": [1, 8], "dtype": "int64", "fill": "arange"}, '
        '"gate": {"shape": [1, 8], "dtype": "bfloat16"}, "mode": "${oc.env:HOME}"}}'
    )

    class Layer(nn.Module):
        def forward(self, hidden_states, **kwargs):  # noqa: ANN001, ANN003
            return hidden_states

    node, notes = input_node(Layer(), *read_specs(specs, "modules.parquet"))
    assert node["shape"] == [1, 8, 64] and node["dtype"] == "float32" and "hidden_states" not in node["kwargs"]
    assert node["kwargs"]["attention_mask"] == {"_target_": "neuronexp.modules.factories.causal_mask"}
    assert node["kwargs"]["position_embeddings"] == {"_target_": "neuronexp.modules.factories.rotary"}
    assert node["kwargs"]["past_key_values"] is None and "DynamicCache" in notes[0]
    assert node["kwargs"]["position_ids"] == {"shape": [1, 8], "dtype": "int64", "fill": "arange"}
    assert node["kwargs"]["gate"] == {"shape": [1, 8]}  # floating side inputs follow the cell's dtype
    assert node["kwargs"]["mode"] == "\\${oc.env:HOME}"  # text is a literal, never an interpolation


@pytest.mark.parametrize(
    "value",
    [
        {"_target_": "os.system", "command": "touch PWNED"},
        {"_value_": {"a": 1}},
        [1, {"_target_": "builtins.print"}],
        {"shape": [1, 8], "dtype": "float32", "_target_": "os.system"},
        {"shape": [1, -8], "dtype": "float32"},
        {"shape": [1, 8], "dtype": "complex64"},
        {"shape": [1, 8], "dtype": "float32", "fill": "exec"},
        {"shape": [1, 8], "dtype": "float32", "causal_mask": "yes"},
        {"shape": [1, 8], "dtype": "int64", "low": 0.5, "high": 9},
        {"_unsupported_": "DynamicCache", "extra": 1},
        float("nan"),
    ],
)
def test_a_recorded_call_outside_the_grammar_is_refused_in_one_line(value) -> None:
    import json

    specs = json.dumps({"args": [{"shape": [1, 8], "dtype": "float32"}], "kwargs": {"x": value}})
    with pytest.raises(BadSpecs) as refused:
        read_specs(specs, "RUN/modules.parquet: input_specs of hot")
    assert str(refused.value).startswith("RUN/modules.parquet: input_specs of hot: kwargs.x")
    assert "\n" not in str(refused.value)
    for bad in ('{"args": [], "kwargs": {"a b": 1}}', '{"args": [], "kwargs": {}, "more": 1}', "[1]", "not json"):
        with pytest.raises(BadSpecs):
            read_specs(bad, "t")


def test_a_directory_without_results_or_modules_is_one_line_and_exit_2(tmp_path: Path, capsys) -> None:
    assert main([str(tmp_path), "--top", "2", "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("neuronexp-extract: error: ") and err.count("\n") == 1 and not (tmp_path / "x").exists()


def _printed_commands(stdout: str) -> list[list[str]]:
    return [
        shlex.split(line.strip())[1:]
        for line in stdout.splitlines()
        if line.strip().startswith("neuronexp --config-dir")
    ]


@pytest.mark.slow
def test_a_user_model_is_extracted_and_its_printed_experiment_runs_once_moved(tmp_path: Path) -> None:
    import neuronexp

    conf = write_user_model(tmp_path)
    run = tmp_path / "run"
    env = {"PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    result = run_cli(
        [
            "--config-dir",
            str(conf),
            "module=mynet",
            "backend=cpu",
            "profiler.modules=true",
            *FAST,
            f"hydra.run.dir={run}",
        ],
        cwd=tmp_path,
        env=env,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    out = tmp_path / "studies"
    result = run_cli([str(run), "--top", "2", "--out", str(out)], cwd=tmp_path, script="neuronexp-extract", env=env)
    assert result.returncode == 0, result.stderr[-2000:]
    assert (
        "1. Hot (hot)" in result.stdout
        and "saved copy" in result.stdout
        and "in the model" in result.stdout
        and "alone" in result.stdout
    )
    assert {p.name for p in (out / "module").iterdir()} >= {"hot.yaml", "hot.pt"}
    commands = _printed_commands(result.stdout)
    assert commands[0] == ["--config-dir", str(out), "+experiment=hot"]
    moved = tmp_path / "elsewhere" / "studies"  # committed, copied, moved: its saved copy is found where it is
    moved.parent.mkdir()
    out.rename(moved)
    sweep = tmp_path / "sweep"
    ran = run_cli(
        ["--config-dir", str(moved), *commands[0][2:], *FAST, f"hydra.sweep.dir={sweep}"], cwd=tmp_path, env=env
    )
    assert ran.returncode == 0, ran.stderr[-2000:]
    cells = neuronexp.load(sweep).cells
    assert sorted(cells["compiled"]) == [False, True] and set(cells["status"]) == {"ok"}
    assert (
        cells.loc[cells["compiled"], "speedup_vs_baseline"].notna().all()
    )  # the module itself, eager, is the baseline


@pytest.mark.slow
def test_the_tiny_llama_gives_fused_alternatives_and_a_fused_study_runs(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    import neuronexp

    run = tmp_path / "run"
    result = run_cli(
        [
            "--config-dir",
            str(EXPERIMENTS),
            "module=tiny_llama",
            "input.shape=[1,32]",
            "backend=cpu",
            "profiler.modules=true",
            *FAST,
            f"hydra.run.dir={run}",
        ],
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    out = tmp_path / "studies"
    result = run_cli([str(run), "--top", "5", "--out", str(out)], cwd=tmp_path, script="neuronexp-extract")
    assert result.returncode == 0, result.stderr[-2000:]
    assert "LlamaAttention" in result.stdout and "SDPA" in result.stdout and "torch.rms_norm" in result.stdout
    attention = yaml.safe_load((out / "module" / "llama_attention.yaml").read_text())
    assert attention["module"]["_target_"] == "neuronexp.modules.extracted.FirstOutput"  # SDPA returns no weights
    weighted = attention["module"]["module"]  # the model's weights, loaded into the rebuilt layer
    assert weighted["_target_"] == "neuronexp.modules.extracted.with_weights"
    assert weighted["path"] == "module/llama_attention.weights.pt" and (out / weighted["path"]).is_file()
    assert weighted["module"]["layer_idx"] == 0 and attention["input"]["shape"] == [1, 32, 256]
    fused = yaml.safe_load((out / "module" / "llama_attention_fused.yaml").read_text())
    assert fused["module"]["module"]["module"]["config"]["attn_implementation"] == "sdpa"
    assert fused["module"]["module"]["sha256"] == weighted["sha256"]  # the same weights on both sides
    command = next(c for c in _printed_commands(result.stdout) if c[-1] == "+experiment=llama_rms_norm")
    sweep = tmp_path / "sweep"
    ran = run_cli([*command, *FAST, f"hydra.sweep.dir={sweep}"], cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr[-2000:]
    cells = neuronexp.load(sweep).cells
    assert set(cells["module"]) == {"llama_rms_norm", "llama_rms_norm_fused"} and len(cells) == 4
    assert set(cells["output_check"]) <= {"pass", "baseline"}  # the fused form computes the same function
