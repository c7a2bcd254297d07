"""A whole model is a module: token ids as the first input (integers with an upper bound), attention masks and
keyword inputs, the model's own dtype kept or set by input.model_dtype; the shipped tiny Llama runs as configured."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from helpers import EXPERIMENTS
from neuronexp.cell.inputs import make_inputs
from neuronexp.config import ConfigError, InputConfig
from neuronexp.config.input_specs import check_inputs, compute_dtype

CPU = torch.device("cpu")


def test_token_ids_are_drawn_below_their_upper_bound_and_other_tensors_follow_the_model_dtype() -> None:
    cfg = InputConfig(
        shape=[2, 64],
        dtype="int64",
        high=50,
        low=3,
        model_dtype="bfloat16",  # type: ignore[arg-type]
        kwargs={"attention_mask": {"shape": [2, 64], "fill": "ones", "dtype": "int64"}, "scale": {"shape": [1]}},
    )
    assert check_inputs(cfg, {}) == []  # no class to check the keywords against
    args, kwargs = make_inputs(cfg, nn.Identity(), CPU)
    ids = args[0]
    assert ids.dtype == torch.int64 and 3 <= int(ids.min()) and int(ids.max()) < 50
    assert kwargs["attention_mask"].dtype == torch.int64 and bool((kwargs["attention_mask"] == 1).all())
    assert kwargs["scale"].dtype == torch.bfloat16  # a floating tensor without a dtype: the model's
    assert compute_dtype(cfg) == "bfloat16"
    assert compute_dtype(InputConfig(shape=[1, 8], dtype="int32", high=9)) == "float32"  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kw", "key", "says"),
    [
        ({"dtype": "int64"}, "input.high", "vocabulary size"),
        ({"dtype": "int64", "high": 4, "low": 4}, "input.high", "greater than low"),
        ({"dtype": "int64", "high": 9, "fill": "randn"}, "input.fill", "draws floats"),
        ({"dtype": "float32", "model_dtype": "int64"}, "input.model_dtype", "floating dtype"),
    ],
)
def test_a_bad_first_input_is_one_line_naming_its_key(kw: dict, key: str, says: str) -> None:
    with pytest.raises(ConfigError) as err:
        check_inputs(InputConfig(shape=[1, 8], **kw), {"_target_": "torch.nn.Identity"})
    assert str(err.value).startswith(key) and says in str(err.value) and "\n" not in str(err.value)


@pytest.mark.slow
def test_token_ids_without_a_bound_fail_on_the_command_line_before_any_work(cli, tmp_path) -> None:
    result = cli("input.shape=[1,16]", "input.dtype=int64", "backend=cpu")
    assert result.returncode == 2 and "input.high" in result.stderr and not (tmp_path / "outputs").exists()


@pytest.mark.slow
def test_the_shipped_tiny_llama_runs_from_yaml_with_its_token_ids(cli, tmp_path) -> None:
    pytest.importorskip("transformers")
    import neuronexp

    run = tmp_path / "run"
    result = cli(
        "--config-dir",
        str(EXPERIMENTS),
        "module=tiny_llama",
        "backend=cpu",
        "profiler=quick",
        "timing.warmup=1",
        "timing.iters=3",
        "timing.min_iters=1",
        "timing.min_seconds=0",
        "input.shape=[1,32]",
        "input.fill=randint",
        "input.low=1",
        "input.high=2048",
        "input.model_dtype=float32",
        f"hydra.run.dir={run}",
    )
    assert result.returncode == 0, result.stderr[-2000:]
    cells, ops, _ = neuronexp.load(run)
    assert cells.loc[0, "status"] == "ok" and cells.loc[0, "dtype"] == "int64"
    assert "aten::embedding" in set(ops["op"]) and "aten::mm" in set(ops["op"]) | {"aten::addmm"}
