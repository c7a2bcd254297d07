"""The capture window: how many profiler steps the Neuron runtime's capture really covered, found from the capture
itself, so that its capture-wide figures (runtime busy time, Explorer's per-op time) are divided by the right number.
The schedule alone cannot say it: whether the capture starts with the active steps or already at the warm-up is not
documented (docs/neuron.md, "Device time: sources, order, window")."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from neuronexp.backends.neuron.runtime import RuntimeFigures
from neuronexp.config import ScheduleConfig

# How the window was found, most direct first.
BY_STEPS = "profiler_steps"  # executions inside vs outside the ProfilerStep spans of the system trace
BY_COUNT = "execution_count"  # the capture's executions over key_averages()' device kernels per step
BY_EXPLORER = "explorer_vs_events"  # Explorer's per-op totals over key_averages()' per-op device time per step
ASSUMED = "schedule"  # not found: the scheduled active steps, said in the row
WHOLE_STEP = 0.1  # a count-based step number must be this close to a whole number


@dataclass(frozen=True)
class Window:
    steps: float  # profiler steps, over all cycles, that capture-wide figures are divided by
    label: str  # active | warmup+active | wait+warmup+active | "<n> steps" | unverified
    method: str

    @property
    def verified(self) -> bool:
        return self.method != ASSUMED


def _label(per_cycle: float, schedule: ScheduleConfig) -> str:
    wait, warmup, active = schedule.wait or 0, schedule.warmup or 0, schedule.active or 1
    names = [(active, "active"), (warmup + active, "warmup+active"), (wait + warmup + active, "wait+warmup+active")]
    close = [name for n, name in names if abs(per_cycle - n) < WHOLE_STEP]  # the narrowest name first
    return close[0] if close else f"{per_cycle:g} steps"


def _whole(value: float | None) -> float | None:
    if value is None or not math.isfinite(value) or value <= 0 or abs(value - round(value)) > WHOLE_STEP:
        return None
    return float(round(value))


def capture_window(
    schedule: ScheduleConfig,
    runtime: RuntimeFigures | None,
    kernels_per_step: float | None,
    explorer_ops: dict[str, float],
    event_ops: dict[str, float],
) -> Window:
    """The window from the most direct evidence the capture holds (BY_STEPS, BY_COUNT, BY_EXPLORER), else ASSUMED.

    `explorer_ops`: Explorer's device us per op over the whole capture; `event_ops`: key_averages()' device us per
    op per profiled step; `kernels_per_step`: key_averages()' device kernels per profiled step.
    """
    repeat, active = schedule.repeat or 1, (schedule.active or 1) * (schedule.repeat or 1)
    found: tuple[float | None, str] = (None, ASSUMED)
    if runtime is not None and runtime.steps_covered is not None:
        found = (_whole(runtime.steps_covered) or runtime.steps_covered, BY_STEPS)
    elif runtime is not None and runtime.executions and kernels_per_step:
        found = (_whole(runtime.executions / kernels_per_step), BY_COUNT)
    else:
        if ratios := [explorer_ops[op] / us for op, us in event_ops.items() if us > 0 and explorer_ops.get(op, 0) > 0]:
            found = (_whole(statistics.median(ratios)), BY_EXPLORER)
    steps, method = found
    if steps is None or steps < active - WHOLE_STEP:
        return Window(float(active), "unverified", ASSUMED)
    return Window(steps, _label(steps / repeat, schedule), method)
