"""The profiled pass: torch.profiler with a wait/warmup/active schedule, turned into per-step op rows."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from torch.autograd import DeviceType
from torch.profiler import profile, schedule

from neuronexp.analysis.ops import normalize_op
from neuronexp.backends import Backend
from neuronexp.config import ProfilerConfig
from neuronexp.results.files import atomic_path

# Host-side bookkeeping rows that dispatch nothing to a device (the step marker itself and
# Dynamo's guard check); kept out of "operations dispatched per step".
_STEP_PREFIX = "ProfilerStep"
_NOT_DISPATCH = {"TorchDynamo Cache Lookup"}


@dataclass
class CycleProfile:
    """One profiler cycle; all times are per profiled step, in microseconds."""

    cycle: int
    ops: list[dict[str, Any]]
    device_time_us: float
    cpu_time_us: float
    device_ops: float


@dataclass
class ProfileResult:
    cycles: list[CycleProfile] = field(default_factory=list)
    trace_paths: list[Path] = field(default_factory=list)


def steps_needed(cfg: ProfilerConfig) -> int:
    s = cfg.schedule
    return (s.wait + s.warmup + s.active) * s.repeat


def _op_rows(prof: Any, backend: Backend, cfg: ProfilerConfig) -> list[dict[str, Any]]:
    active = cfg.schedule.active
    host_only = backend.device_row_type is None
    rows = []
    for evt in prof.key_averages(group_by_input_shape=cfg.record_shapes):
        if evt.key.startswith(_STEP_PREFIX):
            continue
        self_cpu, cpu_total = evt.self_cpu_time_total / active, evt.cpu_time_total / active
        rows.append(
            {
                "op": normalize_op(evt.key),
                "op_raw": evt.key,
                "device_type": evt.device_type.name,
                "calls": evt.count / active,
                "self_cpu_us": self_cpu,
                "cpu_total_us": cpu_total,
                # On a host-only backend the "device" is the CPU: say so rather than leave zeros.
                "self_device_us": self_cpu if host_only else evt.self_device_time_total / active,
                "device_total_us": cpu_total if host_only else evt.device_time_total / active,
                "input_shapes": str(evt.input_shapes) if cfg.record_shapes else None,
                "flops": float(evt.flops) / active if cfg.with_flops else None,
            }
        )
    return rows


def _top_level_calls(prof: Any) -> int:
    """Operator calls made directly by the step (what the module dispatched), not their internals."""
    n = 0
    for evt in prof.events():
        parent = evt.cpu_parent
        top = parent is None or parent.name.startswith(_STEP_PREFIX)
        if top and evt.device_type == DeviceType.CPU and not evt.name.startswith(_STEP_PREFIX):
            n += evt.name not in _NOT_DISPATCH
    return n


def summarize_cycle(cycle: int, prof: Any, backend: Backend, cfg: ProfilerConfig) -> CycleProfile:
    rows = _op_rows(prof, backend, cfg)
    cpu_time = sum(r["self_cpu_us"] for r in rows)
    if backend.device_row_type is None:
        device_time = cpu_time
        device_ops = _top_level_calls(prof) / cfg.schedule.active
    else:
        device_name = backend.device_row_type.name
        device_rows = [r for r in rows if r["device_type"] == device_name]
        device_time = sum(r["self_device_us"] for r in device_rows)
        device_ops = sum(r["calls"] for r in device_rows)
    for r in rows:
        r["cycle"] = cycle
        r["device_share"] = r["self_device_us"] / device_time if device_time > 0 else float("nan")
    return CycleProfile(cycle, rows, device_time, cpu_time, device_ops)


def _export_trace(prof: Any, path: Path) -> None:
    with atomic_path(path) as tmp:
        prof.export_chrome_trace(str(tmp))


def profile_callable(fn: Callable[[], Any], backend: Backend, cfg: ProfilerConfig, out_dir: Path) -> ProfileResult:
    """Run `fn` under torch.profiler for the configured schedule and collect each cycle.

    The device is synchronized inside the loop before every `prof.step()`: execution is asynchronous on
    CUDA and Neuron, and a step that closes before its kernels finish would lose their time.
    """
    result = ProfileResult()
    extra_handlers = backend.trace_handlers(out_dir)

    def on_trace_ready(prof: Any) -> None:
        cycle = len(result.cycles)
        result.cycles.append(summarize_cycle(cycle, prof, backend, cfg))
        if cfg.export_trace:
            path = out_dir / ("trace.json" if cycle == 0 else f"trace.{cycle}.json")
            _export_trace(prof, path)
            result.trace_paths.append(path)
        for handler in extra_handlers:
            handler(prof)

    s = cfg.schedule
    # Kineto warns that each cycle clears the last one's events: intended, each is read in on_trace_ready.
    warnings.filterwarnings("ignore", message=".*Profiler clears events at the end of each cycle.*")
    with profile(
        activities=backend.activities(),
        schedule=schedule(wait=s.wait, warmup=s.warmup, active=s.active, repeat=s.repeat),
        on_trace_ready=on_trace_ready,
        record_shapes=cfg.record_shapes,
        with_stack=cfg.with_stack,
        profile_memory=cfg.profile_memory,
        with_flops=cfg.with_flops,
        **backend.profiler_kwargs(out_dir),
    ) as prof:
        for _ in range(steps_needed(cfg)):
            fn()
            backend.synchronize()
            prof.step()
    return result
