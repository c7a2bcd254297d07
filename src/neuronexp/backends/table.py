"""The table of backends: one row per backend, each from the backend's own folder (its `INFO`, backends.info says
what a row holds). backend=auto tries them in this order; the last is the host, where a cell whose backend could not
start is placed. Adding a backend: its folder, and its row here. Reading the table imports no torch and starts no
device runtime: the sweep reads it while planning, and the fork server's template before torch."""

from __future__ import annotations

from neuronexp.backends.cpu import INFO as CPU
from neuronexp.backends.cuda import INFO as CUDA
from neuronexp.backends.info import BackendInfo
from neuronexp.backends.neuron import INFO as NEURON
from neuronexp.config import BackendName

BACKENDS: tuple[BackendInfo, ...] = (NEURON, CUDA, CPU)
HOST = BACKENDS[-1]


def backend_info(name: str) -> BackendInfo:
    """The row of backend `name` (a `backend=` value other than auto, a row's `backend`, a slot's kind)."""
    for info in BACKENDS:
        if info.name == name:
            return info
    raise KeyError(f"no backend {name!r}; the table has {', '.join(b.name for b in BACKENDS)}")


def named_backend(name: BackendName | str) -> BackendInfo | None:
    """The row of the backend a config names; None for backend=auto, which only the cell's machine decides."""
    value = BackendName(name).value
    return None if value == BackendName.auto.value else backend_info(value)
