"""AWS Trainium through TorchNeuron (the `neuron` PrivateUse1 device of torch-neuronx).

Written against the documented API (Neuron Explorer "profile a PyTorch workload" guide, SDK 2.31+):
`NeuronConfig` is passed as `experimental_config`, `NeuronProfiler(config).export_trace` as
`on_trace_ready`. Not verified on hardware here: see docs/neuron.md and scripts/neuron_smoke.py.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any, Callable

import torch
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity

from neuronexp.backends.base import Backend, BackendUnavailable
from neuronexp.config import NeuronDeviceConfig, NeuronProfilerConfig

INSTALL_HINT = (
    "torch-neuronx is not installed; on a Trn2/Trn3 instance install it from the Neuron package repository "
    "(pip install -e .[neuron], see docs/neuron.md)"
)


class NeuronBackend(Backend):
    name = "neuron"
    device_row_type = DeviceType.PrivateUse1
    timing_method = "wallclock+sync"
    device_time_source = "profiler_device_events"

    def __init__(self, device_cfg: NeuronDeviceConfig, profiler_cfg: NeuronProfilerConfig) -> None:
        try:
            self.tnx = importlib.import_module("torch_neuronx")
        except ImportError:
            raise BackendUnavailable(INSTALL_HINT) from None
        if not hasattr(torch, "neuron") or not torch.neuron.is_available():
            raise BackendUnavailable("torch-neuronx is installed but no NeuronCore is visible to this process")
        self.device_cfg, self.profiler_cfg = device_cfg, profiler_cfg
        self.device = torch.device("neuron")
        self._config: Any = None

    def prepare(self) -> None:
        # The runtime reads these once, when it starts; setting them later has no effect.
        if self.device_cfg.visible_cores is not None:
            os.environ["NEURON_RT_VISIBLE_CORES"] = str(self.device_cfg.visible_cores)
        if self.device_cfg.num_cores is not None:
            os.environ["NEURON_RT_NUM_CORES"] = str(self.device_cfg.num_cores)

    def device_name(self) -> str:
        try:
            return str(torch.neuron.get_device_properties(0).name)
        except Exception:  # not every torch-neuronx version has device properties
            return "neuron"

    def synchronize(self) -> None:
        # Execution is asynchronous: without this the profiler step closes before the NEFFs ran.
        torch.neuron.synchronize()

    def activities(self) -> list[ProfilerActivity]:
        return [ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]

    def compile_backend(self) -> str:
        return "neuron"

    def _neuron_config(self, out_dir: Path) -> Any:
        if self._config is None:
            profiling = importlib.import_module("torch_neuronx.profiling")
            cfg = self.profiler_cfg
            kwargs: dict[str, Any] = {
                "modes": [getattr(profiling.ProfileMode, m.value if hasattr(m, "value") else str(m)) for m in cfg.modes],
                "profile_output_dir": str(out_dir / "neuron_profile"),
            }
            if cfg.capture_enabled_for_nc is not None:
                kwargs["capture_enabled_for_nc"] = str(cfg.capture_enabled_for_nc)
            if cfg.max_events_per_nc is not None:
                kwargs["max_events_per_nc"] = int(cfg.max_events_per_nc)
            if cfg.correlate_device_time is not None:
                kwargs["correlate_device_time"] = bool(cfg.correlate_device_time)
            self._config = profiling.NeuronConfig(**kwargs)
        return self._config

    def profiler_kwargs(self, out_dir: Path) -> dict[str, Any]:
        return {"experimental_config": self._neuron_config(out_dir)}

    def trace_handlers(self, out_dir: Path) -> list[Callable[[Any], None]]:
        profiling = importlib.import_module("torch_neuronx.profiling")
        return [profiling.NeuronProfiler(self._neuron_config(out_dir)).export_trace]
