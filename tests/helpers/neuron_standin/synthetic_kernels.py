"""SYNTHETIC device kernels (tests only) attached to a real CPU profile, exactly as torch attaches a correlated
kernel to the CPU op that launched it. Shared by the torch-neuronx stand-in (PrivateUse1 rows, imported as the
top-level `synthetic_kernels` where the stand-in's folder is on the path) and the CUDA-shaped profile test
(`helpers.neuron_standin.synthetic_kernels`). Imports nothing of the stand-in, so both can load it."""

from __future__ import annotations

from collections.abc import Callable

from torch.autograd import DeviceType
from torch.autograd.profiler_util import FunctionEvent


def attach_kernel(fe: FunctionEvent, us: float, device_type: DeviceType, use_device: str, prefix: str) -> FunctionEvent:
    """One device kernel of `us` microseconds, appended to its launching CPU op `fe` as a correlated kernel."""
    fe.use_device = use_device  # what a profile of that device's backend sets on the launching op
    start = fe.time_range.start
    kernel = FunctionEvent(
        id=fe.id,
        name=prefix + fe.name,
        thread=fe.thread,
        start_us=start,
        end_us=start + us,
        fwd_thread=fe.thread,
        input_shapes=[],
        stack=[],
        use_device=use_device,
        device_type=device_type,
        device_index=0,
    )
    fe.append_kernel(kernel.name, 0, us)
    return kernel


def attach_kernels(
    events: list[FunctionEvent],
    kernel_us: Callable[[str], float | None],
    device_type: DeviceType,
    use_device: str,
    prefix: str,
) -> list[FunctionEvent]:
    """`events` plus one device kernel of `kernel_us(op name)` µs for every synchronous CPU op it names (None:
    no kernel), each appended to its launching op as a correlated kernel."""
    kernels = []
    for fe in events:
        us = kernel_us(fe.name) if fe.device_type == DeviceType.CPU and not fe.is_async else None
        if us is not None:
            kernels.append(attach_kernel(fe, us, device_type, use_device, prefix))
    return list(events) + kernels
