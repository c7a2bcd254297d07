"""neuronexp: declarative profiling experiments for PyTorch inference (Trainium, CUDA, CPU)."""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"
__all__ = ["Results", "__version__", "load"]


def __getattr__(name: str) -> Any:
    # On first use, not at import: `neuronexp --help` and one-line errors must not pay for pandas and pyarrow.
    if name in ("Results", "load"):
        from neuronexp import results

        return getattr(results, name)
    raise AttributeError(f"module 'neuronexp' has no attribute {name!r}")
