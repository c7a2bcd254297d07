"""An extracted layer's floating side inputs follow the cell's dtype, as its first input does (issue 32's mutation
audit): the study's `input.dtype` sweep must reach a recorded float32 mask or scale, while an integer side input
(position ids) keeps its recorded dtype. The extracted input node built as the cell builds it."""

from __future__ import annotations

import json

import torch
from torch import nn

from neuronexp.cell.inputs import make_inputs
from neuronexp.config.schema import DType, InputConfig
from neuronexp.extract.study_inputs import input_node, read_specs


class Layer(nn.Module):
    def forward(self, x, scale, position_ids):  # noqa: ANN001
        return x * scale


def test_floating_side_inputs_take_the_cells_dtype_and_integer_ones_keep_theirs() -> None:
    recorded = {
        "args": [{"shape": [1, 8, 64], "dtype": "float32"}, {"shape": [1, 8, 1], "dtype": "float32"}],
        "kwargs": {"position_ids": {"shape": [1, 8], "dtype": "int64", "fill": "arange"}},
    }
    node, _ = input_node(Layer(), *read_specs(json.dumps(recorded), "input_specs"))
    for dtype, torch_dtype in ((DType.bfloat16, torch.bfloat16), (DType.float16, torch.float16)):
        cfg = InputConfig(shape=node["shape"], dtype=dtype, args=node["args"], kwargs=node["kwargs"])
        (first, scale), kwargs = make_inputs(cfg, Layer(), torch.device("cpu"))
        assert first.dtype == scale.dtype == torch_dtype  # the recorded float32 does not pin the mask
        assert kwargs["position_ids"].dtype == torch.int64 and kwargs["position_ids"].tolist() == [list(range(8))]
