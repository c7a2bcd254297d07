"""STAND-IN for `torch_neuronx.profiling` (tests only): three API generations, selected by `select_api`.

- "documented": NeuronConfig / ProfileMode / NeuronProfiler(config).export_trace as in the SDK 2.31+
  capture guide, with `correlate_device_time` (seen only in a third-party script; with it set, the device
  events of STATE.device_us reach key_averages(), see _device_events).
- "no_correlate": the same, with NeuronConfig's documented parameters only.
- "kwargs_drop": `NeuronConfig(**kwargs)` that keeps the documented parameters and silently drops any other
  (correlate_device_time included): a signature that "takes" every keyword.
- "legacy": the April-2026 `NeuronProfiler(pytorch_activities=..., neuron_output_dir=...)` context manager.
- "none": no profiling API at all (e.g. the PyTorch/XLA-era torch-neuronx).

The emulated runtime capture (when it starts, when its files appear, what they hold) is torch_neuronx._runtime.
"""

from __future__ import annotations

import enum
import os
from pathlib import Path
from typing import Any

from torch._C._profiler import _ExperimentalConfig
from torch.profiler import ProfilerActivity
from torch_neuronx import STATE, _runtime


class ProfileMode(enum.Enum):
    DEVICE = "device_profile"
    RUNTIME = "system_profile"
    CPU_UTIL = "cpu_util"
    HOST_MEMORY = "host_memory"


_Mode = ProfileMode  # select_api may remove the public name; the emulated runtime still needs it


class NeuronConfig(_ExperimentalConfig):
    standin = True  # what the emulated runtime looks for on a profiler's experimental_config

    def __init__(
        self,
        *,
        modes: list[ProfileMode] | None = None,
        max_events_per_nc: int = 1_000_000,
        capture_enabled_for_nc: str | None = None,
        profile_output_dir: str = "./output",
        neff_cache_dir: str | None = None,
        precache_node_info: bool = True,
        correlate_device_time: bool = False,
    ) -> None:
        super().__init__()
        self.kwargs = dict(
            modes=modes,
            max_events_per_nc=max_events_per_nc,
            capture_enabled_for_nc=capture_enabled_for_nc,
            profile_output_dir=profile_output_dir,
            neff_cache_dir=neff_cache_dir,
            precache_node_info=precache_node_info,
            correlate_device_time=correlate_device_time,
        )
        self.modes = modes if modes is not None else [_Mode.DEVICE, _Mode.RUNTIME]
        self.profile_output_dir = profile_output_dir
        self.neff_cache_dir = neff_cache_dir
        STATE.configs.append(self.kwargs)


class NeuronConfigWithoutCorrelate(NeuronConfig):
    def __init__(
        self,
        *,
        modes: list[ProfileMode] | None = None,
        max_events_per_nc: int = 1_000_000,
        capture_enabled_for_nc: str | None = None,
        profile_output_dir: str = "./output",
        neff_cache_dir: str | None = None,
        precache_node_info: bool = True,
    ) -> None:
        super().__init__(
            modes=modes,
            max_events_per_nc=max_events_per_nc,
            capture_enabled_for_nc=capture_enabled_for_nc,
            profile_output_dir=profile_output_dir,
            neff_cache_dir=neff_cache_dir,
            precache_node_info=precache_node_info,
        )
        del self.kwargs["correlate_device_time"]


class NeuronConfigDroppingUnknown(NeuronConfig):
    DOCUMENTED = ("modes", "max_events_per_nc", "capture_enabled_for_nc", "profile_output_dir", "neff_cache_dir")

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**{k: v for k, v in kwargs.items() if k in self.DOCUMENTED})
        del self.kwargs["correlate_device_time"]


class NeuronProfiler:
    """Documented API: `on_trace_ready=NeuronProfiler(config).export_trace`."""

    def __init__(self, config: NeuronConfig) -> None:
        self.config = config

    def export_trace(self, prof: Any) -> None:
        _runtime.export(self.config, prof)


class AprilNeuronProfiler:
    """April-2026 API: a context manager that runs the runtime capture (and optionally its own torch.profiler)."""

    def __init__(
        self,
        pytorch_activities: list[ProfilerActivity] | None = None,
        record_shapes: bool = False,
        pytorch_trace_file: str | None = None,
        neuron_output_dir: str = "./output",
        event_filters: dict[str, list[str] | list[int]] | None = None,
    ) -> None:
        self.pytorch_activities = pytorch_activities or []
        self.neuron_output_dir = neuron_output_dir
        self.event_filters = event_filters
        self._active = False

    def start(self) -> None:
        if self._active:
            raise RuntimeError("Profiler is already active")
        self._active = True
        STATE.log.append("legacy-start")
        # It captures its defaults (DEVICE and RUNTIME) over everything between start and stop, NEFFs from the cache.
        cache = os.environ.get("TORCH_NEURONX_NEFF_CACHE_DIR")
        STATE.legacy_capture = _runtime.Capture(
            Path(self.neuron_output_dir), ["device_profile", "system_profile"], cache
        )

    def stop(self) -> None:
        self._active = False
        STATE.log.append("legacy-stop")
        STATE.legacy_sessions.append(
            {
                "neuron_output_dir": self.neuron_output_dir,
                "event_filters": self.event_filters,
                "pytorch_activities": self.pytorch_activities,
            }
        )
        capture, STATE.legacy_capture = STATE.legacy_capture, None
        _runtime.write(capture)

    def __enter__(self) -> AprilNeuronProfiler:
        self.start()
        return self

    def __exit__(self, *exc: Any) -> bool:
        self.stop()
        return False


def select_api(variant: str) -> None:
    """Rebind this module's names to one API generation (the fixture calls it before the backend is built)."""
    g = globals()
    if variant == "documented":
        return
    if variant in ("no_correlate", "kwargs_drop"):
        g["NeuronConfig"] = NeuronConfigWithoutCorrelate if variant == "no_correlate" else NeuronConfigDroppingUnknown
        return
    for name in ("NeuronConfig", "ProfileMode"):
        g.pop(name, None)
    if variant == "legacy":
        g["NeuronProfiler"] = AprilNeuronProfiler
    elif variant == "none":
        g.pop("NeuronProfiler", None)
    else:
        raise ValueError(f"unknown stand-in API variant {variant!r}")


select_api(STATE.switches.api)  # NEURON_STANDIN_SWITCHES="api=..." from outside; the test fixture selects its own
