"""Optional packages a test needs (the `mlflow` extra, duckdb, polars): skipped with a reason where missing, and a
failure instead in CI, which installs them (.ci/run sets NEURONEXP_REQUIRE_EXPORT=1)."""

from __future__ import annotations

import importlib
import os
from types import ModuleType

import pytest


def require(module: str) -> ModuleType:
    if os.environ.get("NEURONEXP_REQUIRE_EXPORT") == "1":
        return importlib.import_module(module)
    return pytest.importorskip(module, reason=f"{module} is not installed (pip install '.[dev]' installs it)")
