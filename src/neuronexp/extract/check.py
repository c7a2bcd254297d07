"""Whether an extracted study computes what the model computed, checked before its files are written: the study's
module, built from its node as a cell builds it, with the model's weights, against the module inside the model, on
the same inputs (the study's own, from the recorded call): the same output (the output check's rule and
tolerances), and the same operators (the kernels the implementation chose: a grouped matmul or a loop over experts,
SDPA or eager attention). docs/layers.md, "From a model to a layer study"."""

from __future__ import annotations

import copy
import io
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode

from neuronexp.analysis.correctness import compare_outputs, default_rtol
from neuronexp.cell.output import output_leaves


@dataclass(frozen=True)
class Checked:
    """The study's eager module against the model's: the output check's columns, and the operators only one ran."""

    output: dict[str, Any]
    only_model: list[str]
    only_alone: list[str]

    @property
    def same(self) -> bool:
        return self.output["output_match"] is True

    def kernel_words(self) -> str:
        """ "" where both ran the same operators; else which ran only where."""
        if not (self.only_model or self.only_alone):
            return ""
        parts = [f"only in the model {', '.join(self.only_model)}" if self.only_model else ""]
        parts.append(f"only alone {', '.join(self.only_alone)}" if self.only_alone else "")
        return "operators differ: " + "; ".join(p for p in parts if p)


def state_bytes(module: nn.Module) -> bytes:
    """The module's state dict as `torch.save` writes it: tensors only, which `weights_only` loading reads back."""
    buffer = io.BytesIO()
    torch.save({k: v.detach().clone() for k, v in module.state_dict().items()}, buffer)
    return buffer.getvalue()


def study_module(node: dict[str, Any], weights: bytes | None, dtype: str) -> nn.Module:
    """The module as the study's cell builds it: `node` (its own class, or a saved copy) built by its target as a
    cell builds it, seeded alike, with the weights `weights` holds loaded as `with_weights` loads them (its
    apply_weights, from these bytes rather than the file not yet written), cast."""
    from neuronexp.config.targets import instantiate

    if weights is not None:
        path = "the model's weights"
        node = {"_target_": "neuronexp.modules.extracted.apply_weights", "module": node, "data": weights, "path": path}
    torch.manual_seed(0)
    return instantiate(node).to(dtype=getattr(torch, dtype)).eval()


def study_inputs(module: nn.Module, inputs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The inputs the study's cell makes from its `input` node, on the CPU."""
    from omegaconf import OmegaConf

    from neuronexp.cell.inputs import make_inputs
    from neuronexp.config import InputConfig

    cfg = OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(InputConfig), inputs))
    assert isinstance(cfg, InputConfig), type(cfg)
    return make_inputs(cfg, module, torch.device("cpu"))


class _Operators(TorchDispatchMode):
    """The name of every operator dispatched while active (`aten::_grouped_mm`)."""

    def __init__(self) -> None:
        super().__init__()
        self.names: set[str] = set()

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        self.names.add(str(func._schema.name))
        return func(*args, **(kwargs or {}))


def run_recorded(module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, set[str]]:
    """(the output, the operators it dispatched) of one call on copies of the inputs (a module may change them)."""
    args, kwargs = copy.deepcopy((args, kwargs))
    with torch.inference_mode(), _Operators() as seen:
        out = module(*args, **kwargs)
    return out, seen.names


def check(in_model: nn.Module, study: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], dtype: str) -> Checked:
    """The study's module against the model's own on the same inputs."""
    mine, alone = run_recorded(study, args, kwargs)
    theirs, model = run_recorded(in_model, args, kwargs)
    output = compare_outputs(output_leaves(mine), output_leaves(theirs), default_rtol(dtype), None)
    return Checked(output, sorted(model - alone), sorted(alone - model))
