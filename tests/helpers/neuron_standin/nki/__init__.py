"""STAND-IN for the `nki` package (tests only): just enough of nki.jit, nki.language and nki.isa to run the
neuronexp recipe's kernels (neuronexp.modules.nki_kernels) on CPU tensors, each documented call done with the torch
operation it stands for (an SBUF buffer is a torch.empty, dma_copy a copy_, tensor_tensor the op into dst). The
kernel's own body runs, so a kernel that computed the wrong thing would fail the output check. Nothing here is NKI's
compiler or hardware. Each call is a profiler range `nki::<kernel>`, the host op the stand-in's runtime plants device
time for (planted.DEVICE_US)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from . import isa, language  # noqa: F401  (nki.isa, nki.language)

__standin__ = True


class Kernel:
    """What @nki.jit returns: a callable that runs the kernel on PyTorch tensors."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn, self.__name__ = fn, fn.__name__

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        with torch.profiler.record_function(f"nki::{self.__name__}"):
            return self.fn(*args, **kwargs)


def jit(fn: Callable[..., Any] | None = None, **kwargs: Any) -> Any:
    return Kernel(fn) if fn is not None else (lambda f: Kernel(f))
