"""Layers named by dotted path in tests (`module._target_=helpers.layers.GraphBreak`)."""

from __future__ import annotations

import torch
from torch import nn

# A user's layer file, written into a test's directory and named `failing.FailsOnWideInputs`: it raises on
# inputs wider than 64, so a sweep over widths has ok and failed cells.
FAILING_LAYER = """
import torch
class FailsOnWideInputs(torch.nn.Module):
    def forward(self, x):
        if x.shape[-1] > 64:
            raise RuntimeError(f"unsupported width {x.shape[-1]}")
        return torch.relu(x)
"""


class GraphBreak(nn.Module):
    """Two graphs under torch.compile: Dynamo breaks the graph at the explicit break between the ops."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(x)
        torch._dynamo.graph_break()
        return y * 2


class WeightsOnly(nn.Module):
    """Returns its randomly initialised weight, whatever the input: an output that shows the weights alone."""

    def __init__(self, width: int = 64) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.weight.expand_as(x) + 0 * x


class ScaledSum(nn.Module):
    """Returns its input and the sum over the last dimension of input × weight: the first output shows the exact
    input (any dtype), the second how precisely the cell's dtype summed it."""

    def __init__(self, width: int = 64) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(width))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return x, (x * self.weight.to(x.dtype)).sum(-1)  # in the input's dtype, whatever the weight's


def _init_without_wraps(init):  # type: ignore[no-untyped-def]
    """A decorator that hides the __init__ it calls (no functools.wraps), as transformers 5.25 wraps its layers'."""

    def new_init(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        init(self, *args, **kwargs)
        self.decorated = True

    return new_init


class HiddenInit(nn.Module):
    """A norm layer whose constructor's signature only its decorator's closure still shows."""

    @_init_without_wraps
    def __init__(self, hidden_size: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight, self.variance_epsilon = nn.Parameter(torch.ones(hidden_size)), eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.weight


class ThreadsSeen(nn.Module):
    """Records torch's intra-op thread count at each call (class-level, read by the test in the same process)."""

    seen: list[int] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ThreadsSeen.seen.append(torch.get_num_threads())
        return x * 2


class Greedy(torch.nn.Module):
    """Runs out of memory whenever another Greedy is alive in the process (a layer too large to share it)."""

    alive = 0

    def __init__(self) -> None:
        if Greedy.alive:
            raise MemoryError("no room beside the other Greedy")
        super().__init__()
        Greedy.alive += 1

    def __del__(self) -> None:
        Greedy.alive -= 1

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2


class Broken(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        raise ValueError("this layer is broken")


class RaisesAfter(torch.nn.Module):
    """Runs `calls` calls, then raises at every later one: past its first call, in the warm-up or timing."""

    def __init__(self, calls: int = 1) -> None:
        super().__init__()
        self.calls, self.made = calls, 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.made += 1
        if self.made > self.calls:
            raise RuntimeError(f"gave up after {self.calls} calls")
        return x * 2


# Modules a test built itself and inspects afterwards, by key: a cell builds its module from its config alone
# (cell.build), so a test hands an instance over as `module: handed(instance)`.
_HANDED: dict[str, nn.Module] = {}


def handed(module: nn.Module) -> dict[str, str]:
    """The module node of a cell that runs this very instance."""
    key = f"{type(module).__name__}-{id(module)}"
    _HANDED[key] = module
    return {"_target_": "helpers.layers.handed_module", "key": key}


def handed_module(key: str) -> nn.Module:
    return _HANDED[key]


class HalfNaN(nn.Module):
    """Its output's first half NaN, the second an inf and finite values: a layer on garbage weights (issue 43)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x.clone()
        flat = y.view(-1)
        flat[: flat.numel() // 2] = float("nan")
        flat[-1] = float("inf")
        return y
