"""Targets the fork-server tests run in forked cell processes (imported there as `helpers.forked`): each takes the
request's payload and writes what the process saw to `payload["out"]` (JSON)."""

from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

STANDIN_DIR = Path(__file__).resolve().parent / "neuron_standin"


def _write(payload: dict[str, Any], seen: dict[str, Any]) -> None:
    Path(payload["out"]).write_text(json.dumps(seen))


def report(payload: dict[str, Any]) -> int:
    """Where this process stands: ids, cores, threads, environment, and what the CUDA and Neuron paths read."""
    import torch

    from neuronexp.cell.rows import describe_placement

    _write(
        payload,
        {
            "pid": os.getpid(),
            "ppid": os.getppid(),
            "pgid": os.getpgid(0),
            "cpus": sorted(os.sched_getaffinity(0)),
            "torch_threads": torch.get_num_threads(),
            "env": dict(os.environ),
            "cwd": os.getcwd(),
            # torch's own parse of CUDA_VISIBLE_DEVICES (its NVML device count uses it) and the row's placement
            "cuda_visible": [str(d) for d in torch.cuda._parse_visible_devices()],
            "cuda_placement": describe_placement("cuda", torch.device("cpu"))["placement"],
            "neuron_placement": describe_placement("neuron", None)["placement"],
            "compile_threads": _inductor_compile_threads(),
        },
    )
    return 0


def _inductor_compile_threads() -> int:
    """Inductor's compile pool size, decided from the cores when its config is first imported (in a warmed-up
    template, that is before the fork)."""
    import torch._inductor.config as inductor_config

    return int(inductor_config.compile_threads or 0)


def behave(payload: dict[str, Any]) -> int:
    """Misbehave as `payload["mode"]` says: exit, crash, or hang (with a grandchild that must die with it)."""
    mode = payload["mode"]
    if mode == "exit":
        os._exit(3)
    if mode == "raise":
        raise RuntimeError("target failed")
    if mode == "segv":
        ctypes.string_at(0)
    if mode == "warned":  # Slurm's time-limit warning, as every process of the task gets it
        os.kill(os.getpid(), signal.SIGUSR2)
        time.sleep(0.2)
        os._exit(4)
    if mode == "escape":  # a process of its own session (setsid), out of the cell's process group; the cell ends
        escaped = subprocess.Popen(["sleep", "300"], start_new_session=True)
        _write(payload, {"pid": os.getpid(), "grandchild": escaped.pid})
        return 0
    if mode == "hang":
        grandchild = subprocess.Popen(["sleep", "300"])
        _write(payload, {"pid": os.getpid(), "grandchild": grandchild.pid})
        time.sleep(300)
    return 0


def parallel(payload: dict[str, Any]) -> int:
    """The first parallel torch ops of a fresh fork: they must start the OpenMP pool and finish."""
    import torch

    start = time.perf_counter()
    a = torch.randn(512, 512)
    (a @ a).sum().item()
    (torch.randn(4_000_000) * 2.0).sum().item()
    _write(payload, {"seconds": time.perf_counter() - start, "threads": torch.get_num_threads()})
    return 0


def neuron_backend(payload: dict[str, Any]) -> int:
    """Build neuronexp's Neuron backend over the torch-neuronx stand-in; what its runtime saw when it started."""
    sys.path.insert(0, str(STANDIN_DIR))
    from neuronexp.backends.neuron.neuron_backend import NeuronBackend
    from neuronexp.cell.rows import describe_placement
    from neuronexp.config import NeuronDeviceConfig, NeuronProfilerConfig

    NeuronBackend.device_type = "cpu"  # this process is the test's own, and ends here
    already = sys.modules.get("torch_neuronx") is not None
    NeuronBackend(NeuronDeviceConfig(), NeuronProfilerConfig())
    import torch_neuronx

    _write(
        payload,
        {
            "imported_before": already,
            "env_at_start": torch_neuronx.STATE.env_at_start,
            "placement": describe_placement("neuron", None)["placement"],
        },
    )
    return 0


def compile_tiny(payload: dict[str, Any]) -> int:
    """A first torch.compile in a fork of a warmed-up template."""
    import torch

    start = time.perf_counter()
    torch.compile(lambda x: x.sin() * 2)(torch.randn(64))
    _write(payload, {"seconds": time.perf_counter() - start})
    return 0


def heap_faults(payload: dict[str, Any]) -> int:
    """Page faults of the malloc settings this process inherited: an 8 MiB block taken, touched and freed three
    times, the faults of each round. Under the stable mode the block stays in the heap after the first round (0
    faults after it); under glibc's defaults it is mmapped and unmapped, or the heap grows, and faults again."""
    import resource

    libc = ctypes.CDLL(None)
    libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    size, faults = 8 << 20, []
    for _ in range(3):
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        block = libc.malloc(size)
        ctypes.memset(block, 1, size)
        libc.free(block)
        faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
    from neuronexp.host.allocator import APPLIED_ENV

    _write(payload, {"faults": faults, "pid": os.getpid(), "ppid": os.getppid(), "tuned": os.environ.get(APPLIED_ENV)})
    return 0


def cell_then_modules(payload: dict[str, Any]) -> int:
    """A real cell through the cell processes' own entry point, then which of Hydra's modules this process holds."""
    from neuronexp.cellprocess.entry import run_cell_process

    code = run_cell_process((payload["spec"],))
    _write(payload, {"code": code, "hydra": sorted(m for m in sys.modules if m == "hydra" or m.startswith("hydra."))})
    return 0


def inherited(payload: dict[str, Any]) -> int:
    """What a cell would otherwise do afresh in each process: modules it imports (those of `payload["modules"]` not
    loaded yet) and the processes env.json's platform string starts (`uname -p`, unless the template asked first)."""
    import platform

    missing = [name for name in payload["modules"] if name not in sys.modules]

    spawned: list[list[str]] = []
    real = subprocess.Popen.__init__

    def recording(self: subprocess.Popen, args: Any, *rest: Any, **kw: Any) -> None:
        spawned.append(list(args) if isinstance(args, (list, tuple)) else [str(args)])
        real(self, args, *rest, **kw)

    subprocess.Popen.__init__ = recording  # type: ignore[method-assign]
    _write(payload, {"platform": platform.platform(), "spawned": spawned, "missing": missing})
    return 0
