"""neuronexp: declarative profiling experiments for PyTorch inference (Trainium, CUDA, CPU)."""

from __future__ import annotations

from neuronexp.results import Results, load

__version__ = "0.1.0"
__all__ = ["Results", "__version__", "load"]
