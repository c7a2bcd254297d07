"""STAND-IN device events (tests only): what key_averages() would show if TorchNeuron fed correlated device
time back to the profiler. That it does is a HYPOTHESIS (docs/neuron.md: unconfirmed; smoke check C1), so it is a
switch: `STATE.switches.key_averages_events`.

The real plugin would add PrivateUse1 activities that Kineto correlates with the CPU op that launched them; here the
profiler's own parse step is wrapped and, for every host op that runs on the emulated NeuronCore (planted.executions:
a compiled graph as one), a PrivateUse1 kernel of its planted length is attached, exactly as torch does for a
correlated device kernel. Only for profiles whose `experimental_config` is a stand-in NeuronConfig made with
correlate_device_time=True (a NeuronConfig without that parameter never gets them).
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


def is_host(fe: FunctionEvent) -> bool:
    return fe.device_type == DeviceType.CPU and not fe.is_async


def _with_device_events(self: Any, result: Any, timeout_s: float | None = None) -> list[FunctionEvent]:
    events = _ORIGINAL(self, result, timeout_s=timeout_s)
    kwargs = getattr(self.experimental_config, "kwargs", None) or {}
    if not STATE.switches.key_averages_events or not kwargs.get("correlate_device_time"):
        return events
    table = STATE.device_us
    # "neuron": what a profile of the renamed PrivateUse1 backend sets on the launching op.
    kernels = [
        attach_kernel(fe, table[str(device_key(fe.name, table))], DeviceType.PrivateUse1, "neuron", KERNEL_PREFIX)
        for fe in executions(events, table, is_host)
    ]
    return list(events) + kernels


_with_device_events.standin_original = _ORIGINAL  # type: ignore[attr-defined]


def install() -> None:
    autograd_profiler.profile._parse_kineto_results = _with_device_events


def uninstall() -> None:
    autograd_profiler.profile._parse_kineto_results = _ORIGINAL
