"""What a process forked from the fork server's template inherits, and what it must not: threads, thread pools, device
runtimes. The checks (`template_state`, `refusal`) and the compile warm-up the template runs. A thread alive at the fork
leaves its locks held forever in the child, and a device runtime started in the template would hand every child its
device selection; so the template's environment keeps the libraries' pools off (forkserver.TEMPLATE_ENV) and a runtime
found started refuses its cells (docs/performance.md, "A cell's process")."""

from __future__ import annotations

import os
from typing import Any

from neuronexp.backends.table import BACKENDS, backend_info


def template_state() -> dict[str, Any]:
    """What a fork from this process would inherit that matters: threads, and the backends whose device runtime
    started here (BackendInfo.runtime_started)."""
    started = [info.name for info in BACKENDS if info.runtime_started()]
    return {"pid": os.getpid(), "threads": _thread_names(), "runtimes_started": started}


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

    no_monitor = (
        mock.patch.object(progress_bar, "monitor_interval", 0)
        if hasattr(progress_bar, "monitor_interval")
        else mock.patch.dict({})
    )
    with inductor_config.patch(compile_threads=1), no_monitor, torch.inference_mode():
        torch.compile(norm)(torch.randn(2, 8))
    torch._dynamo.reset()


def thread_warning(state: dict[str, Any]) -> str | None:
    """A line for the terminal when the template has threads besides its own: forking is then safe only as far
    as those libraries prepare for it (most register pthread_atfork handlers)."""
    others = state["threads"][1:]
    return (
        f"neuronexp: fork server: the template has {len(others)} other thread(s) ({', '.join(others)}); "
        "cells are forked anyway"
        if others
        else None
    )


def refusal(state: dict[str, Any], kind: str | None) -> str | None:
    """Why a cell of `kind` (None: the host's) must not be forked from a template in `state`, or None."""
    if kind is None or kind not in state.get("runtimes_started", ()):
        return None
    return backend_info(kind).fork_refusal
