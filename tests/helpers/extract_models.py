"""A real model whose parts push neuronexp-extract's rules, each by its own code and names, no table tampered:
a layer whose text argument reads as an interpolation, one only a saved copy rebuilds, one whose class name is made
a path at test time, and a ModuleDict key that would end a YAML comment and start live config (issue 32, PMCB)."""

from __future__ import annotations

import torch
from torch import nn

# The key of issue 32's reproduction, as it is: a newline ends a `# ` comment and the rest is live YAML.
INJECTING_KEY = "x\nhydra:\n  job:\n    name: INJECTED\n#"
# A string a Hydra config would resolve (the user's home directory), were it not written as a literal.
INTERPOLATION = "${oc.env:HOME}"


class Tagged(nn.Module):
    """Rebuilt from its constructor arguments, `tag` among them."""

    def __init__(self, width: int, tag: str = "plain") -> None:
        super().__init__()
        self.width, self.tag = width, tag
        self.proj = nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(x)


class Opaque(nn.Module):
    """Nothing to recover `inner` from: rebuilt from a saved copy (module/opaque.pt)."""

    def __init__(self, width: int, inner: int) -> None:
        super().__init__()
        self.up, self.down = nn.Linear(width, inner), nn.Linear(inner, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(torch.relu(self.up(x)))


class Escapes(nn.Module):
    """Its `__qualname__` is set to an absolute path by the test that profiles it: a real class whose name holds
    '/' (which no import reaches, so it can be neither rebuilt nor pickled)."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.proj = nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(x)


class StudyNet(nn.Module):
    """`escapes=True` adds the Escapes layer (whose name a test makes a path)."""

    def __init__(self, width: int = 32, escapes: bool = False) -> None:
        super().__init__()
        self.tagged = Tagged(width, tag=INTERPOLATION)
        self.opaque = Opaque(width, 4 * width)
        self.escapes = Escapes(width) if escapes else None
        self.heads = nn.ModuleDict({INJECTING_KEY: nn.Linear(width, width)})

    def forward(self, x: torch.Tensor, scale: float = 1.0) -> torch.Tensor:
        x = self.opaque(self.tagged(x))
        x = self.escapes(x) if self.escapes is not None else x
        return self.heads[INJECTING_KEY](x) * scale


class Scaled(nn.Module):
    """Keeps its `scale` as `factor`, which no argument name recovers: rebuilt alone it scales by 1, not 2."""

    def __init__(self, width: int, scale: float = 1.0) -> None:
        super().__init__()
        self.width, self.proj = width, nn.Linear(width, width)
        self.factor = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(x) * self.factor


class TwoWays(nn.Module):
    """Doubles its input by `x + x` or `x * 2` (the same values, other operators), by a flag no argument recovers:
    an implementation choice a rebuilt module loses, as a config's `_experts_implementation` once was."""

    def __init__(self, width: int, by_add: bool = False) -> None:
        super().__init__()
        self.width, self.proj = width, nn.Linear(width, width)
        self._by_add = by_add

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.proj(x)
        return y + y if self._by_add else y * 2


class RebuildNet(nn.Module):
    """One part that computes something else when rebuilt alone, one that runs other operators."""

    def __init__(self, width: int = 32) -> None:
        super().__init__()
        self.scaled = Scaled(width, scale=2.0)
        self.two_ways = TwoWays(width, by_add=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.two_ways(self.scaled(x))
