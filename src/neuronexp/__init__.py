"""neuronexp: declarative profiling experiments for PyTorch inference (Trainium, CUDA, CPU)."""

from __future__ import annotations

import os
from typing import Any

# Kineto prints "USDT ... profiler_start/stop" for every profiled cell at any lower level; read when torch is imported,
# so set before neuronexp (or a caller after it) imports torch. KINETO_LOG_LEVEL=4 brings its errors back.
os.environ.setdefault("KINETO_LOG_LEVEL", "6")

from neuronexp.version import __version__

__all__ = ["NeuronexpError", "Results", "__version__", "load", "run", "sweep"]


def __getattr__(name: str) -> Any:
    # On first use, not at import: `neuronexp --help` and one-line errors must not pay for pandas and pyarrow.
    if name in ("Results", "load"):
        from neuronexp import facade

        return getattr(facade, name)
    if name in ("run", "sweep", "NeuronexpError"):
        from neuronexp import api

        return getattr(api, name)
    raise AttributeError(f"module 'neuronexp' has no attribute {name!r}")
