"""The modules table of a cell (profiler.modules=true): the profiled cycles' attribution (moduletime.attribution)
as one row per module path, with what one more eager call tells about each module: its FLOPs (FlopCounterMode's
module tracker), its minimum bytes (as cell.work counts a whole cell: inputs, parameters and buffers read once,
outputs written once, per call) and the inputs it was called with, as shapes, dtypes and value specs
(`input_specs`, what neuronexp-extract rebuilds them from)."""

from __future__ import annotations

import json
import math
import statistics
from typing import Any

import torch
from torch import nn
from torch.utils import _pytree as pytree
from torch.utils.flop_counter import FlopCounterMode
from torch.utils.hooks import RemovableHandle

from neuronexp.moduletime.attribution import ModuleCycle, depth_of, parent_of, qualified_type


def _bytes(tensors: list[torch.Tensor]) -> int:
    seen: dict[int, int] = {}
    for t in tensors:
        try:
            key = int(t.untyped_storage().data_ptr())
        except Exception:  # no addressable storage (some device or wrapper tensors)
            key = id(t)
        seen[key] = max(seen.get(key, 0), t.numel() * t.element_size())
    return sum(seen.values())


def _tensors(tree: Any) -> list[torch.Tensor]:
    return [t for t in pytree.tree_leaves(tree) if isinstance(t, torch.Tensor)]


def value_spec(value: Any) -> Any:
    """A value as neuronexp's input grammar writes it (docs/layers.md): tensors by shape, dtype and a fill that
    keeps what matters (token ids' bounds, position ids' arange, ids distinct along a row as a router's top-k
    choice, an all-ones mask, values in [0, 1]); literals as they are; tuples as lists; anything else (a cache
    object) as null, which the extracted config then says."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (tuple, list)):
        return [value_spec(v) for v in value]
    if not isinstance(value, torch.Tensor):
        return {"_unsupported_": type(value).__name__}
    spec: dict[str, Any] = {"shape": list(value.shape), "dtype": str(value.dtype).removeprefix("torch.")}
    flat = value.detach().reshape(-1)
    if value.numel() and not value.is_floating_point() and value.dtype != torch.bool:
        spec.update(_integer_fill(value, flat))
    elif value.numel() and value.dtype == torch.bool and bool(flat.all()):
        spec["fill"] = "ones"
    elif value.numel() and value.is_floating_point() and value.dim() == 4 and bool((value.float() <= 0).all()):
        spec["causal_mask"] = True  # an additive mask: 0 where attended, the dtype's minimum elsewhere
    elif value.numel() and value.is_floating_point() and bool(((flat >= 0) & (flat <= 1)).all()):
        spec["fill"] = "rand"  # probabilities, routing weights: kept in [0, 1]
    return spec


def _integer_fill(value: torch.Tensor, flat: torch.Tensor) -> dict[str, Any]:
    """Position ids' arange, a constant, or the bounds (token ids'), with `distinct` where no row repeats an id."""
    ramp = torch.arange(value.shape[-1], device=value.device).expand(value.shape) if value.dim() else None
    if ramp is not None and torch.equal(value.long(), ramp.long()):
        return {"fill": "arange"}
    if int(flat.min()) == int(flat.max()):
        return {"fill": "full", "value": int(flat[0])}
    bounds: dict[str, Any] = {"low": int(flat.min()), "high": int(flat.max()) + 1}
    if value.dim() and value.shape[-1] > 1 and _distinct_rows(value):
        bounds["distinct"] = True  # a router's top-k choice: no row names an expert twice
    return bounds


def _distinct_rows(value: torch.Tensor) -> bool:
    ordered = value.detach().reshape(-1, value.shape[-1]).sort(dim=-1).values
    return bool((ordered[:, 1:] != ordered[:, :-1]).all())


def _shape_text(spec: Any) -> str:
    if _is_tensor(spec):
        return "[" + ",".join(map(str, spec["shape"])) + "]"
    if isinstance(spec, list):
        return "(" + ",".join(_shape_text(s) for s in spec) + ")"
    return "-" if spec is None or isinstance(spec, dict) else repr(spec)


class _Inspect:
    """Hooks for one eager call: each module's first inputs, and its bytes per call."""

    def __init__(self, module: nn.Module) -> None:
        self.module = module
        self.handles: list[RemovableHandle] = []
        self.specs: dict[str, dict[str, Any]] = {}
        self.bytes: dict[str, int] = {}
        self.weights = {path: _bytes([*sub.parameters(), *sub.buffers()]) for path, sub in module.named_modules()}

    def __enter__(self) -> _Inspect:
        for path, sub in self.module.named_modules():
            self.handles.append(
                sub.register_forward_pre_hook(lambda m, a, k, p=path: self._pre(p, a, k), with_kwargs=True)
            )
            self.handles.append(
                sub.register_forward_hook(lambda m, a, k, out, p=path: self._post(p, a, k, out), with_kwargs=True)
            )
        return self

    def _pre(self, path: str, args: Any, kwargs: Any) -> None:
        if path not in self.specs:
            self.specs[path] = {
                "args": [value_spec(a) for a in args],
                "kwargs": {k: value_spec(v) for k, v in kwargs.items()},
            }

    def _post(self, path: str, args: Any, kwargs: Any, out: Any) -> None:
        inputs = _tensors((args, kwargs))
        fresh = {id(t) for t in inputs}
        written = [t for t in _tensors(out) if id(t) not in fresh]
        self.bytes[path] = self.bytes.get(path, 0) + _bytes(inputs) + self.weights[path] + _bytes(written)

    def __exit__(self, *exc: Any) -> None:
        for h in self.handles:
            h.remove()


def inspect_modules(module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """One eager call: path → flops, bytes_min, input_specs (JSON), input_shapes, input_dtypes."""
    root = type(module).__name__
    try:
        with FlopCounterMode(display=False) as counter, _Inspect(module) as seen:
            module(*args, **kwargs)
        flops: dict[str, float] | None = {
            ("" if k == root else k[len(root) + 1 :]): float(sum(v.values()))
            for k, v in counter.get_flop_counts().items()
            if k == root or k.startswith(root + ".")
        }
    except Exception:  # an operator the counting mode cannot run through: the inputs and bytes still, no FLOPs
        with _Inspect(module) as seen:
            module(*args, **kwargs)
        flops = None
    out = {}
    for path in dict(module.named_modules()):
        spec = seen.specs.get(path)
        flop = flops.get(path, 0.0) if spec and flops is not None else None
        described = _described(spec) if spec else dict.fromkeys(["input_specs", "input_shapes", "input_dtypes"])
        out[path] = {"flops": flop, "bytes_min": seen.bytes.get(path), **described}
    return out


def _is_tensor(spec: Any) -> bool:
    return isinstance(spec, dict) and "shape" in spec


def _described(spec: dict[str, Any]) -> dict[str, Any]:
    """A module's recorded call as input_specs (JSON), input_shapes and input_dtypes."""
    tensors = [s for s in pytree.tree_leaves(spec, is_leaf=_is_tensor) if _is_tensor(s)]
    kwargs = [f"{k}={_shape_text(v)}" for k, v in spec["kwargs"].items() if isinstance(v, (dict, list))]
    return {
        "input_specs": json.dumps(spec),
        "input_shapes": ", ".join([_shape_text(a) for a in spec["args"]] + kwargs),
        "input_dtypes": ",".join(dict.fromkeys(s["dtype"] for s in tensors)),
    }


def median_cycle(step_us: list[float]) -> int:
    """The cycle whose step time is the median (the lower middle of an even count): its attribution is used whole,
    so the modules add up to that step. A median per module over cycles would not: on a busy host each module's
    median can come from another cycle."""
    order = sorted(range(len(step_us)), key=lambda i: step_us[i])
    return order[(len(order) - 1) // 2]


def _cycle_totals(cycle: ModuleCycle, parents: dict[str, str | None]) -> dict[str, float]:
    """Every path's total device time in one cycle: its self time plus its children's totals."""
    totals = {p: float(cycle.self_device_us[p]) for p in parents}
    for p in sorted(parents, key=depth_of, reverse=True):  # deepest first: a child's total is final before its parent's
        parent = parents[p]
        if parent is not None and parent in totals:
            totals[parent] += totals[p]
    return totals


def module_rows(
    module: nn.Module,
    cycles: list[ModuleCycle],
    active: int,
    step_us: list[float],
    inspected: dict[str, dict[str, Any]],
    labels: dict[str, Any],
) -> list[dict[str, Any]]:
    """One row per module path, per profiled step, from the median cycle (`step_us`: each cycle's device time per
    step); totals summed up the tree from the self times, so a parent's total is exactly its self plus its
    children's, and the root's the step's (less ops run outside the model's forward). Each total over every cycle,
    its lowest, median and highest (`total_device_us_low`, `_median`, `_high`), is what the hotspots rank by and how
    far another cycle would move it (moduletime.views)."""
    paths = dict(module.named_modules())
    parents = {p: parent_of(p) for p in paths}
    pick = median_cycle(step_us) if cycles else None
    step = step_us[pick] if pick is not None else float("nan")
    per_cycle = [_cycle_totals(c, parents) for c in cycles]

    def per_step(field: str, path: str) -> float:
        return getattr(cycles[pick], field)[path] / active if pick is not None else float("nan")

    def band(path: str, pick_: Any) -> float:
        values = [t[path] for t in per_cycle]
        known = values and not any(math.isnan(v) for v in values)  # min/max/median of a NaN is whatever came first
        return pick_(values) / active if known else float("nan")

    rows = {
        p: {
            **labels,
            "module_path": p,
            "module_type": qualified_type(m),
            "depth": depth_of(p),
            "parent_path": parents[p],
            "calls": per_step("calls", p),
            "self_cpu_us": per_step("self_cpu_us", p),
            "self_device_us": per_step("self_device_us", p),
            "cycles": len(cycles),
            "total_device_us_low": band(p, min),
            "total_device_us_median": band(p, statistics.median),
            "total_device_us_high": band(p, max),
            **inspected.get(p, {}),
        }
        for p, m in paths.items()
    }
    for r in rows.values():
        r["total_cpu_us"], r["total_device_us"] = r["self_cpu_us"], r["self_device_us"]
    for p in sorted(rows, key=depth_of, reverse=True):  # deepest first: a child's total is final before its parent's
        parent = rows[p]["parent_path"]
        if parent is not None and parent in rows:
            rows[parent]["total_cpu_us"] += rows[p]["total_cpu_us"]
            rows[parent]["total_device_us"] += rows[p]["total_device_us"]
    for r in rows.values():
        r["share"] = r["total_device_us"] / step if step > 0 else float("nan")
    return list(rows.values())
