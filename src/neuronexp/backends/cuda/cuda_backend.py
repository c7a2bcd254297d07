"""NVIDIA GPUs: kernels timed with CUDA events, device time from Kineto's CUDA activity."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity

from neuronexp.backends.base import Backend, BackendUnavailable


class CudaBackend(Backend):
    name = "cuda"
    device_row_type = DeviceType.CUDA
    timing_method = "cuda_event"
    device_time_source = "profiler_device_events"

    def __init__(self) -> None:
        if not torch.cuda.is_available():
            raise BackendUnavailable("CUDA is not available (no GPU or a CPU-only torch build)")
        self.device = torch.device("cuda", torch.cuda.current_device())

    def device_name(self) -> str:
        return torch.cuda.get_device_name(self.device)

    def synchronize(self) -> None:
        torch.cuda.synchronize(self.device)

    def activities(self) -> list[ProfilerActivity]:
        return [ProfilerActivity.CPU, ProfilerActivity.CUDA]

    memory_method = "torch.cuda.max_memory_allocated during one call, above the allocation at its start"  # same meaning

    def call_memory(self, fn: Callable[[], Any]) -> tuple[Any, float]:
        self.synchronize()
        torch.cuda.reset_peak_memory_stats(self.device)
        before = torch.cuda.memory_allocated(self.device)
        out = fn()
        self.synchronize()
        return out, float(torch.cuda.max_memory_allocated(self.device) - before)

    def peak_hint(self) -> dict[str, Any]:
        # A float32 matmul runs on tensor cores (TF32) only when torch allows it: it decides the FLOP roof.
        return {
            "device_name": self.device_name(),
            "tf32": bool(torch.backends.cuda.matmul.allow_tf32),
            "sm_count": int(torch.cuda.get_device_properties(self.device).multi_processor_count),
        }

    def time_call(self, fn: Callable[[], Any]) -> float:
        # Events bracket the work on the stream, so the sample is device time plus launch gaps,
        # without the host-side cost of a full synchronize.
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) * 1e3
