"""What torch's profiler events say that key_averages() alone does not: which host-typed events are a device
runtime's or driver's activity (PyTorch types them CPU; their Kineto activity type tells them apart), and the device
time torch's profiler stubs put on a host op itself (a "legacy" kernel named as the op). Plain reading of
FunctionEvents; nothing is imported from torch here."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

RowKey = tuple[str, bool, bool, str]


def row_key(evt: Any, by_shapes: bool) -> RowKey:
    """The key_averages() row an event is averaged into, for the host rows this module reads (torch's own grouping:
    name, legacy or not, user annotation or not, and the input shapes when grouped by them)."""
    shapes = str(evt.input_shapes) if by_shapes else ""
    legacy, annotation = getattr(evt, "is_legacy", False), getattr(evt, "is_user_annotation", False)
    return (str(evt.key), bool(legacy), bool(annotation), shapes)


def is_set_apart(evt: Any, activities: tuple[str, ...]) -> bool:
    """A device runtime's or driver's event (its Kineto activity type among `activities`), however PyTorch typed it."""
    return getattr(evt, "activity_type", None) in activities


def _is_host(evt: Any) -> bool:
    return str(getattr(evt.device_type, "name", evt.device_type)) == "CPU" and not evt.is_async


@dataclass
class RuntimeRows:
    """The key_averages() rows that are runtime or driver activity, and per host row the time of such events nested in
    its calls (us over the cycle): PyTorch took it out of the op's self CPU time; it is the op's own host work."""

    keys: set[RowKey] = field(default_factory=set)
    nested_us: dict[RowKey, float] = field(default_factory=dict)


def runtime_rows(events: Iterable[Any], activities: tuple[str, ...], by_shapes: bool) -> RuntimeRows:
    out = RuntimeRows()
    if not activities:
        return out
    for evt in events:
        if not _is_host(evt):
            continue
        if is_set_apart(evt, activities):
            out.keys.add(row_key(evt, by_shapes))
            continue
        nested = sum(c.cpu_time_total for c in evt.cpu_children or [] if is_set_apart(c, activities))
        if nested:
            key = row_key(evt, by_shapes)
            out.nested_us[key] = out.nested_us.get(key, 0.0) + nested
    return out


def stub_us(evt: Any) -> float:
    """The device time torch's profiler stub measured for this host op itself (privateuse1_elapsed_us: a kernel torch
    names as the op, on a legacy event), 0 where none."""
    if not evt.is_legacy:
        return 0.0
    return float(sum(k.duration for k in evt.kernels if k.name == evt.name))


def _stub_total(evt: Any, activities: tuple[str, ...]) -> float:
    """An op's stub time, or, for an op without one, its children's (a stub's span holds its children's work)."""
    own = stub_us(evt)
    children = [c for c in evt.cpu_children or [] if not is_set_apart(c, activities)]
    return own if own > 0 else sum(_stub_total(c, activities) for c in children)


@dataclass
class HostDeviceTime:
    """Device time on host rows over one cycle: per op its self part (its stub less its children's), the total (the
    outermost stubs), and the executions (ops with stub time and none inside them)."""

    per_op: dict[str, float] = field(default_factory=dict)
    total_us: float = 0.0
    executions: int = 0


def host_device_time(events: Iterable[Any], activities: tuple[str, ...]) -> HostDeviceTime:
    out = HostDeviceTime()
    for evt in events:
        own = stub_us(evt) if _is_host(evt) and not is_set_apart(evt, activities) else 0.0
        if own <= 0:
            continue
        inside = sum(_stub_total(c, activities) for c in evt.cpu_children or [] if not is_set_apart(c, activities))
        out.per_op[evt.name] = out.per_op.get(evt.name, 0.0) + max(own - inside, 0.0)
        out.total_us += max(own - inside, 0.0)
        out.executions += inside <= 0
    return out


def correlated_us(events: Iterable[Any]) -> dict[str, float]:
    """Per host op, the device kernels correlated with its calls (kernels other than a stub's), over the cycle."""
    out: dict[str, float] = {}
    for evt in events:
        if _is_host(evt) and evt.kernels:
            own = sum(k.duration for k in evt.kernels) - stub_us(evt)
            if own > 0:
                out[evt.name] = out.get(evt.name, 0.0) + own
    return out
