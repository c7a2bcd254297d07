"""The module node's keys against the signature of what its `_target_` calls (`__init__` for a class), checked when
a cell is planned, as its inputs are against `forward` (config.input_specs): `+module.expansoin=4` is one line
before any file is written, not a TypeError in the cell. Nested `_target_` nodes (a Hugging Face config) are checked
alike."""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

from neuronexp.config.errors import ConfigError
from neuronexp.config.targets import SPECIAL_KEYS, locate


def check_constructor(node: Any, key: str = "module") -> None:
    """Every key of `node` an argument its target takes (anything, where it takes **kwargs), every required
    argument given (unless `_partial_`), and `_args_` no more than it takes positionally (ConfigError: naming the
    key, its value and the arguments the target accepts)."""
    if not isinstance(node, Mapping):
        if isinstance(node, (list, tuple)):
            for i, item in enumerate(node):
                check_constructor(item, f"{key}[{i}]")
        return
    recursive = node.get("_recursive_", True) is not False
    if "_target_" in node and isinstance(node["_target_"], str):
        _check_call(node, key)
    elif "_target_" in node:
        return
    if recursive:
        for name, value in node.items():
            if name not in SPECIAL_KEYS:
                check_constructor(value, f"{key}.{name}")
        for i, value in enumerate(node.get("_args_") or []):
            check_constructor(value, f"{key}._args_[{i}]")


def _signature(target: Any) -> inspect.Signature | None:
    # The signature of what is called, not of what a decorator says it wraps: Hugging Face's configs wrap a dataclass
    # __init__ in one taking **kwargs (attn_implementation), which the wrapped signature does not show.
    try:
        return inspect.signature(target, follow_wrapped=False)
    except (TypeError, ValueError):  # a C extension, an unusual callable: nothing to check
        return None


def _check_call(node: Mapping[str, Any], key: str) -> None:
    target = locate(str(node["_target_"]), key=f"{key}._target_")
    sig = _signature(target) if callable(target) else None
    if sig is None:
        return
    P = inspect.Parameter
    params = list(sig.parameters.values())
    name = getattr(target, "__qualname__", str(node["_target_"]))
    bare = sig.replace(parameters=[p.replace(annotation=P.empty) for p in params], return_annotation=P.empty)
    where = f"{name}{bare}"  # its arguments as written, without their annotations
    named = {p.name for p in params if p.kind in (P.POSITIONAL_OR_KEYWORD, P.KEYWORD_ONLY)}
    kwargs = {str(k): v for k, v in node.items() if k not in SPECIAL_KEYS}
    if not any(p.kind == P.VAR_KEYWORD for p in params):
        for arg, value in kwargs.items():
            if arg not in named:
                raise ConfigError(f"{key}.{arg}", value, f"not an argument of {where}")
    positional = [p for p in params if p.kind in (P.POSITIONAL_ONLY, P.POSITIONAL_OR_KEYWORD)]
    args = list(node.get("_args_") or [])
    if len(args) > len(positional) and not any(p.kind == P.VAR_POSITIONAL for p in params):
        raise ConfigError(f"{key}._args_", args, f"{where} takes {len(positional)} positional argument(s)")
    if node.get("_partial_"):
        return
    given = {p.name for p in positional[: len(args)]} | set(kwargs)
    for p in params:
        if p.default is P.empty and p.kind not in (P.VAR_POSITIONAL, P.VAR_KEYWORD) and p.name not in given:
            raise ConfigError(f"{key}.{p.name}", "(missing)", f"{where} needs {p.name}: add +{key}.{p.name}=...")
