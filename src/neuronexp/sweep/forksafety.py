"""What a process forked from the fork server's template inherits, and what it must not: threads, thread pools,
device runtimes. The checks (`template_state`, `refusal`) and the compile warm-up the template runs.

Fork safety, as found on Linux with torch 2.13 (docs/performance.md lists the measurements):
- numpy's OpenBLAS starts a worker thread when imported, pyarrow's jemalloc a background thread: both are off
  in the template's environment (TEMPLATE_ENV). A child gets its supervisor's environment back, but
  numpy's BLAS stays single-threaded in it (neuronexp uses numpy only for statistics).
- torch's OpenMP pool starts at the first parallel op. None runs here (the compile warm-up uses tiny tensors),
  so each child starts its pool after taking its affinity and `torch.set_num_threads`.
- tqdm (installed with transformers) starts a monitor thread with its first progress bar, and Inductor opens one
  while it compiles: the warm-up keeps tqdm's monitor off.
- CUDA: `torch.cuda.is_available()` loads the driver unless PYTORCH_NVML_BASED_CUDA_CHECK=1 (TEMPLATE_ENV); a
  process forked after that cannot use CUDA, so CUDA cells are refused with that reason if it ever happens.
- Neuron: the runtime starts at a process's first device use and reads NEURON_RT_VISIBLE_CORES then, which is
  in the child, after the slot's environment is set. A runtime started here refuses Neuron cells.
"""

from __future__ import annotations

import os
import sys
from typing import Any

# Only in the template's environment, read by the libraries they configure when those load (see above).
TEMPLATE_ENV = {"OPENBLAS_NUM_THREADS": "1", "JE_ARROW_MALLOC_CONF": "background_thread:false",
                "PYTORCH_NVML_BASED_CUDA_CHECK": "1"}


def template_state() -> dict[str, Any]:
    """What a fork from this process would inherit that matters: threads, and device runtimes started."""
    import torch

    threads = _thread_names()
    maps = open("/proc/self/maps").read() if os.path.exists("/proc/self/maps") else ""
    neuron = sys.modules.get("torch_neuronx")
    return {
        "pid": os.getpid(),
        "threads": threads,
        "cuda": "libcuda.so" in maps or bool(torch.cuda.is_initialized()),
        "neuron_runtime": bool(getattr(neuron, "is_neuron_runtime_initialized", lambda: False)()),
    }


def _thread_names() -> list[str]:
    """Every thread of this process: the kernel's name, with Python's own name for a Python thread (the kernel
    calls them all "python"), so that a warning says which library started one. This thread first."""
    import threading

    python_names = {t.native_id: t.name for t in threading.enumerate()}
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:  # not Linux: no cheap way to ask; threading only sees Python's own threads
        return list(python_names.values())
    names: list[str] = []
    for tid in sorted(tasks, key=lambda tid: (tid != str(threading.get_native_id()), tid)):
        try:
            with open(f"/proc/self/task/{tid}/comm") as f:
                kernel_name = f.read().strip()
        except OSError:
            continue
        python_name = python_names.get(int(tid))
        names.append(f"{kernel_name}/{python_name}" if python_name and names else kernel_name)
    return names


def warm_compile() -> None:
    """Compile and run a tiny function with TorchInductor, so that every child starts with the compiler stack
    imported and its one-time probes done (C++ compiler and vector ISA checks): cells compile as in a warm
    process. One compile thread, so that Inductor starts no worker pool here; tiny tensors, so no OpenMP pool;
    tqdm's monitor off, so that Inductor's progress bar starts no thread either."""
    from unittest import mock

    import torch
    import torch._inductor.config as inductor_config
    from torch.hub import tqdm as progress_bar  # tqdm when installed, else torch's thread-free stand-in

    def norm(x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-6) * 2.0

    no_monitor = mock.patch.object(progress_bar, "monitor_interval", 0) if hasattr(progress_bar, "monitor_interval") \
        else mock.patch.dict({})
    with inductor_config.patch(compile_threads=1), no_monitor, torch.inference_mode():
        torch.compile(norm)(torch.randn(2, 8))
    torch._dynamo.reset()


def thread_warning(state: dict[str, Any]) -> str | None:
    """A line for the terminal when the template has threads besides its own: forking is then safe only as far
    as those libraries prepare for it (most register pthread_atfork handlers)."""
    others = state["threads"][1:]
    return f"neuronexp: fork server: the template has {len(others)} other thread(s) ({', '.join(others)}); " \
           "cells are forked anyway" if others else None


def refusal(state: dict[str, Any], kind: str) -> str | None:
    """Why a cell of `kind` must not be forked from a template in `state`, or None."""
    if kind == "cuda" and state.get("cuda"):
        return ("CUDA was initialised in neuronexp's fork-server template, and a process forked after that "
                "cannot use CUDA; please report this with your torch version")
    if kind == "neuron" and state.get("neuron_runtime"):
        return ("the Neuron runtime started in neuronexp's fork-server template, so a forked cell would not get "
                "its slot's NeuronCores; please report this with your torch-neuronx version")
    return None
