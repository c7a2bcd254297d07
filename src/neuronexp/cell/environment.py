"""The environment fingerprint written to every job's env.json."""

from __future__ import annotations

import os
import platform
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import torch

from neuronexp.backends.table import backend_info
from neuronexp.config import format_units
from neuronexp.config.fingerprint import package_version
from neuronexp.host.allocator import preload_environment
from neuronexp.host.threads import host_cpus


def git_state(cwd: Path) -> dict[str, Any]:
    """Commit and dirtiness of the working tree the user runs from (None outside a repository), asked afresh for
    every cell: a Python caller's process runs many invocations, between which the tree may change."""

    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=5)
        except (OSError, subprocess.SubprocessError):
            return None
        return out.stdout.strip() if out.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    if commit is None:
        return {"git_commit": None, "git_dirty": None}
    status = git("status", "--porcelain", "--untracked-files=no")
    return {"git_commit": commit, "git_dirty": bool(status)}


def environment_record(
    device_name: str,
    backend: str,
    host_alloc: dict[str, Any] | None = None,
    threads: int | None = None,
    cwd: Path | None = None,
) -> dict[str, Any]:
    """env.json: versions, host, device, and what the cell's process did to its host (malloc, threads)."""
    env = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "host": socket.gethostname(),
        "cpu_count": os.cpu_count(),
        "torch_threads": threads if threads is not None else torch.get_num_threads(),
        "torch_interop_threads": torch.get_num_interop_threads(),
        "allocator": dict(host_alloc or {}, environment=preload_environment()),
        "torch_version": torch.__version__,
        "torch_neuronx_version": package_version("torch-neuronx"),
        "neuronx_cc_version": package_version("neuronx-cc"),
        "cuda_runtime": torch.version.cuda,
        "neuronexp_version": package_version("neuronexp"),
        "backend": backend,
        "device_name": device_name,
        # Runtime variables, and the compile-time ones that decide whether profiles carry layer names.
        "neuron_env": {
            k: v
            for k, v in os.environ.items()
            if k.startswith(("NEURON_RT_", "TORCH_NEURONX_"))
            or k in ("XLA_IR_DEBUG", "XLA_HLO_DEBUG", "NKI_DEBUG_INFO", "NEURON_FRAMEWORK_DEBUG")
        },
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
    }
    env.update(git_state((cwd or Path.cwd()).resolve()))
    return env


def describe_placement(backend_name: str, device: Any) -> dict[str, Any]:
    """Where the current process runs its cell (the row's placement columns), read from the process itself
    (environment, affinity): true however it was launched, on a slot of this host or in a Slurm job's allocation."""
    return {
        "placement": backend_info(backend_name).placement(device),
        "placement_cpus": format_units(host_cpus()),
        "worker_pid": os.getpid(),
        "host": socket.gethostname(),
    }
