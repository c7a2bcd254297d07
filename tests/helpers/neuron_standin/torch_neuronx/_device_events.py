"""STAND-IN device events (tests only): what key_averages() would show if TorchNeuron fed correlated device
time back to the profiler. That it does is a HYPOTHESIS (docs/neuron.md: unconfirmed; smoke check C1).

The real plugin would add PrivateUse1 activities that Kineto correlates with the CPU op that launched them;
here the profiler's own parse step is wrapped and, for every CPU op named in `STATE.device_us`, a PrivateUse1
kernel event of that many microseconds is attached, exactly as torch does for a correlated device kernel. It
acts only on profiles whose `experimental_config` is a stand-in NeuronConfig made with correlate_device_time=True.
"""

from __future__ import annotations

from typing import Any

import torch.autograd.profiler as autograd_profiler
from synthetic_kernels import attach_kernels  # the stand-in's folder is on the path
from torch.autograd import DeviceType
from torch.autograd.profiler_util import FunctionEvent
from torch_neuronx import STATE

_ORIGINAL = autograd_profiler.profile._parse_kineto_results
KERNEL_PREFIX = "neuron_exec::"


def _with_device_events(self: Any, result: Any, timeout_s: float | None = None) -> list[FunctionEvent]:
    events = _ORIGINAL(self, result, timeout_s=timeout_s)
    kwargs = getattr(self.experimental_config, "kwargs", None) or {}
    if not STATE.device_us or not kwargs.get("correlate_device_time"):
        return events
    # "neuron": what a profile of the renamed PrivateUse1 backend sets on the launching op.
    return attach_kernels(events, STATE.device_us.get, DeviceType.PrivateUse1, "neuron", KERNEL_PREFIX)


def install() -> None:
    autograd_profiler.profile._parse_kineto_results = _with_device_events


def uninstall() -> None:
    autograd_profiler.profile._parse_kineto_results = _ORIGINAL
