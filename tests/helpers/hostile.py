"""Layers that misbehave on purpose, written into a test's working directory as `hostile.py` and used as
`module._target_=hostile.<Name>`. Each takes and ignores the default module's options (hidden_size, eps)."""

from __future__ import annotations

from pathlib import Path

SOURCE = '''
import sys, time
import torch


class CtorRaises(torch.nn.Module):
    def __init__(self, **options):
        super().__init__()
        raise RuntimeError("ctor failed")


class ExitsInForward(torch.nn.Module):
    def __init__(self, **options):
        super().__init__()

    def forward(self, x):
        sys.exit(0)


class RaisesMarkup(torch.nn.Module):
    """An error text that rich would read as markup, and HTML that summary.md must not pass through."""

    def __init__(self, **options):
        super().__init__()

    def forward(self, x):
        raise FileNotFoundError("no weights at [/data/weights/layer0.bin] [bold]<script>alert(1)</script>")


class MarkupOp(torch.nn.Module):
    """An op name with "[/...]" in it, as record_function labels often have."""

    def __init__(self, **options):
        super().__init__()

    def forward(self, x):
        with torch.profiler.record_function("load[/data/cache]"):
            return x * 2


class Slow(torch.nn.Module):
    def __init__(self, **options):
        super().__init__()

    def forward(self, x):
        time.sleep(0.05)
        return x * 2
'''


def write_hostile_layers(directory: Path) -> None:
    (directory / "hostile.py").write_text(SOURCE)
