"""STAND-IN `torch.compile(backend="neuron")` (tests only): runs the captured graph eagerly on the CPU. The real
one lowers it to one NEFF; the emulated runtime (planted.executions) counts the compiled region as one execution."""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

# The compile phases the stand-in records for every graph (planted microseconds, NeuronCompilationMetrics' fields).
PHASES_US = {"torch_neuronx_fx_passes_us": 100, "torch_neuronx_lower_us": 400, "torch_neuronx_compile_us": 29_500}


def neuron_backend(gm: Any, example_inputs: list[Any]) -> Callable[..., Any]:
    from torch_neuronx import STATE

    STATE.graphs.append(SimpleNamespace(graph_id=f"graph{len(STATE.graphs)}", **PHASES_US))
    return gm.forward


def register() -> None:
    """For a process where Dynamo already looked its entry points up (an in-process test): register by name."""
    import torch._dynamo

    torch._dynamo.register_backend(neuron_backend, name="neuron")


def unregister() -> None:
    import sys

    registry = sys.modules.get("torch._dynamo.backends.registry")
    if registry is not None:
        registry._COMPILER_FNS.pop("neuron", None)
