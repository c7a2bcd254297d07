"""Input specs from YAML: checked up front (config.input_specs), built on the cell's device (cell.inputs)."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from omegaconf import OmegaConf
from torch import nn

from neuronexp.cell.inputs import InputError, grad_mode, input_node, make_inputs, wants_grad
from neuronexp.config import ConfigError, InputConfig
from neuronexp.config.input_specs import check_inputs, forward_check

CPU = torch.device("cpu")
RMS = {"_target_": "neuronexp.modules.NaiveRMSNorm", "hidden_size": 8}


def _input(args: list | None = None, kwargs: dict | None = None, **kw: Any) -> InputConfig:
    return InputConfig(shape=[2, 3, 8], dtype="float32", args=args or [], kwargs=kwargs or {}, **kw)  # type: ignore[arg-type]


class TwoInputs(nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor, *, scale: float = 1.0) -> torch.Tensor:
        return (x + y) * scale


class SwallowsKwargs(nn.Module):
    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None, **kwargs: Any) -> torch.Tensor:
        return x


def test_every_kind_of_spec_builds_the_value_it_describes() -> None:
    cfg = _input(
        args=[None, True, 3, 0.5, "text", [{"shape": [2], "fill": "zeros"}, None], {"_value_": {"a": [1, 2]}}],
        kwargs={
            "positions": {"shape": [2, 4], "fill": "arange"},
            "tokens": {"shape": [64], "dtype": "int32", "low": 5, "high": 9},
            "flags": {"shape": [16], "fill": "bernoulli"},
            "filled": {"shape": [3], "fill": "full", "value": 7},
            "ones": {"shape": [2, 2], "fill": "ones", "dtype": "bfloat16"},
            "uniform": {"shape": [100], "fill": "rand"},
            "made": {"_target_": "helpers.factories.seen_by_factory", "scale": 3},
        },
    )
    module = nn.Identity()
    args, kw = make_inputs(cfg, module, CPU)
    assert args[0].shape == (2, 3, 8) and args[0].dtype == torch.float32
    assert args[1:6] == (None, True, 3, 0.5, "text")
    pair = args[6]  # a YAML list is a tuple
    assert isinstance(pair, tuple) and torch.equal(pair[0], torch.zeros(2)) and pair[1] is None
    assert args[7] == {"a": [1, 2]}
    assert kw["positions"].dtype == torch.int64 and kw["positions"].tolist() == [[0, 1, 2, 3]] * 2
    assert kw["tokens"].dtype == torch.int32 and set(kw["tokens"].tolist()) <= {5, 6, 7, 8}
    assert kw["flags"].dtype == torch.bool
    assert kw["filled"].tolist() == [7.0, 7.0, 7.0] and kw["filled"].dtype == torch.float32  # the first input's dtype
    assert kw["ones"].dtype == torch.bfloat16
    assert 0 <= kw["uniform"].min() and kw["uniform"].max() < 1
    name, node, tensor = kw["made"]
    assert name == "Identity" and torch.equal(tensor, torch.full((3,), 3.0))
    assert list(node.shape) == [2, 3, 8] and node.dtype == "float32" and OmegaConf.is_readonly(node)


def test_values_are_seeded_and_drawn_in_a_fixed_order() -> None:
    cfg = _input(args=[{"shape": [4]}], kwargs={"k": {"shape": [4]}}, seed=7)
    (first, a), kw = make_inputs(cfg, nn.Identity(), CPU)
    gen = torch.Generator().manual_seed(7)  # first input, then args, then kwargs, from one generator
    assert torch.equal(first, torch.randn((2, 3, 8), generator=gen))
    assert torch.equal(a, torch.randn((4,), generator=gen))
    assert torch.equal(kw["k"], torch.randn((4,), generator=gen))
    (again, _), _ = make_inputs(cfg, nn.Identity(), CPU)
    assert torch.equal(first, again)


def test_a_failing_factory_names_its_input_and_keeps_the_root_cause() -> None:
    cfg = _input(kwargs={"position_embeddings": {"_target_": "helpers.factories.failing_factory"}})
    with pytest.raises(
        InputError,
        match=r"^input.kwargs.position_embeddings: helpers.factories.failing_factory "
        r"failed: LookupError: no config here$",
    ) as err:
        make_inputs(cfg, nn.Identity(), CPU)
    assert err.value.__cause__ is not None  # the traceback keeps the factory's frames


def test_the_factories_former_name_still_builds_a_mask() -> None:
    """Studies written before the rename name `neuronexp.modules.inputs.causal_mask`: still found (config.targets)."""
    old = {"mask": {"_target_": "neuronexp.modules.inputs.causal_mask"}}
    _, kw = make_inputs(_input(kwargs=old), nn.Identity(), CPU)
    assert kw["mask"].shape == (2, 1, 3, 3) and kw["mask"][0, 0, 0, 1] == torch.finfo(torch.float32).min


def test_factories_get_a_detached_copy_of_the_input_node() -> None:
    node = input_node(_input(kwargs={"m": {"_value_": 1}}))
    assert node.kwargs.m == {"_value_": 1} and OmegaConf.is_readonly(node)


def test_requires_grad_records_autograd_and_otherwise_inference_mode() -> None:
    grad = _input(kwargs={"h": [{"shape": [2], "requires_grad": True}]})
    assert wants_grad(grad) and not wants_grad(_input())
    with grad_mode(grad, "cpu"):
        _, kw = make_inputs(grad, nn.Identity(), CPU)
        assert kw["h"][0].requires_grad and torch.is_grad_enabled()
    with grad_mode(_input(), "cpu"):
        assert torch.is_inference_mode_enabled()
    with grad_mode(_input(), "neuron"):  # XLA tensors reject inference mode
        assert not torch.is_grad_enabled() and not torch.is_inference_mode_enabled()


@pytest.mark.parametrize(
    ("inputs", "key", "fragment"),
    [
        ({"args": [{"shape": [2], "fill": "gauss"}]}, "input.args[0].fill", "one of randn"),
        ({"kwargs": {"m": {"shape": [2], "flil": "zeros"}}}, "input.kwargs.m.flil", "unknown tensor key"),
        ({"kwargs": {"m": {"shape": [2, -1]}}}, "input.kwargs.m.shape", "non-negative integers"),
        ({"kwargs": {"m": {"shape": [2], "dtype": "float8"}}}, "input.kwargs.m.dtype", "one of float32"),
        ({"kwargs": {"m": {"shape": [2], "dtype": "int64", "fill": "randn"}}}, "input.kwargs.m.fill", "draws floats"),
        (
            {"kwargs": {"m": {"shape": [2], "fill": "randint", "low": 3, "high": 3}}},
            "input.kwargs.m.high",
            "greater than low=3",
        ),
        ({"kwargs": {"m": {"shape": [2], "fill": "full", "value": "x"}}}, "input.kwargs.m.value", "must be a number"),
        (
            {"kwargs": {"m": {"shape": [2], "fill": "arange", "requires_grad": True}}},
            "input.kwargs.m.requires_grad",
            "int64",
        ),
        ({"kwargs": {"m": [None, {"fill": "zeros"}]}}, "input.kwargs.m[1]", "needs shape"),
        ({"kwargs": {"m": {"_value_": 1, "x": 2}}}, "input.kwargs.m", "_value_ stands alone"),
        ({"kwargs": {"m": {"_target_": "no_such_pkg.make"}}}, "input.kwargs.m._target_", "cannot be imported"),
        ({"kwargs": {"m": {"_target_": "math.pi"}}}, "input.kwargs.m._target_", "is not callable"),
        ({"extra": [{"shape": [1, 2]}]}, "input.extra", "renamed to input.args"),
    ],
)
def test_a_bad_spec_is_one_line_naming_its_key(inputs: dict, key: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as err:
        check_inputs(_input(**inputs), {"_target_": "torch.nn.Identity"})
    assert err.value.key == key and fragment in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("args", "kwargs", "key", "fragment"),
    [
        ([{"shape": [1]}, {"shape": [1]}], {}, "input.args", "takes 2 positional input(s)"),
        ([], {}, "input.args", "needs y: list it in input.args or add +input.kwargs.y"),
        ([], {"y": None, "scael": 2.0}, "input.kwargs.scael", "not a parameter of TwoInputs.forward"),
        ([{"shape": [1]}], {"y": None}, "input.kwargs.y", "already given positionally"),
    ],
)
def test_inputs_are_checked_against_forward(args: list, kwargs: dict, key: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as err:
        forward_check(TwoInputs, args, kwargs)
    assert err.value.key == key and fragment in str(err.value)


def test_keyword_inputs_that_only_kwargs_takes_are_a_warning_on_the_row() -> None:
    assert forward_check(TwoInputs, [{"shape": [1]}], {"scale": 2.0}) == []
    (warning,) = forward_check(SwallowsKwargs, [], {"mask": None, "attention_mak": None})
    assert warning.startswith("input.kwargs.attention_mak is not a named parameter of SwallowsKwargs.forward")
