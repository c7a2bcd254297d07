"""Layers that misbehave on purpose, written into a test's working directory as `hostile.py` and used as
`module._target_=hostile.<Name>`. Each takes and ignores the default module's options (hidden_size, eps)."""

from __future__ import annotations

from pathlib import Path

SOURCE = '''
import os, sys, time
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


class ReturnsNone(torch.nn.Module):
    """Computes nothing: the fastest variant there is, and wrong."""

    def __init__(self, **options):
        super().__init__()

    def forward(self, x):
        return None


class ReturnsInt(torch.nn.Module):
    def __init__(self, **options):
        super().__init__()

    def forward(self, x):
        return 3


class Double(torch.nn.Module):
    def __init__(self, **options):
        super().__init__()

    def forward(self, x):
        return x * 2


class NearlyDouble(torch.nn.Module):
    """Double's output off by a relative 1e-4: beyond float32's default tolerance (1e-5), within rtol=1e-3."""

    def __init__(self, **options):
        super().__init__()

    def forward(self, x):
        return x * (2 * (1 + 1e-4))


class AllNan(torch.nn.Module):
    def __init__(self, **options):
        super().__init__()

    def forward(self, x):
        return torch.full_like(x, float("nan"))


class Hangs(torch.nn.Module):
    def __init__(self, **options):
        super().__init__()

    def forward(self, x):
        time.sleep(3600)


class Slow(torch.nn.Module):
    def __init__(self, **options):
        super().__init__()

    def forward(self, x):
        time.sleep(0.05)
        return x * 2


class Gated(torch.nn.Module):
    """Runs at once for inputs of width 8; any other waits until a file `gate` exists in its working directory
    (a cell process's is the sweep's), so a test knows a cell is still running when it acts."""

    def __init__(self, **options):
        super().__init__()

    def forward(self, x):
        while x.shape[-1] != 8 and not os.path.exists("gate"):
            time.sleep(0.02)
        return x * 2
'''


def write_hostile_layers(directory: Path) -> None:
    (directory / "hostile.py").write_text(SOURCE)


def write_module_options(directory: Path, **options: str) -> Path:
    """A config directory with one `module` option per name (`double="hostile.Double"`), for `--config-dir`: options
    of one `module` group, so a sweep over them is one comparison group with a baseline."""
    conf = directory / "conf"
    (conf / "module").mkdir(parents=True, exist_ok=True)
    for name, target in options.items():
        (conf / "module" / f"{name}.yaml").write_text(f"_target_: {target}\n")
    return conf
