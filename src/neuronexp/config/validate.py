"""The checks a schema type cannot express: ranges, shapes, device lists, the module target and its keys against
the signature of what its `_target_` calls (as its inputs are against `forward`: `+module.expansoin=4` is one line,
not a TypeError in the cell; nested `_target_` nodes, a Hugging Face config, alike). They run on every cell before
any work starts, so a mistake is one line naming the key, never a half-finished run.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import typing
from collections.abc import Mapping
from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf

from neuronexp.config.errors import ConfigError
from neuronexp.config.input_specs import check_inputs, check_numel
from neuronexp.config.schema import RunConfig
from neuronexp.config.targets import SPECIAL_KEYS, hidden_init, locate
from neuronexp.config.units import validate_units


def _positive(key: str, value: int, minimum: int = 1) -> None:
    if value < minimum:
        raise ConfigError(key, value, f"must be an integer >= {minimum}")


def _optional_number(key: str, value: float | None, positive: bool) -> None:
    if value is not None and (not math.isfinite(value) or value < 0 or (positive and value == 0)):
        raise ConfigError(key, value, f"must be null or a finite number {'> 0' if positive else '>= 0'}")


def check_shape(key: str, shape: list[int]) -> None:
    """A non-empty list of positive dimensions whose element count fits in int64."""
    if len(shape) == 0 or any(d < 1 for d in shape):
        raise ConfigError(key, list(shape), "must be a non-empty list of positive integers, e.g. [1,1024,4096]")
    check_numel(key, shape)


def _node_class(hint: Any) -> Any:
    """The dataclass a schema field holds (itself, or the element of a list of them), else None."""
    if typing.get_origin(hint) is list:
        hint = typing.get_args(hint)[0]
    return hint if dataclasses.is_dataclass(hint) else None


def offered_keys(cls: Any) -> list[str]:
    """The keys a schema node offers: its fields, less those retired (kept only to say what replaced them)."""
    retired = {f.name for f in dataclasses.fields(cls) if f.metadata.get("retired")}
    return [k for k in typing.get_type_hints(cls) if k not in retired]


def schema_keys(path: str) -> list[str] | None:
    """The keys neuronexp's schema allows in the node at `path` ("" is the root; "timing", "profiler.schedule"),
    or None where the node is free-form: the module's options, and nodes outside the schema."""
    cls: Any = RunConfig
    for part in [p for p in path.split(".") if p and not p.isdigit()]:
        cls = _node_class(typing.get_type_hints(cls).get(part))
        if cls is None:
            return None
    return offered_keys(cls)


def check_known_keys(cfg: DictConfig, cls: Any = RunConfig, path: str = "") -> None:
    """Every key inside neuronexp's own nodes is one of its schema's: `+timing.itres=5` would otherwise be
    ignored without a word (ConfigError names it and the keys allowed there). The root may also hold the user's own
    nodes; `module` holds the layer's options."""
    hints = typing.get_type_hints(cls)
    for key in map(str, cfg.keys()):
        full = f"{path}.{key}" if path else key
        if key not in hints:
            if path:
                node = cfg._get_node(key)
                assert node is not None  # the key was just listed by cfg.keys()
                value = (
                    ("[...]" if isinstance(node, ListConfig) else "{...}")
                    if OmegaConf.is_config(node)
                    else node._value()
                )
                raise ConfigError(
                    full, value, f"not a key of neuronexp's schema; {path} takes {', '.join(offered_keys(cls))}"
                )
            continue
        child = _node_class(hints[key])
        if child is None or OmegaConf.is_interpolation(cfg, key):
            continue
        value = cfg[key]
        items = enumerate(value) if isinstance(value, ListConfig) else [(None, value)]
        for i, item in items:
            if isinstance(item, DictConfig):
                check_known_keys(item, child, full if i is None else f"{full}[{i}]")


def validate(cfg: RunConfig) -> list[str]:
    """Check what the schema types cannot: ranges, shapes, unit lists, the module target, the inputs and the
    baseline. Returns warnings for the cell's row (a keyword input `forward` may ignore)."""
    validate_values(cfg)
    return validate_code(cfg)


def validate_values(cfg: RunConfig) -> None:
    """The checks of plain values (shapes, numbers, units, names): they import nothing, so a mistake here is
    reported before torch is imported."""
    check_shape("input.shape", cfg.input.shape)
    _check_dims(cfg)
    check_baseline(cfg.baseline)
    _check_passes(cfg)
    _check_launcher(cfg)
    _check_judgements(cfg)
    if cfg.compile.mode is not None and cfg.compile.mode not in COMPILE_MODES:
        raise ConfigError("compile.mode", cfg.compile.mode, f"one of {', '.join(COMPILE_MODES)}, or null")


def _check_dims(cfg: RunConfig) -> None:
    for name in ("batch", "seq", "hidden", "heads", "kv_heads", "head_dim", "intermediate"):
        _positive(f"dims.{name}", getattr(cfg.dims, name))
    if cfg.dims.heads % cfg.dims.kv_heads:
        raise ConfigError(
            "dims.kv_heads",
            cfg.dims.kv_heads,
            f"must divide dims.heads={cfg.dims.heads} (query heads share key/value heads)",
        )


def _check_passes(cfg: RunConfig) -> None:
    """The profiled and timed passes' counts and times, and the cell's threads."""
    s = cfg.profiler.schedule
    for key, minimum in (("wait", 0), ("warmup", 0), ("active", 1), ("repeat", 1)):
        if getattr(s, key) is not None:  # null: the backend's default
            _positive(f"profiler.schedule.{key}", getattr(s, key), minimum)
    _positive("timing.warmup", cfg.timing.warmup, 0)
    _positive("timing.iters", cfg.timing.iters)
    _positive("timing.min_iters", cfg.timing.min_iters)
    if cfg.timing.max_seconds <= 0:
        raise ConfigError("timing.max_seconds", cfg.timing.max_seconds, "must be > 0")
    if not cfg.timing.min_seconds >= 0:
        raise ConfigError("timing.min_seconds", cfg.timing.min_seconds, "must be >= 0 seconds (0: iters alone decide)")
    _positive("timing.rounds", cfg.timing.rounds)
    if cfg.timing.round_gap_s < 0:
        raise ConfigError("timing.round_gap_s", cfg.timing.round_gap_s, "must be >= 0 seconds")
    _check_precision(cfg.timing.precision, cfg.timing.min_rounds)
    if cfg.threads is not None:
        _positive("threads", cfg.threads)


def _check_precision(precision: float | None, min_rounds: int) -> None:
    """timing.precision, a fraction (0.02, not 2), and the rounds before it may stop."""
    if precision is not None and not 0 < precision < 1:
        why = "must be a fraction between 0 and 1 (0.02: each speedup within ±2%), or null for a fixed count"
        raise ConfigError("timing.precision", precision, why)
    _positive("timing.min_rounds", min_rounds, 2)


def _check_launcher(cfg: RunConfig) -> None:
    _positive("launcher.devices", cfg.launcher.devices)
    if cfg.launcher.per_device is not None:
        _positive("launcher.per_device", cfg.launcher.per_device)
    validate_units("launcher.pool", cfg.launcher.pool)
    if cfg.launcher.isolate is False:
        raise ConfigError(
            "launcher.isolate",
            False,
            "warm workers are gone: every cell of a sweep now runs in a process of "
            "its own forked from a warm template, in milliseconds (docs/slurm.md); drop the key",
        )
    if cfg.launcher.cell_timeout_s is not None and not cfg.launcher.cell_timeout_s > 0:
        raise ConfigError(
            "launcher.cell_timeout_s", cfg.launcher.cell_timeout_s, "must be > 0 seconds, or null for no limit"
        )


def _check_judgements(cfg: RunConfig) -> None:
    """The thresholds, roofs and tolerances a cell is judged by."""
    for key in ("round_spread", "p90_p10", "other_cpu", "steal"):
        _optional_number(f"noise.{key}", getattr(cfg.noise, key), positive=True)
    _optional_number("roofline.peak_bw_gbs", cfg.roofline.peak_bw_gbs, positive=True)
    _optional_number("roofline.peak_tflops", cfg.roofline.peak_tflops, positive=True)
    _optional_number("correctness.rtol", cfg.correctness.rtol, positive=False)
    _optional_number("correctness.atol", cfg.correctness.atol, positive=False)


def validate_code(cfg: RunConfig) -> list[str]:
    """The checks that import code: Dynamo's backends, the module's class, its constructor's arguments and its
    inputs' factories (torch, and the user's module). Returns the inputs' warnings (see validate)."""
    validate_compile(cfg.compile.backend)
    validate_module_target(cfg.module)
    check_constructor(cfg.module)
    return check_inputs(cfg.input, cfg.module)


def check_baseline(baseline: Any) -> None:
    """null, a module name, or key: value pairs whose values are scalars (or a list, for a shape)."""
    if baseline is None or (isinstance(baseline, str) and baseline.strip()):
        return
    if not isinstance(baseline, dict) or not baseline:
        raise ConfigError(
            "baseline",
            baseline,
            "null, a module name, or key: value pairs such as {module: rmsnorm_naive} or {compile.enabled: false}",
        )
    for key, value in baseline.items():
        scalar = value is None or isinstance(value, (bool, int, float, str))
        if not scalar and not (isinstance(value, list) and all(isinstance(v, (int, float, str)) for v in value)):
            raise ConfigError(
                f"baseline.{key}",
                value,
                "must be a single value (or a list, for a shape) that picks the reference cell",
            )


# torch.compile's modes as torch 2.13 lists them (torch._inductor.list_mode_options(), which also shows what each
# sets; tests/config/test_static_names.py keeps the two equal). "lite" (opt-in optimizations only) is new in the
# 2.1x releases: an older torch refuses it in the cell, which then becomes an error row saying so.
COMPILE_MODES = ("default", "lite", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


def validate_compile(backend: str | None) -> None:
    """A misspelt backend fails here, not in every cell after its module is built (the mode: validate_values)."""
    if backend is None:
        return
    import torch._dynamo  # only when a backend is named: importing Dynamo costs about a second

    # "neuron" is registered when torch-neuronx loads, which only a Neuron cell's own process does.
    if backend not in {*torch._dynamo.list_backends(exclude_tags=()), "neuron"}:  # debug backends allowed too
        shown = sorted({*torch._dynamo.list_backends(), "neuron"})
        raise ConfigError(
            "compile.backend",
            backend,
            f"one of {', '.join(shown)} (torch._dynamo.list_backends()), or null for the backend's default",
        )


def validate_module_target(module: Any) -> None:
    """The module node must name an importable `_target_`; a class target must be an nn.Module."""
    import torch.nn as nn

    target = module.get("_target_") if isinstance(module, dict) else None
    if not target:
        raise ConfigError(
            "module._target_", None, "set module=<option> or give a node with a _target_ that builds an nn.Module"
        )
    obj = locate(str(target))
    if isinstance(obj, type) and not issubclass(obj, nn.Module):
        raise ConfigError("module._target_", target, f"{obj.__module__}.{obj.__qualname__} is not a torch.nn.Module")
    if not callable(obj):
        raise ConfigError("module._target_", target, "is not callable; name an nn.Module class or a factory function")


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
    # __init__ in one taking **kwargs (attn_implementation), which the wrapped signature does not show. A layer class
    # whose __init__ a decorator hides behind (*args, **kwargs) without saying so (transformers 5.25's layers) is
    # checked against the __init__ in the decorator's closure: a layer takes what that __init__ takes.
    try:
        sig = inspect.signature(target, follow_wrapped=False)
    except (TypeError, ValueError):  # a C extension, an unusual callable: nothing to check
        return None
    if isinstance(target, type) and all(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in sig.parameters.values()):
        from torch import nn

        inner = hidden_init(target) if issubclass(target, nn.Module) else None
        if inner is not None:
            return sig.replace(parameters=list(inspect.signature(inner).parameters.values())[1:])  # without self
    return sig


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
