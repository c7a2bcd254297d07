"""A cell's callable: the module built from its config, moved, cast and maybe compiled, with its inputs; its first
call (the compile), and the timing keys as its backend needs them. cell.run calls these for each cell."""

from __future__ import annotations

import contextlib
import copy
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch
from torch import nn

from neuronexp.backends import Backend
from neuronexp.cell.inputs import make_inputs, torch_dtype
from neuronexp.config import CellSpec, ConfigError, TimingConfig
from neuronexp.config.input_specs import compute_dtype
from neuronexp.config.targets import instantiate
from neuronexp.results.files import write_phase


@dataclass
class Built:
    """The cell's callable, and what it calls: the eager module and its inputs (cell.work counts them)."""

    model: Any  # the module, or its compiled wrapper
    module: nn.Module
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    spacer: Any = None  # what relocate() put before the inputs, kept while they are

    def call(self) -> Any:
        return self.model(*self.args, **self.kwargs)

    def relocate(self, spacer_bytes: int) -> None:
        """The tensor inputs copied to a fresh place in memory, behind a spacer of `spacer_bytes`.

        Why (timing.relocate): on the host, a kernel's speed depends on where its operands sit (cache sets, 4K
        aliasing): the same naive/fused ratio measured 0.83-1.15 at six placements in one process. A process has
        one placement, so without moving, rounds cannot sample it and a rerun's figure moves with the heap.
        """
        tensors = [a for a in (*self.args, *self.kwargs.values()) if isinstance(a, torch.Tensor)]
        device = tensors[0].device if tensors else torch.device("cpu")
        self.spacer = None
        self.spacer = torch.empty(spacer_bytes, dtype=torch.uint8, device=device)
        self.args = tuple(_fresh(a) for a in self.args)
        self.kwargs = {k: _fresh(v) for k, v in self.kwargs.items()}


def _fresh(value: Any) -> Any:
    """A tensor input's copy in new storage, alike in everything else (strides, inference-ness, requires_grad)."""
    if not isinstance(value, torch.Tensor):
        return value
    with torch.inference_mode(value.is_inference()), torch.no_grad():
        copy = value.detach().clone()
    return copy.requires_grad_(True) if value.requires_grad else copy


def _module(spec: CellSpec) -> nn.Module:
    if spec.memory is not None:  # the caller's module, on a copy: moving and casting must not change theirs
        return copy.deepcopy(spec.memory.module)
    module = instantiate(spec.config.module)  # the resolved node as plain values: Hydra's instantiate, without Hydra
    if not isinstance(module, nn.Module):
        target = spec.config.module.get("_target_")
        raise ConfigError("module._target_", target, f"built a {type(module).__name__}, not a torch.nn.Module")
    return module


def _inputs(spec: CellSpec, module: nn.Module, device: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    if spec.memory is not None:  # the caller's inputs, on a copy per cell: a variant that writes into its input
        # must change neither the caller's tensor nor another variant's (each YAML cell makes its own)
        return tuple(_fresh(a).to(device) if isinstance(a, torch.Tensor) else a for a in spec.memory.inputs), {}
    return make_inputs(spec.config.input, module, device)


def build(spec: CellSpec, backend: Backend, reset_dynamo: bool = True) -> Built:
    cfg = spec.config
    torch.manual_seed(cfg.input.seed)  # the same weights in every run, and in each variant built alike
    module = _module(spec)
    # Cast to the cell's dtype, except a model fed token ids with no input.model_dtype: it keeps its own.
    if cfg.input.model_dtype is not None or torch_dtype(cfg.input.dtype).is_floating_point:
        module = module.to(dtype=torch_dtype(compute_dtype(cfg.input)))
    module = module.to(device=backend.device).eval()
    args, kwargs = _inputs(spec, module, backend.device)
    model: Any = module
    if cfg.compile.enabled:
        backend.check_compile(cfg.compile)
        # A fresh Dynamo per cell: earlier cells' graphs and recompile counters must not leak in. Not between the
        # cells of a group timed together: a reset would make the group's compiled cells compile again mid-timing.
        if reset_dynamo:
            torch._dynamo.reset()
        model = torch.compile(
            module,
            backend=cfg.compile.backend or backend.compile_backend(),
            mode=cfg.compile.mode,
            fullgraph=cfg.compile.fullgraph,
            dynamic=cfg.compile.dynamic,
        )
    return Built(model, module, args, kwargs)


def kernel_records(spec: CellSpec, backend: Backend) -> Any:
    """While this cell compiles and runs: Inductor's C++ kernels recorded by name (`cpp_fused_mul_rsqrt_0`), so the
    profile shows the kernels inside a compiled region, not one opaque graph call. Scoped to the cell; the
    record costs a thread-local check per kernel call when no profiler runs (docs/methodology.md)."""
    compile_cfg = spec.config.compile
    if not compile_cfg.enabled or (compile_cfg.backend or backend.compile_backend()) != "inductor":
        return contextlib.nullcontext()
    from torch._inductor import config as inductor_config

    return inductor_config.patch({"cpp.enable_kernel_profile": True})


def first_call(call: Callable[[], Any], spec: CellSpec, backend: Backend, out_dir: Path) -> float:
    write_phase(out_dir, "compile" if spec.config.compile.enabled else "first call")
    start = time.perf_counter()
    call()
    backend.synchronize()
    return time.perf_counter() - start


def timing_config(spec: CellSpec, backend: Backend) -> TimingConfig:
    timing = spec.config.timing  # at least the backend's floor of warm-up calls, documented where it is set
    return replace(timing, warmup=max(timing.warmup, backend.min_warmup_calls))
