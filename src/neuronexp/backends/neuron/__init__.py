"""AWS Trainium through TorchNeuron: the row (read without torch) and how Neuron's options map onto NeuronCores;
beside it the backend (neuron_backend), its options' checks (options), the profiling API (sdk), the capture and
`neuron-explorer`'s tables. `torch_neuronx` is imported only when a Neuron cell starts."""

from __future__ import annotations

import os
from typing import Any

from neuronexp.backends.base import Backend
from neuronexp.backends.info import BackendInfo, collect_cycles
from neuronexp.backends.neuron.options import check_options
from neuronexp.backends.neuron.process_env import inspect_conflict
from neuronexp.backends.neuron.sdk import check_installed, neuron_present, runtime_started
from neuronexp.config import RunConfig, parse_units


def _build(cfg: RunConfig) -> Backend:
    from neuronexp.backends.neuron.neuron_backend import NeuronBackend

    return NeuronBackend(cfg.neuron, cfg.profiler.neuron)


def _check() -> None:
    check_installed()
    if (conflict := inspect_conflict()) is not None:
        raise conflict


def _assumed_units(cfg: RunConfig) -> list[str]:
    """neuron.visible_cores, else NEURON_RT_VISIBLE_CORES, else the first cores the slots need (counting the cores
    would start the runtime here and reserve every one of them)."""
    cores = cfg.neuron.visible_cores or os.environ.get("NEURON_RT_VISIBLE_CORES")
    wanted = cfg.launcher.devices * (cfg.launcher.per_device or 1)
    return parse_units(cores) if cores else [str(i) for i in range(wanted)]


def _unpin(cfg: RunConfig) -> None:
    cfg.neuron.visible_cores = cfg.neuron.num_cores = None


def _placement(device: Any) -> str:
    cores = os.environ.get("NEURON_RT_VISIBLE_CORES")
    num = os.environ.get("NEURON_RT_NUM_CORES")
    return f"neuron:{cores}" if cores else f"neuron:any{num}" if num else "neuron:all"


INFO = BackendInfo(
    name="neuron",
    unit="NeuronCores",
    build=_build,
    present=neuron_present,
    check=_check,
    check_options=check_options,
    count_units=lambda: None,
    assumed_units=_assumed_units,
    # An index or an inclusive range (Neuron runtime configuration guide); the slot's range says how many cores too.
    visible_devices="NEURON_RT_VISIBLE_CORES",
    unit_ranges=True,
    slot_overrides=("NEURON_RT_NUM_CORES",),
    unpin=_unpin,
    placement=_placement,
    inference_mode=False,
    clean_up=collect_cycles,
    peaks_key="neuron",
    runtime_started=runtime_started,
    fork_refusal=(
        "the Neuron runtime started in neuronexp's fork-server template, so a forked cell would not get its "
        "slot's NeuronCores; please report this with your torch-neuronx version"
    ),
    unpaired="the Neuron backend's capture is set up once per process",
)
