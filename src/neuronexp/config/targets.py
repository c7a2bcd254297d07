"""Dotted paths in configs (`_target_`) imported, or a one-line ConfigError naming the key; and the objects a
config node describes, built without Hydra (the cell process imports none: cell.build)."""

from __future__ import annotations

import functools
import importlib
import inspect
from collections.abc import Mapping
from typing import Any

from neuronexp.config.errors import ConfigError

# The keys Hydra's instantiate reads from a node rather than passing to its target.
SPECIAL_KEYS = ("_target_", "_args_", "_recursive_", "_convert_", "_partial_")


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
    raise ConfigError(
        key,
        path,
        "cannot be imported; give a dotted path like mypkg.layers.MyLayer "
        "importable from the working directory or experiments/",
    )


def instantiate(node: Any, *args: Any, key: str = "module") -> Any:
    """What `hydra.utils.instantiate(node, *args, _convert_="all")` builds from a resolved node of plain values:
    nested `_target_` nodes first (unless `_recursive_: false`), `_args_` (replaced by `args` when given),
    `_partial_`; every other mapping and list as a plain dict and list. A target's own error is raised as it is."""
    if isinstance(node, (list, tuple)):
        return [instantiate(v, key=f"{key}[{i}]") for i, v in enumerate(node)]
    if not isinstance(node, Mapping):
        return node
    if "_target_" not in node:
        return {k: instantiate(v, key=f"{key}.{k}") for k, v in node.items()}
    target = node["_target_"]
    call = locate(target, f"{key}._target_") if isinstance(target, str) else target
    recursive = node.get("_recursive_", True)

    def part(value: Any, where: str) -> Any:
        return instantiate(value, key=where) if recursive else value

    kwargs = {str(k): part(v, f"{key}.{k}") for k, v in node.items() if k not in SPECIAL_KEYS}
    positional = list(args) or [part(v, f"{key}._args_[{i}]") for i, v in enumerate(node.get("_args_") or [])]
    return functools.partial(call, *positional, **kwargs) if node.get("_partial_") else call(*positional, **kwargs)


# How many wrappers deep hidden_init looks for the __init__ a decorator calls.
MAX_WRAPPERS = 4


def hidden_init(cls: Any) -> Any:
    """Where decorators hide a layer class's __init__ behind (self, *args, **kwargs) without functools.wraps
    (transformers 5.25 wraps its layers' __init__ so: use_kernelized_func), the __init__ they call, found through
    their closures, wrapper by wrapper, MAX_WRAPPERS deep at most; None where the class's own __init__ shows what it
    takes, or where no function named __init__ is found (another function in a closure is not the constructor)."""
    init, found = cls.__init__, None
    for _ in range(MAX_WRAPPERS):
        try:
            params = _params(init)[1:]  # without self
        except (TypeError, ValueError):
            return None
        if not _opaque(params):
            return found
        init = _wrapped(init)
        if init is None:
            return None
        found = init if init.__name__ == "__init__" else None
    return found if found is not None and not _opaque(_params(found)[1:]) else None


def _opaque(params: list[inspect.Parameter]) -> bool:
    """A signature that says nothing of what it takes: *args and **kwargs only."""
    return bool(params) and all(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params)


def _wrapped(wrapper: Any) -> Any:
    """What `wrapper` calls, from its closure: the function named __init__ there, else another wrapper there (a
    function taking *args and **kwargs only, to look into next); None when there is neither."""
    functions = []
    for cell in getattr(wrapper, "__closure__", None) or ():
        try:
            inner = cell.cell_contents
        except ValueError:  # a cell not yet filled
            continue
        if inspect.isfunction(inner) and inner is not wrapper:
            functions.append(inner)
    named = [f for f in functions if f.__name__ == "__init__"]
    if named:
        return named[0]
    wrappers = [f for f in functions if _opaque(_params(f)) or _opaque(_params(f)[1:])]  # (self, *args, **kwargs)
    return wrappers[0] if len(wrappers) == 1 else None


def _params(function: Any) -> list[inspect.Parameter]:
    return list(inspect.signature(function).parameters.values())
