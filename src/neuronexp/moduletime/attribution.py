"""Time per module (profiler.modules=true): the profiled step attributed to every submodule by its path.

torch.profiler names eager modules only by class and `with_modules` is TorchScript-only, so forward hooks open a
`record_function` span `module:<path>` around every submodule (the root is `module:(root)`); each op call's self
time goes to the nearest span around it, so the times are the op table's (docs/columns.md, "modules")."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from neuronexp.analysis.ops import normalize_op

MODULE_SPAN = "module:"
ROOT_SPAN = "(root)"


def span_path(name: str) -> str:
    rest = name[len(MODULE_SPAN) :]
    return "" if rest == ROOT_SPAN else rest


def parent_of(path: str) -> str | None:
    """`model.layers.0` → `model.layers`; a top-level child's parent is the root (""); the root has none."""
    if path == "":
        return None
    return path.rsplit(".", 1)[0] if "." in path else ""


def depth_of(path: str) -> int:
    return 0 if path == "" else path.count(".") + 1


def qualified_type(module: nn.Module) -> str:
    cls = type(module)
    return f"{cls.__module__}.{cls.__qualname__}"


class ModuleSpans:
    """While active: every submodule's forward runs inside a profiler range named by its path.

    The post hook is registered with always_call, so a forward that raises still closes its range.
    """

    def __init__(self, module: nn.Module) -> None:
        self.module = module
        self.handles: list[Any] = []
        self.open: list[Any] = []

    def __enter__(self) -> ModuleSpans:
        for path, sub in self.module.named_modules():
            name = MODULE_SPAN + (path or ROOT_SPAN)
            self.handles.append(sub.register_forward_pre_hook(lambda *_, n=name: self._enter(n)))
            self.handles.append(sub.register_forward_hook(lambda *_: self._exit(), always_call=True))
        return self

    def _enter(self, name: str) -> None:
        span = torch.autograd.profiler.record_function(name)
        span.__enter__()
        self.open.append(span)

    def _exit(self) -> None:
        if self.open:
            self.open.pop().__exit__(None, None, None)

    def __exit__(self, *exc: Any) -> None:
        while self.open:
            self._exit()
        for handle in self.handles:
            handle.remove()
        self.handles.clear()


@dataclass
class ModuleCycle:
    """One cycle's attribution, summed over its active steps: path → span count, self times, op calls."""

    calls: Counter = field(default_factory=Counter)
    self_cpu_us: Counter = field(default_factory=Counter)
    self_device_us: Counter = field(default_factory=Counter)
    op_calls: dict[str, Counter] = field(default_factory=dict)  # path → normalized op → calls (device fill)


def _counted(evt: Any) -> bool:
    """The events the op table counts (cell.profiling._op_rows): not Python frames, frees or spans. (Nor the step's
    own range, which is never inside a module's span: attribute_cycle finds it no owner.)"""
    name = evt.name
    return not (getattr(evt, "is_python_function", False) or name == "[memory]" or name.startswith(MODULE_SPAN))


def _owner(evt: Any) -> str | None:
    parent = evt.cpu_parent
    while parent is not None:
        if parent.name.startswith(MODULE_SPAN):
            return span_path(parent.name)
        parent = parent.cpu_parent
    return None


def attribute_cycle(events: Any, host_only: bool) -> ModuleCycle:
    """Each counted CPU op call's self time to its nearest module span (`events`: one cycle's prof.events())."""
    out = ModuleCycle()
    for evt in events:
        if str(getattr(evt.device_type, "name", evt.device_type)) != "CPU":
            continue
        if evt.name.startswith(MODULE_SPAN):
            out.calls[span_path(evt.name)] += 1
            continue
        if not _counted(evt):
            continue
        path = _owner(evt)
        if path is None:  # outside the model's forward (the step's synchronize): in the step, in no module
            continue
        out.self_cpu_us[path] += evt.self_cpu_time_total
        out.self_device_us[path] += evt.self_cpu_time_total if host_only else evt.self_device_time_total
        out.op_calls.setdefault(path, Counter())[normalize_op(evt.name)] += 1
    return out


def fill_module_device_times(cycles: list[ModuleCycle], per_op_us: dict[str, float], active: int) -> None:
    """Device time per op from another source (Neuron Explorer; cell.profiling.fill_device_times, the same for ops):
    each module gets an op's per-step device time in proportion to the calls of that op it made. A module none of whose
    ops the source names gets NaN, not 0 (its share of the step is unknown: the runtime trace alone names no op)."""
    for cycle in cycles:
        if sum(cycle.self_device_us.values()) > 0:
            continue
        totals: Counter = Counter()
        for ops in cycle.op_calls.values():
            totals.update(ops)
        for path, ops in cycle.op_calls.items():
            named = [(op, n) for op, n in ops.items() if op in per_op_us and totals[op]]
            share = sum(per_op_us[op] * active * n / totals[op] for op, n in named) if named else math.nan
            cycle.self_device_us[path] = share  # type: ignore[assignment]  # µs; Counter's stub holds only ints
