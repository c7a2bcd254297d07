"""neuronexp's per-user cache folder (the host roofs, the Neuron NEFF cache), found without importing torch."""

from __future__ import annotations

import os
from pathlib import Path


def default_cache_dir() -> Path:
    """$NEURONEXP_CACHE_DIR, else $XDG_CACHE_HOME/neuronexp, else ~/.cache/neuronexp."""
    if os.environ.get("NEURONEXP_CACHE_DIR"):
        return Path(os.environ["NEURONEXP_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "neuronexp"
