"""A module's recorded first call (`input_specs` in modules.parquet) as the `input` node of an extracted study.
The table is data from a results directory: only the grammar the recorder writes (moduletime.module_rows.value_spec) is
read (tensors by shape, dtype and fill, ids distinct per row; literals; lists; a stand-in for an object it could
not record), anything
else is refused, and text from it reaches a generated file only as a literal (docs/guarantees.md)."""

from __future__ import annotations

import inspect
import json
import math
import re
from typing import Any

from torch import nn

from neuronexp.config.input_specs import DTYPES, FILLS, INT64_MAX

_TENSOR_KEYS = {"shape", "dtype", "fill", "low", "high", "value", "causal_mask", "distinct"}
_MAX_DEPTH = 16


class BadSpecs(ValueError):
    """A recorded call outside the grammar: one line naming where, refused before anything is built or written."""


def shown(text: Any) -> str:
    """Text from data as one safe line: control characters, line breaks and odd spaces escaped as Python writes
    them (`\\n`, `\\x1b`, `\\u2028`), so that no newline ends a comment or a message early."""
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in str(text))


def literal(text: str) -> str:
    """`text` as an OmegaConf string that reads back as exactly `text`: `${` escaped, so that no interpolation or
    resolver in it runs when the generated config is composed (backslashes before it doubled, as OmegaConf reads)."""
    return re.sub(r"(\\*)\$\{", lambda m: m.group(1) * 2 + "\\${", text)


def read_specs(text: Any, where: str) -> tuple[list[Any], dict[str, Any]]:
    """(args, kwargs) of a recorded call, every value checked against the grammar (BadSpecs: naming `where` and
    the first value outside it)."""
    try:
        specs = json.loads(str(text))
    except ValueError:
        raise BadSpecs(f"{where}: not the JSON neuronexp records") from None
    if not (isinstance(specs, dict) and set(specs) == {"args", "kwargs"}):
        raise BadSpecs(f"{where}: not a recorded call (a mapping of args and kwargs)")
    args, kwargs = specs["args"], specs["kwargs"]
    if not (isinstance(args, list) and isinstance(kwargs, dict)):
        raise BadSpecs(f"{where}: args must be a list and kwargs a mapping")
    for i, value in enumerate(args):
        _check(value, f"{where}: args[{i}]", 0)
    for name, value in kwargs.items():
        if not name.isidentifier():
            raise BadSpecs(f"{where}: kwargs key '{shown(name)}' is not a Python identifier")
        _check(value, f"{where}: kwargs.{name}", 0)
    return args, kwargs


def _check(value: Any, at: str, depth: int) -> None:
    if depth > _MAX_DEPTH:
        raise BadSpecs(f"{at}: nested deeper than {_MAX_DEPTH}")
    if value is None or isinstance(value, (bool, int, str)) or (isinstance(value, float) and math.isfinite(value)):
        return
    if isinstance(value, list):
        for i, item in enumerate(value):
            _check(item, f"{at}[{i}]", depth + 1)
        return
    if isinstance(value, dict) and set(value) == {"_unsupported_"} and isinstance(value["_unsupported_"], str):
        return
    if isinstance(value, dict) and "shape" in value and set(value) <= _TENSOR_KEYS and _tensor_ok(value):
        return
    what = f"a mapping of {shown(', '.join(map(str, value)))}" if isinstance(value, dict) else shown(repr(value))
    raise BadSpecs(
        f"{at} is {what}; a recorded input is a tensor (shape, dtype, fill, integer low, high, value), a literal, "
        "a list or an unsupported object's name, never a target or code: the table was changed"
    )


def _tensor_ok(spec: dict[str, Any]) -> bool:
    shape = spec["shape"]
    if not isinstance(shape, list) or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
        return False
    numbers = [spec[k] for k in ("low", "high", "value") if k in spec]
    return (
        math.prod(shape) <= INT64_MAX
        and spec.get("dtype") in DTYPES
        and spec.get("fill", "randn") in FILLS
        and isinstance(spec.get("causal_mask", False), bool)
        and isinstance(spec.get("distinct", False), bool)
        and all(isinstance(n, int) and not isinstance(n, bool) for n in numbers)  # the recorder's bounds are ints
    )


def _first_param(module: nn.Module) -> str | None:
    try:
        params = list(inspect.signature(module.forward).parameters.values())
    except (TypeError, ValueError):
        return None
    return params[0].name if params else None


def _spec(name: str, spec: Any, notes: list[str]) -> Any:
    if isinstance(spec, str):
        return literal(spec)
    if isinstance(spec, dict) and "_unsupported_" in spec:
        notes.append(f"{name}: a {spec['_unsupported_']} was passed; given as null (neuronexp has no spec for it)")
        return None
    if isinstance(spec, dict) and spec.get("causal_mask"):
        return {"_target_": "neuronexp.modules.factories.causal_mask"}
    if isinstance(spec, dict) and spec.get("distinct") and {"low", "high"} <= set(spec):
        ids = {k: spec[k] for k in ("shape", "low", "high", "dtype") if k in spec}
        return {"_target_": "neuronexp.modules.factories.distinct_ids", **ids}
    if name.endswith("position_embeddings") and isinstance(spec, list) and len(spec) == 2:
        return {"_target_": "neuronexp.modules.factories.rotary"}
    if isinstance(spec, list):
        return [_spec(f"{name}[{i}]", s, notes) for i, s in enumerate(spec)]
    if isinstance(spec, dict):  # a tensor; floating ones follow the cell's dtype
        floating = str(spec.get("dtype", "")).startswith(("float", "bfloat"))
        return {k: v for k, v in spec.items() if k != "causal_mask" and not (floating and k == "dtype")}
    return spec


def input_node(module: nn.Module, args: list[Any], kwargs: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The `input` node that calls `module` as the model called it first (a call read_specs checked)."""
    args, kwargs = list(args), dict(kwargs)
    notes: list[str] = []
    if not args and _first_param(module) in kwargs:  # called by keyword (HF attention: hidden_states=...)
        args = [kwargs.pop(str(_first_param(module)))]
    first = args[0] if args else None
    if not (isinstance(first, dict) and "shape" in first):
        raise ValueError(
            f"{type(module).__name__} was not called with a tensor first; neuronexp needs one as input.shape"
        )
    node: dict[str, Any] = {"shape": first["shape"], "dtype": first["dtype"]}
    node.update({k: first[k] for k in ("fill", "low", "high") if k in first and first.get("fill") != "full"})
    if not str(first["dtype"]).startswith(("float", "bfloat")):
        node["model_dtype"] = "float32"
    node["args"] = [_spec(f"input.args[{i}]", s, notes) for i, s in enumerate(args[1:])]
    node["kwargs"] = {k: _spec(f"input.kwargs.{k}", v, notes) for k, v in kwargs.items()}
    return node, notes
