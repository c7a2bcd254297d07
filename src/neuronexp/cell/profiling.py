"""The profiled pass: torch.profiler with a wait/warmup/active schedule, turned into per-step op rows (a device
runtime's host-typed activity set apart); and a backend's device time from sources other than key_averages()' device
rows put into them (fill_device_times: NaN per op where no source split it), so device sums, shares, op counts and
the hotspot follow the usual rules."""

from __future__ import annotations

import contextlib
import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from torch.profiler import profile, schedule

from neuronexp.analysis.ops import normalize_op
from neuronexp.backends import Backend, DeviceFill
from neuronexp.backends.kineto import row_key, runtime_rows
from neuronexp.cell.optree import STEP_PREFIX, StepTree, is_leaf_row, step_tree
from neuronexp.config import ProfilerConfig, ScheduleConfig
from neuronexp.moduletime.attribution import MODULE_SPAN, ModuleCycle, ModuleSpans, attribute_cycle


@dataclass(kw_only=True)
class CycleProfile:
    """One profiler cycle; all times are per profiled step, in microseconds."""

    cycle: int
    ops: list[dict[str, Any]]
    device_time_us: float
    cpu_time_us: float
    device_ops: float  # executed: leaf host ops on a CPU, device kernels elsewhere
    ops_dispatched: float = float("nan")
    memory_bytes: float | None = None  # bytes the step's ops allocated (net of their own frees); profile_memory


@dataclass
class ProfileResult:
    cycles: list[CycleProfile] = field(default_factory=list)
    trace_paths: list[Path] = field(default_factory=list)
    schedule: ScheduleConfig | None = None
    modules: list[ModuleCycle] = field(default_factory=list)  # profiler.modules=true: each cycle's attribution

    @property
    def active_steps(self) -> int:
        """Steps profiled per cycle: a cycle's totals divided by this are the per-step figures."""
        if self.schedule is None:
            raise AttributeError("ProfileResult.active_steps: no schedule recorded")
        return schedule_counts(self.schedule)[2]


def resolve_schedule(cfg: ProfilerConfig, backend: Backend | type[Backend]) -> ScheduleConfig:
    """The schedule to run: the configured values, the backend's default for each one left null."""
    s, d = cfg.schedule, backend.default_schedule
    return ScheduleConfig(
        *(getattr(d, k) if getattr(s, k) is None else getattr(s, k) for k in ("wait", "warmup", "active", "repeat"))
    )


def schedule_counts(s: ScheduleConfig) -> tuple[int, int, int, int]:
    """(wait, warmup, active, repeat) of a resolved schedule: resolve_schedule leaves no null (every backend's
    default sets all four)."""
    wait, warmup, active, repeat = s.wait, s.warmup, s.active, s.repeat
    if wait is None or warmup is None or active is None or repeat is None:
        raise TypeError(f"{s}: a null count; resolve_schedule(cfg, backend) fills them from the backend's default")
    return wait, warmup, active, repeat


def steps_needed(s: ScheduleConfig) -> int:
    """prof.step() calls a resolved schedule takes."""
    wait, warmup, active, repeat = schedule_counts(s)
    return (wait + warmup + active) * repeat


RUNTIME_ROW = "runtime"  # the device_type of a runtime's or driver's row: set apart from host ops (backends.kineto)


def _op_rows(prof: Any, backend: Backend, cfg: ProfilerConfig, active: int, tree: StepTree) -> list[dict[str, Any]]:
    host_only = backend.device_row_type is None
    apart = runtime_rows(prof.events(), backend.runtime_activities, cfg.record_shapes)
    rows = []
    for evt in prof.key_averages(group_by_input_shape=cfg.record_shapes):
        name = evt.key
        # The step marker, module spans, Python frames (with_stack) and the profiler's frees are not ops.
        if name.startswith((STEP_PREFIX, MODULE_SPAN)) or name in tree.python_names or name == "[memory]":
            continue
        key = row_key(evt, cfg.record_shapes)
        # A runtime call nested in an op is that op's host work: PyTorch took it out of the op's self time.
        self_cpu = (evt.self_cpu_time_total + apart.nested_us.get(key, 0.0)) / active
        cpu_total = evt.cpu_time_total / active
        device_type = RUNTIME_ROW if key in apart.keys else evt.device_type.name
        rows.append(
            {
                "op": normalize_op(name),
                "op_raw": name,
                "device_type": device_type,
                "calls": evt.count / active,
                "self_cpu_us": self_cpu,
                "cpu_total_us": cpu_total,
                # On a host-only backend the "device" is the CPU: say so rather than leave zeros.
                "self_device_us": self_cpu if host_only else evt.self_device_time_total / active,
                "device_total_us": cpu_total if host_only else evt.device_time_total / active,
                "leaf": device_type != RUNTIME_ROW and is_leaf_row(name, device_type, tree),
                "input_shapes": str(evt.input_shapes) if cfg.record_shapes else None,
                "flops": float(evt.flops) / active if cfg.with_flops else None,
                "self_cpu_memory_bytes": evt.self_cpu_memory_usage / active if cfg.profile_memory else None,
                "self_device_memory_bytes": evt.self_device_memory_usage / active if cfg.profile_memory else None,
            }
        )
    return rows


def summarize_cycle(cycle: int, prof: Any, backend: Backend, cfg: ProfilerConfig, active: int) -> CycleProfile:
    tree = step_tree(prof.events(), backend.runtime_activities)
    rows = _op_rows(prof, backend, cfg, active, tree)
    cpu_time = sum(r["self_cpu_us"] for r in rows if r["device_type"] != RUNTIME_ROW)
    if backend.device_row_type is None:
        device_time = cpu_time
        executed = tree.executed / active
        memory_key = "self_cpu_memory_bytes"
    else:
        device_rows = [r for r in rows if r["device_type"] == backend.device_row_type.name]
        device_time = sum(r["self_device_us"] for r in device_rows)
        executed = sum(r["calls"] for r in device_rows)
        memory_key = "self_device_memory_bytes"
    for r in rows:
        r["cycle"] = cycle
        r["device_share"] = r["self_device_us"] / device_time if device_time > 0 else float("nan")
    memory = sum(max(r[memory_key], 0.0) for r in rows if r["device_type"] == "CPU") if cfg.profile_memory else None
    return CycleProfile(
        cycle=cycle,
        ops=rows,
        device_time_us=device_time,
        cpu_time_us=cpu_time,
        device_ops=executed,
        ops_dispatched=tree.dispatched / active,
        memory_bytes=memory,
    )


def profile_callable(
    fn: Callable[[], Any], backend: Backend, cfg: ProfilerConfig, out_dir: Path, spans: Any = None
) -> ProfileResult:
    """Run `fn` under torch.profiler for the configured schedule (nulls: the backend's) and collect each cycle.
    `spans`: an eager nn.Module whose submodules get a range each by path (moduletime.attribution), attributed per
    cycle. The device is synchronized before every `prof.step()`: execution is asynchronous on CUDA and Neuron,
    and a step that closes before its kernels finish would lose their time."""
    s = resolve_schedule(cfg, backend)
    wait, warmup, active, repeat = schedule_counts(s)
    result = ProfileResult(schedule=s)
    extra_handlers = backend.trace_handlers(out_dir)

    def on_trace_ready(prof: Any) -> None:
        cycle = len(result.cycles)
        result.cycles.append(summarize_cycle(cycle, prof, backend, cfg, active))
        if spans is not None:
            result.modules.append(attribute_cycle(prof.events(), backend.device_row_type is None))
        path = out_dir / ("trace.json" if cycle == 0 else f"trace.{cycle}.json")
        if backend.save_trace(prof, path if cfg.export_trace else None):
            result.trace_paths.append(path)
        for handler in extra_handlers:
            handler(prof)

    # Kineto warns that each cycle clears the last one's events: intended, each is read in on_trace_ready.
    warnings.filterwarnings("ignore", message=".*Profiler clears events at the end of each cycle.*")
    with (
        ModuleSpans(spans) if spans is not None else contextlib.nullcontext(),
        profile(
            activities=backend.activities(),
            schedule=schedule(wait=wait, warmup=warmup, active=active, repeat=repeat),
            on_trace_ready=on_trace_ready,
            record_shapes=cfg.record_shapes,
            with_stack=cfg.with_stack,
            profile_memory=cfg.profile_memory,
            with_flops=cfg.with_flops,
            **backend.profiler_kwargs(out_dir),
        ) as prof,
    ):
        for _ in range(steps_needed(s)):
            fn()
            backend.synchronize()
            prof.step()
    return result


def _split(cycle: CycleProfile, per_op: dict[str, float]) -> tuple[float, float]:
    """Each host op row's share of `per_op[op]` (by name as recorded, else as grouped), shared by calls where
    record_shapes split an op over rows; NaN where no source split the time per op. (device us, calls) matched."""
    rows = [r for r in cycle.ops if r["device_type"] == "CPU"]
    key = {id(r): r["op_raw"] if r["op_raw"] in per_op else r["op"] for r in rows}
    calls: dict[str, float] = {}
    for r in rows:
        calls[key[id(r)]] = calls.get(key[id(r)], 0.0) + r["calls"]
    total = executed = 0.0
    for r in rows:
        k = key[id(r)]
        if k not in per_op:
            r["self_device_us"] = r["device_total_us"] = math.nan
            continue
        share = r["calls"] / calls[k] if calls[k] > 0 else 1.0 / sum(key[id(x)] == k for x in rows)
        r["self_device_us"] = r["device_total_us"] = per_op[k] * share
        total, executed = total + r["self_device_us"], executed + r["calls"]
    return total, executed


def fill_device_times(profile: ProfileResult, fill: DeviceFill | None) -> None:
    """Put a backend's device time (backends.DeviceFill) into each cycle: the host op rows' per-op figures (NaN where
    no source split the time per op, never 0), the step's device time and executions, and every row's share of it.
    An op's figure is per profiled step; a capture-wide source gives the same one to every cycle."""
    if fill is None:
        return
    for i, cycle in enumerate(profile.cycles):
        per_op = fill.per_op[min(i, len(fill.per_op) - 1)] if fill.per_op else None
        step = fill.step[min(i, len(fill.step) - 1)] if fill.step else None
        split = _split(cycle, per_op) if per_op is not None else None
        if step is not None:
            counted = split[1] if split is not None and split[1] > 0 else math.nan
            cycle.device_time_us, cycle.device_ops = step[0], step[1] if math.isfinite(step[1]) else counted
        elif split is not None:
            cycle.device_time_us, cycle.device_ops = split
        for r in cycle.ops:
            time = cycle.device_time_us
            r["device_share"] = r["self_device_us"] / time if math.isfinite(time) and time > 0 else math.nan
