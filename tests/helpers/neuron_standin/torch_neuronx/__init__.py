"""STAND-IN for torch-neuronx (tests only). It is not TorchNeuron and runs nothing on a NeuronCore.

Mirrors the public surface neuronexp uses, as documented by the Neuron SDK 2.31-2.33 docs and the
April-2026 TorchNeuron source: `torch.neuron.{is_available, device_count, synchronize,
get_device_properties}`, `get_fallback_ops`, `clear_op_tracking`, `is_neuron_runtime_initialized`,
memory queries, `torch_neuronx.profiling`, and a `neuron` torch.compile backend. Tensors stay on the CPU (the tests
point the backend's `device_type` at "cpu"). `STATE` records what the backend did so tests can assert on it, and sets
what the emulated runtime does: the planted device time of each op (`device_us`, planted.py) and `switches`, one per
question the Neuron docs leave open, each with both answers (tests run every combination). Its version pairs with the
installed torch the way a TorchNeuron release does (`<torch major>.<minor>.3.0`), with `+standin` to say what it is.
"""

from __future__ import annotations


def _autoload() -> None:
    """torch's device-backend autoload (`import torch` loads the `torch.backends` entry point, as TorchNeuron's
    `torch_neuronx:_autoload` does; TORCH_DEVICE_BACKEND_AUTOLOAD=0 turns it off): importing this module is the work.
    Defined before `import torch`, as TorchNeuron defines it: `import torch_neuronx` first imports torch, whose
    autoload then finds this module half-imported."""


import importlib  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
import types  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from typing import Any  # noqa: E402

import torch  # noqa: E402
from planted import DEVICE_US  # noqa: E402  (the stand-in's folder is on the path)

__standin__ = True
__version__ = ".".join(torch.__version__.split("+")[0].split(".")[:2]) + ".3.0+standin"


@dataclass
class Switches:
    """The open questions of docs/neuron.md, "What is verified and what is not", each as a switch with every answer.
    From outside (a plain `neuronexp backend=neuron` process): NEURON_STANDIN_SWITCHES="key=value,..." (switches())."""

    # Where device time shows in key_averages(): "events", PrivateUse1 kernels correlated with their host op (only
    # with correlate_device_time=True taken by NeuronConfig); "host_rows", on the host op itself, as torch 2.13 does
    # with a PrivateUse1 profiler stub's privateuse1_elapsed_us() (a "legacy" kernel, whatever correlate says);
    # "none", nowhere (the April-2026 plug-in feeds Kineto no device activities).
    key_averages: str = "events"
    # When the runtime writes its files: "stop", at the profiler's exit (after on_trace_ready, as nrt_inspect_stop at
    # the Kineto session's end would); "export", inside NeuronProfiler.export_trace.
    capture_written: str = "stop"
    # Where the runtime capture starts: "active", with the schedule's active steps; "warmup", already at the warm-up
    # step (the Kineto session is prepared there), so capture-wide figures cover one step more.
    capture_from: str = "active"
    # nc_exec_running events in the runtime's system trace (ntrace.pb); False: a trace without them.
    runtime_events: bool = True
    # The profiled steps' spans (ProfilerStep#N) on the system trace's clock, where Explorer places the framework
    # trace's events; False: a trace without them (the window then comes from the execution count).
    step_spans: bool = True
    # The runtime's and driver's own activities in the profile, typed CPU by PyTorch (privateuse1_runtime), nested in
    # the op that launched them.
    runtime_rows: bool = False
    # The executions' flow ids in the system trace: "per_execution", "shared" (one id for every execution), "absent".
    flow_ids: str = "per_execution"
    # Which NEFFs neff_cache_dir brings into the capture at stop: "ran", those its executions ran; "cache", every NEFF
    # in the cache (other cells' too, as a shared cache copied whole would).
    neff_copy: str = "ran"
    # The profiling API (torch_neuronx.profiling.select_api): "documented", "no_correlate" (NeuronConfig without the
    # parameter), "kwargs_drop" (NeuronConfig(**kwargs) that drops unknown keys), "legacy" (April 2026), "none".
    api: str = "documented"


def switches(text: str) -> Switches:
    """Switches from "key=value,key=value" (booleans as 1/0, true/false); an unknown key or value is an error."""
    out = Switches()
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, _, value = item.partition("=")
        if not hasattr(out, key):
            raise ValueError(f"NEURON_STANDIN_SWITCHES: no switch {key!r}; the switches: {', '.join(vars(out))}")
        default = getattr(out, key)
        setattr(out, key, value.lower() in ("1", "true", "yes", "on") if isinstance(default, bool) else value)
    return out


@dataclass
class _State:
    log: list[str] = field(default_factory=list)  # "sync" per synchronize(); tests add their own entries
    runtime_started: bool = False
    # The NEFF cache variable when `import torch_neuronx` ran (a TorchNeuron reading it at import would use this).
    neff_cache_at_import: str | None = field(default_factory=lambda: os.environ.get("TORCH_NEURONX_NEFF_CACHE_DIR"))
    env_at_start: dict[str, str | None] = field(default_factory=dict)
    fallback_ops: list[str] = field(default_factory=list)
    total_memory: int = 96 * 2**30
    peak_reserved: int = 2**30
    configs: list[dict[str, Any]] = field(default_factory=list)  # kwargs of every NeuronConfig made
    legacy_sessions: list[dict[str, Any]] = field(default_factory=list)
    # Host op -> device microseconds per call on the emulated NeuronCore (planted.DEVICE_US): what the runtime's
    # executions, the device events in key_averages() and Explorer's tables all measure.
    device_us: dict[str, float] = field(default_factory=lambda: dict(DEVICE_US))
    switches: Switches = field(default_factory=lambda: switches(os.environ.get("NEURON_STANDIN_SWITCHES", "")))
    # NeuronCores of the emulated host: the runtime reserves them all unless NEURON_RT_NUM_CORES or
    # NEURON_RT_VISIBLE_CORES says otherwise (runtime configuration guide), and captures each reserved one.
    host_cores: int = 8
    reserved: list[int] = field(default_factory=list)  # the cores the runtime reserved when it started
    runtime_scale: float = 1.0  # the runtime trace's durations x this (1: the same work every source sees)
    memory_snapshot: bool = False  # also write a memory snapshot into the capture
    # NEFF -> the TORCH_NEURONX_NEFF_CACHE_DIR in force when the emulated compiler first wrote it (None: unset)
    compiled: dict[str, str | None] = field(default_factory=dict)
    legacy_capture: Any = None  # the April-2026 profiler's capture while it runs (torch_neuronx._runtime)
    metrics_enabled: bool = False  # torch_neuronx.metrics: collection on (off by default, as TorchNeuron's)
    counters: dict[str, int] = field(default_factory=dict)  # the compilation cache's counters (torch_neuronx.metrics)
    graphs: list[Any] = field(default_factory=list)  # torch.compile's per-graph compile records (get_dynamo_metrics)


STATE = _State()


def _start_runtime() -> None:
    if not STATE.runtime_started:
        STATE.runtime_started = True
        STATE.env_at_start = {k: os.environ.get(k) for k in ("NEURON_RT_VISIBLE_CORES", "NEURON_RT_NUM_CORES")}
        visible, number = STATE.env_at_start["NEURON_RT_VISIBLE_CORES"], STATE.env_at_start["NEURON_RT_NUM_CORES"]
        count = sum(_span(part) for part in visible.split(",")) if visible else int(number or STATE.host_cores)
        STATE.reserved = list(range(min(count, STATE.host_cores)))  # process-local numbering, from 0


def _span(part: str) -> int:
    low, _, high = part.partition("-")
    return int(high or low) - int(low) + 1


def is_neuron_runtime_initialized() -> bool:
    return STATE.runtime_started


def device_count() -> int:
    _start_runtime()  # assume the worst: a device query starts the runtime
    _point_backend_at_host()
    return len(STATE.reserved)


def synchronize(device: Any = None) -> None:
    STATE.log.append("sync")


def get_fallback_ops() -> list[str]:
    return list(STATE.fallback_ops)


def clear_op_tracking() -> None:
    STATE.fallback_ops.clear()


def max_memory_reserved(device: Any = None) -> int:
    return STATE.peak_reserved


def max_memory_allocated(device: Any = None) -> int:
    return STATE.peak_reserved // 2


class _Props:
    name = "NeuronCore stand-in (CPU)"

    @property
    def total_memory(self) -> int:
        return STATE.total_memory


neuron = types.ModuleType("torch.neuron", "stand-in of torch.neuron")
neuron.is_available = lambda: device_count() > 0
neuron.device_count = device_count
neuron.synchronize = synchronize
neuron.current_device = lambda: 0
neuron.get_device_properties = lambda device=0: _Props()
neuron.max_memory_reserved = max_memory_reserved
neuron.max_memory_allocated = max_memory_allocated
neuron.get_dynamo_metrics = lambda: list(STATE.graphs)

# The real package registers its device module here (torch._register_device_module); a plain attribute
# keeps the stand-in removable, and the test fixture deletes it again.
torch.neuron = neuron  # type: ignore[attr-defined]

from . import _device_events, _runtime, metrics, profiling  # noqa: E402, F401  (set by `import torch_neuronx`)

_device_events.install()
_runtime.install()


def _point_backend_at_host() -> None:
    """The stand-in has no device of its own: its tensors stay on the CPU (NEURON_STANDIN_DEVICE names another), so a
    plain `neuronexp backend=neuron` with only this folder on PYTHONPATH runs on it too, as a test's subprocess does.
    Done at import, and again at the device query the backend makes before it picks its device: autoloaded while
    neuronexp's Neuron backend module was still importing torch, that module's class did not exist yet."""
    module = sys.modules.get("neuronexp.backends.neuron.neuron_backend")
    if module is None:
        module = importlib.import_module("neuronexp.backends.neuron.neuron_backend")
    if hasattr(module, "NeuronBackend"):
        module.NeuronBackend.device_type = os.environ.get("NEURON_STANDIN_DEVICE") or "cpu"


_point_backend_at_host()
