"""The environment fingerprint written to every job's env.json."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import socket
import subprocess
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any

import torch


def package_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


@lru_cache(maxsize=8)
def git_state(cwd: Path) -> dict[str, Any]:
    """Commit and dirtiness of the working tree the user runs from (None outside a repository).

    Asked once per process and directory: two git calls per cell add up over a sweep.
    """

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


def environment(device_name: str, backend: str, cwd: Path | None = None) -> dict[str, Any]:
    env = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "host": socket.gethostname(),
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "torch_version": torch.__version__,
        "torch_neuronx_version": package_version("torch-neuronx"),
        "neuronx_cc_version": package_version("neuronx-cc"),
        "cuda_runtime": torch.version.cuda,
        "neuronexp_version": package_version("neuronexp"),
        "backend": backend,
        "device_name": device_name,
        "neuron_env": {k: v for k, v in os.environ.items() if k.startswith(("NEURON_RT_", "TORCH_NEURONX_"))},
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
    }
    env.update(git_state((cwd or Path.cwd()).resolve()))
    return env
