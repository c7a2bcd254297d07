"""PLANTED device work of the torch-neuronx STAND-IN (tests only, never a measurement): which host ops "run" on the
emulated NeuronCore, as which NEFF, for how long, and the framework name Neuron Explorer's debug info gives each NEFF.

The stand-in's runtime (executions in the capture), its key_averages() device events and the fake neuron-explorer all
read these tables, each through its own path, so that every source neuronexp reads has a known answer. Imports
nothing of the stand-in (the fake explorer, the stand-in and the tests all load it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

COMPILED_REGION = "Torch-Compiled Region"  # Dynamo's range around a compiled graph: "Torch-Compiled Region: 0/0"
# Host op -> device microseconds per call (what STATE.device_us starts as). Naive RMSNorm per step: three aten::mul
# (90 us), aten::mean 12, aten::add 4, aten::rsqrt 6 = 112 us.
DEVICE_US = {
    "aten::mul": 30.0,
    "aten::mean": 12.0,
    "aten::add": 4.0,
    "aten::rsqrt": 6.0,
    "aten::_fused_rms_norm": 20.0,
    COMPILED_REGION: 18.0,
    "nki::tensor_add": 3.0,  # the NKI recipe's kernel (the stand-in nki package's range); aten::add above: 4
}
# Host op -> the NEFF it runs as (eager: one NEFF per op; compiled: one per graph).
NEFFS = {
    "aten::mul": "1001",
    "aten::mean": "1002",
    "aten::add": "1003",
    "aten::rsqrt": "1004",
    "aten::_fused_rms_norm": "1005",
    COMPILED_REGION: "2001",
    "nki::tensor_add": "3001",
}
# NEFF -> the framework name its debug info carries (Explorer's FrameworkInstruction.framework_name); None: none.
# Deliberately not derived from the framework trace: some NEFFs cannot be named, one name is no key_averages() op.
NEFF_NAMES: dict[str, str | None] = {
    "1001": "NaiveRMSNorm[0]/function[1]/aten.mul",
    "1002": "NaiveRMSNorm[0]/function[2]/aten.mean",
    "1003": "NaiveRMSNorm[0]/function[3]/aten.add_",  # in-place name: no key_averages() row is called aten::add_
    "1004": None,  # rsqrt's NEFF has no framework name: Explorer cannot map it to an op
    "1005": "FusedRMSNorm[0]/function[1]/aten._fused_rms_norm",
    "2001": None,  # a compiled graph: no single framework op
    "3001": "NkiKernel[0]/nki.tensor_add",
}


def device_key(name: str, table: dict[str, float]) -> str | None:
    """The table entry a host event runs as (a compiled region by its prefix), None when it runs nothing."""
    if name in table:
        return name
    return COMPILED_REGION if name.startswith(COMPILED_REGION) and COMPILED_REGION in table else None


def neff_of(key: str) -> str:
    """The NEFF hash an op runs as; an op a test planted beyond the table runs as one NEFF of its own."""
    return NEFFS.get(key) or str(9000 + sum(map(ord, key)))


def _inside(inner: Any, outer: Any) -> bool:
    return (
        inner is not outer
        and inner.thread == outer.thread
        and outer.time_range.start <= inner.time_range.start
        and inner.time_range.end <= outer.time_range.end
    )


def executions(events: Iterable[Any], table: dict[str, float], is_host: Callable[[Any], bool]) -> list[Any]:
    """The host events that launch device work: named in `table`, not inside another such event (the ops of a
    compiled graph run as its one NEFF), in start order."""
    named = [e for e in events if is_host(e) and device_key(e.name, table)]
    return sorted((e for e in named if not any(_inside(e, o) for o in named)), key=lambda e: e.time_range.start)
