"""Dotted paths in configs (`_target_`) imported, or a one-line ConfigError naming the key."""

from __future__ import annotations

import importlib
from typing import Any

from neuronexp.config.errors import ConfigError


def locate(path: str, key: str = "module._target_") -> Any:
    """Import `pkg.mod.Name` (like hydra.utils.get_object) but fail with a ConfigError naming `key`."""
    parts = path.split(".")
    for split in range(len(parts) - 1, 0, -1):
        mod_name = ".".join(parts[:split])
        try:
            obj: Any = importlib.import_module(mod_name)
        except ModuleNotFoundError as exc:
            if exc.name and (mod_name == exc.name or mod_name.startswith(exc.name + ".")):
                continue
            raise ConfigError(key, path, f"importing {mod_name} failed: {exc}") from exc
        except Exception as exc:  # a user module that raises at import time
            raise ConfigError(key, path, f"importing {mod_name} failed: {type(exc).__name__}: {exc}") from exc
        try:
            for attr in parts[split:]:
                obj = getattr(obj, attr)
        except AttributeError:
            raise ConfigError(key, path, f"{mod_name} has no attribute {'.'.join(parts[split:])}") from None
        return obj
    raise ConfigError(key, path, "cannot be imported; give a dotted path like mypkg.layers.MyLayer "
                      "importable from the working directory or experiments/")
