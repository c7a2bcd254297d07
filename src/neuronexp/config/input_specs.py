"""The input specs of `input.args` / `input.kwargs` (literals, tuples, tensors, factories, `_value_`: docs/layers.md),
checked before any cell runs and without a module instance: keys, fills, dtypes, bounds, factories that import,
and, for a module given by its class, keyword names and positional count against `forward`'s signature."""

from __future__ import annotations

import inspect
import math
from collections.abc import Mapping
from typing import Any

from neuronexp.config.errors import ConfigError
from neuronexp.config.schema import DType, InputConfig
from neuronexp.config.targets import locate

TENSOR_KEYS = ("shape", "dtype", "fill", "low", "high", "value", "requires_grad")
FILLS = ("randn", "rand", "zeros", "ones", "full", "arange", "randint", "bernoulli")
_INT_FILLS = ("arange", "randint")
DTYPES = tuple(d.value for d in DType)
_MIGRATE_EXTRA = "renamed to input.args (the same {shape, dtype, high} entries, after the first input); move them there"


def check_inputs(cfg: InputConfig, module: Any) -> list[str]:
    """Check every input spec (ConfigError: the first bad one, naming its key, `input.kwargs.attention_mask.fill`);
    returns warnings (keyword inputs `forward` may silently ignore)."""
    if cfg.extra is not None:
        raise ConfigError("input.extra", "[...]", _MIGRATE_EXTRA)
    check_first(cfg)
    first = compute_dtype(cfg)
    for i, spec in enumerate(cfg.args):
        check_value(f"input.args[{i}]", spec, first)
    for name, spec in cfg.kwargs.items():
        if not str(name).isidentifier():
            raise ConfigError(f"input.kwargs.{name}", spec, "a keyword input needs a Python identifier as its name")
        check_value(f"input.kwargs.{name}", spec, first)
    target = module.get("_target_") if isinstance(module, Mapping) else None
    cls = locate(str(target)) if target else None
    return forward_check(cls, list(cfg.args), dict(cfg.kwargs)) if isinstance(cls, type) else []


def _value(dtype: Any) -> str | None:
    return None if dtype is None else str(getattr(dtype, "value", dtype))


def floating(dtype: str) -> bool:
    return dtype.startswith(("float", "bfloat"))


def compute_dtype(cfg: InputConfig) -> str:
    """The dtype the cell computes in: `input.model_dtype`, else the first input's when floating, else float32
    (token ids: the module keeps its own dtype, float32 for a model built from a config). Tensors of args/kwargs
    without a dtype of their own, the roofs and the factories' dtype follow it."""
    first = str(_value(cfg.dtype))
    return _value(cfg.model_dtype) or (first if floating(first) else "float32")


def first_spec(cfg: InputConfig) -> dict[str, Any]:
    """The first input as a tensor spec: `input.shape`, `dtype`, `fill`, `low`, `high`."""
    spec: dict[str, Any] = {"shape": list(cfg.shape), "dtype": _value(cfg.dtype), "low": int(cfg.low)}
    if cfg.fill is not None:
        spec["fill"] = cfg.fill
    if cfg.high is not None:
        spec["high"] = cfg.high
    return spec


def check_first(cfg: InputConfig) -> None:
    """The first input: the tensor checks, and token ids need their upper bound (the vocabulary size)."""
    model = _value(cfg.model_dtype)
    if model is not None and not floating(model):
        raise ConfigError("input.model_dtype", model, "a floating dtype (float32, bfloat16, float16, float64), or null")
    spec = first_spec(cfg)
    dtype = str(spec["dtype"])
    if not floating(dtype) and dtype != "bool" and (cfg.fill or "randint") == "randint" and cfg.high is None:
        raise ConfigError(
            "input.high",
            None,
            f"a {dtype} first input (token ids) needs its upper bound: "
            "input.high=<vocabulary size> (randint draws from [input.low, input.high))",
        )
    check_tensor("input", spec, dtype)


def tensor_dtype(spec: Mapping, first_dtype: str) -> str:
    """A tensor spec's dtype: its own, else int64 for arange/randint, bool for bernoulli, else the first input's."""
    if spec.get("dtype") is not None:
        return str(_value(spec["dtype"]))
    fill = spec.get("fill")
    return "int64" if fill in _INT_FILLS else "bool" if fill == "bernoulli" else first_dtype


def default_fill(dtype: str) -> str:
    """randn for floating dtypes, bernoulli for bool, randint (from [low, high), default [0, 2)) for integers."""
    return "randn" if floating(dtype) else "bernoulli" if dtype == "bool" else "randint"


def check_value(path: str, spec: Any, first_dtype: str) -> None:
    if spec is None or isinstance(spec, (bool, int, float, str)):
        return
    if isinstance(spec, (list, tuple)):
        for j, item in enumerate(spec):
            check_value(f"{path}[{j}]", item, first_dtype)
        return
    if not isinstance(spec, Mapping):
        raise ConfigError(path, spec, "a literal, a list, or a mapping (tensor, factory, _value_)")
    if "_value_" in spec:
        if len(spec) > 1:
            raise ConfigError(path, sorted(spec), "_value_ stands alone: {_value_: X} passes X verbatim")
        return
    if "_target_" in spec:
        if not callable(locate(str(spec["_target_"]), key=f"{path}._target_")):
            raise ConfigError(
                f"{path}._target_", spec["_target_"], "is not callable; name a function(module, input, **params)"
            )
        return
    if "shape" in spec:
        check_tensor(path, spec, first_dtype)
        return
    raise ConfigError(
        path, sorted(spec), "a mapping needs shape (a tensor), _target_ (a factory) or _value_ (a literal dict)"
    )


# torch counts elements in int64: a shape with more cannot be built, and its figures could not be recorded.
INT64_MAX = 2**63 - 1


def check_numel(key: str, shape: Any) -> None:
    if math.prod(shape) > INT64_MAX:
        raise ConfigError(key, list(shape), f"has {math.prod(shape):.3g} elements; a tensor holds at most 2^63-1")


def check_tensor(path: str, spec: Mapping, first_dtype: str) -> None:
    for key in spec:
        if key not in TENSOR_KEYS:
            raise ConfigError(f"{path}.{key}", spec[key], f"unknown tensor key; allowed: {', '.join(TENSOR_KEYS)}")
    shape = spec["shape"]
    if not isinstance(shape, (list, tuple)) or any(
        isinstance(d, bool) or not isinstance(d, int) or d < 0 for d in shape
    ):
        raise ConfigError(f"{path}.shape", shape, "must be a list of non-negative integers, e.g. [1,128,64]")
    check_numel(f"{path}.shape", shape)
    if spec.get("dtype") is not None and _value(spec["dtype"]) not in DTYPES:
        raise ConfigError(f"{path}.dtype", spec["dtype"], f"one of {', '.join(DTYPES)}")
    dtype = tensor_dtype(spec, first_dtype)
    _check_fill(path, spec, dtype)
    grad = spec.get("requires_grad", False)
    if not isinstance(grad, bool):
        raise ConfigError(f"{path}.requires_grad", grad, "true or false")
    if grad and not floating(dtype):
        raise ConfigError(
            f"{path}.requires_grad", grad, f"only floating-point tensors can require grad (this one is {dtype})"
        )


def _check_fill(path: str, spec: Mapping, dtype: str) -> None:
    """The fill and its parameters (low, high, value) of a tensor spec of `dtype`."""
    fill = spec.get("fill") or default_fill(dtype)
    if fill not in FILLS:
        raise ConfigError(f"{path}.fill", fill, f"one of {', '.join(FILLS)}")
    if fill in ("randn", "rand") and not floating(dtype):
        raise ConfigError(
            f"{path}.fill",
            fill,
            f"draws floats; a {dtype} tensor takes randint, bernoulli, arange, zeros, ones or full",
        )
    for key in ("low", "high"):
        if key in spec and (isinstance(spec[key], bool) or not isinstance(spec[key], int)):
            raise ConfigError(f"{path}.{key}", spec[key], "must be an integer (randint draws from [low, high))")
    if int(spec.get("low", 0)) >= int(spec.get("high", 2)):
        raise ConfigError(f"{path}.high", spec.get("high", 2), f"must be greater than low={spec.get('low', 0)}")
    if "value" in spec and (isinstance(spec["value"], bool) or not isinstance(spec["value"], (int, float))):
        raise ConfigError(f"{path}.value", spec["value"], "must be a number (the value of fill: full)")


_VARIADIC = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)


def forward_check(cls: type[Any], args: list[Any], kwargs: dict[str, Any]) -> list[str]:
    """Inputs against `cls.forward`: too many positional inputs, unknown or doubled keywords, missing required
    ones are errors; a keyword only `**kwargs` takes is a warning (Hugging Face layers ignore unknown ones)."""
    P = inspect.Parameter
    try:
        params = list(inspect.signature(cls.forward).parameters.values())
    except (TypeError, ValueError, AttributeError):  # a C extension or an unusual callable: nothing to check
        return []
    if params and params[0].name == "self":
        params = params[1:]
    where = f"{cls.__name__}.forward({', '.join(str(p) for p in params)})"
    positional = [p for p in params if p.kind in (P.POSITIONAL_ONLY, P.POSITIONAL_OR_KEYWORD)]
    given = 1 + len(args)
    if given > len(positional) and not any(p.kind == P.VAR_POSITIONAL for p in params):
        raise ConfigError(
            "input.args",
            args,
            f"{where} takes {len(positional)} positional input(s), "
            "the first from input.shape; give the rest as input.kwargs",
        )
    warnings = [_keyword_input(name, spec, params, given, where) for name, spec in kwargs.items()]
    filled = {p.name for p in positional[:given]} | set(kwargs)
    for p in params:
        if p.default is P.empty and p.name not in filled and p.kind not in _VARIADIC:
            where_to = "list it in input.args" if p.kind != P.KEYWORD_ONLY else f"add +input.kwargs.{p.name}=..."
            if p.kind == P.POSITIONAL_OR_KEYWORD:
                where_to += f" or add +input.kwargs.{p.name}=..."
            raise ConfigError(
                f"input.kwargs.{p.name}" if p.kind == P.KEYWORD_ONLY else "input.args",
                "(missing)",
                f"{where} needs {p.name}: {where_to}",
            )
    return [w for w in warnings if w]


def _keyword_input(name: str, spec: Any, params: list[inspect.Parameter], given: int, where: str) -> str | None:
    """One keyword input against forward's parameters (`given`: how many are given positionally): an error, or
    the warning for a name only `**kwargs` takes."""
    P = inspect.Parameter
    named = {p.name: i for i, p in enumerate(params) if p.kind not in _VARIADIC}
    i = named.get(name)
    if i is not None and i < given and params[i].kind != P.KEYWORD_ONLY:
        raise ConfigError(f"input.kwargs.{name}", spec, f"already given positionally to {where}")
    if i is not None and params[i].kind == P.POSITIONAL_ONLY:
        raise ConfigError(f"input.kwargs.{name}", spec, f"is positional-only in {where}; list it in input.args")
    if i is not None:
        return None
    if not any(p.kind == P.VAR_KEYWORD for p in params):
        raise ConfigError(f"input.kwargs.{name}", spec, f"not a parameter of {where}")
    return (
        f"input.kwargs.{name} is not a named parameter of {where.split('(')[0]}; its **kwargs "
        "takes it and may ignore it (misspelled?)"
    )
