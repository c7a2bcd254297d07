"""STAND-IN device time in key_averages() (tests only): where TorchNeuron's device time would show in the profiler, if
anywhere. Which route it takes is UNCONFIRMED (docs/neuron.md; smoke checks C1, C4), so it is a switch,
`STATE.switches.key_averages`:

- "events": PrivateUse1 kernels correlated with the host op that launched them, exactly as torch attaches a
  correlated device kernel; only for profiles whose `experimental_config` is a stand-in NeuronConfig that kept
  correlate_device_time=True (one without the parameter, or one that drops it, never gets them);
- "host_rows": the device time on the host op itself, as torch 2.13 attaches a registered PrivateUse1 profiler stub's
  `privateuse1_elapsed_us()` (a "legacy" kernel named as the op; no device rows), whatever correlate says;
- "none": nowhere.

With `STATE.switches.runtime_rows`, the runtime's own activity also shows, as a CPU-typed event of Kineto activity
`privateuse1_runtime` nested in each launching op (what torch does with a plug-in's runtime activity). The profiler's
own parse step is wrapped; the device work of each op is planted (planted.executions: a compiled graph as one).
"""

from __future__ import annotations

from typing import Any

import torch.autograd.profiler as autograd_profiler
from planted import device_key, executions  # the stand-in's folder is on the path
from synthetic_kernels import attach_kernel
from torch.autograd import DeviceType
from torch.autograd.profiler_util import FunctionEvent
from torch_neuronx import STATE

_ORIGINAL = autograd_profiler.profile._parse_kineto_results
while hasattr(_ORIGINAL, "standin_original"):  # a wrapper of an earlier stand-in a test's monkeypatch put back
    _ORIGINAL = _ORIGINAL.standin_original
KERNEL_PREFIX = "neuron_exec::"
RUNTIME_EVENT = "NeuronRuntime::execute"  # the stand-in's name; the real runtime activity's name is unknown
RUNTIME_ACTIVITY = "privateuse1_runtime"  # Kineto's name of ActivityType::PRIVATEUSE1_RUNTIME


def is_host(fe: FunctionEvent) -> bool:
    return fe.device_type == DeviceType.CPU and not fe.is_async


def _on_host_row(fe: FunctionEvent, us: float) -> None:
    """torch's own handling of a stub's elapsed time: a kernel named as the op, the op marked legacy."""
    fe.use_device = "neuron"
    fe.append_kernel(fe.name, fe.device_index, us)
    fe.is_legacy = True


def _runtime_event(fe: FunctionEvent) -> FunctionEvent:
    """The runtime's activity for one launch, inside the op's own span on its thread (a child of it)."""
    start, end = fe.time_range.start, fe.time_range.end
    return FunctionEvent(
        id=fe.id,
        name=RUNTIME_EVENT,
        thread=fe.thread,
        start_us=start + (end - start) * 0.25,
        end_us=start + (end - start) * 0.75,
        fwd_thread=fe.thread,
        input_shapes=[],
        stack=[],
        device_type=DeviceType.CPU,
        device_index=0,
        activity_type=RUNTIME_ACTIVITY,
    )


def _with_device_events(self: Any, result: Any, timeout_s: float | None = None) -> list[FunctionEvent]:
    events = _ORIGINAL(self, result, timeout_s=timeout_s)
    kwargs = getattr(self.experimental_config, "kwargs", None) or {}
    if not getattr(self.experimental_config, "standin", False):
        return events
    table, route = STATE.device_us, STATE.switches.key_averages
    launches = executions(events, table, is_host)
    added = [_runtime_event(fe) for fe in launches] if STATE.switches.runtime_rows else []
    for fe in launches:
        us = table[str(device_key(fe.name, table))]
        if route == "events" and kwargs.get("correlate_device_time"):
            # "neuron": what a profile of the renamed PrivateUse1 backend sets on the launching op.
            added.append(attach_kernel(fe, us, DeviceType.PrivateUse1, "neuron", KERNEL_PREFIX))
        elif route == "host_rows":
            _on_host_row(fe, us)
    return list(events) + added


_with_device_events.standin_original = _ORIGINAL  # type: ignore[attr-defined]


def install() -> None:
    autograd_profiler.profile._parse_kineto_results = _with_device_events


def uninstall() -> None:
    autograd_profiler.profile._parse_kineto_results = _ORIGINAL
