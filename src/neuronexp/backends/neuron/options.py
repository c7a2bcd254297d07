"""The checks of Neuron's options (`neuron.*`, `profiler.neuron.*`, keys of config/schema.py): plain values, on every
config before any work. Sources: the Neuron runtime developer guide (NEURON_RT_VISIBLE_CORES) and the TorchNeuron
torch.compile backend reference (SDK 2.33); docs/neuron.md quotes them."""

from __future__ import annotations

from neuronexp.backends.neuron.neff_cache import check_cache
from neuronexp.backends.neuron.sdk import neuron_present
from neuronexp.config import BackendName, CompileConfig, ConfigError, RunConfig, parse_units, validate_units


def validate_visible_cores(key: str, value: str | None) -> None:
    """A core list the Neuron runtime accepts: one contiguous ascending run, written in any mix of indices and
    ranges ("3", "3-6", "3,4,5,6", "3-5,6"). "0,2" or "2,1" pass the shared grammar but not the runtime. Raises
    ConfigError naming `key`, the value and what the runtime accepts."""
    validate_units(key, value)
    if value is None:
        return
    cores = [int(u) for u in parse_units(value)]
    if cores != list(range(cores[0], cores[0] + len(cores))):
        raise ConfigError(
            key,
            value,
            "the Neuron runtime needs one contiguous ascending run of NeuronCores, "
            'e.g. "0-3", "0,1,2,3" or "0-2,3" (runtime developer guide)',
        )


def check_neuron_compile(compile_cfg: CompileConfig) -> None:
    """What torch.compile(backend="neuron") rejects or ignores, refused before any work (ConfigError):
    `compile.dynamic=true`, or a `compile.mode` other than the default."""
    if not compile_cfg.enabled:
        return
    if compile_cfg.dynamic:
        raise ConfigError(
            "compile.dynamic",
            compile_cfg.dynamic,
            'torch.compile(backend="neuron") rejects dynamic=True '
            "(TorchNeuron torch.compile reference); use false: each new input shape recompiles",
        )
    if compile_cfg.mode not in (None, "default"):
        raise ConfigError(
            "compile.mode",
            compile_cfg.mode,
            'torch.compile(backend="neuron") runs only the default mode; '
            "others log a warning and fall back to it (TorchNeuron torch.compile reference); use null",
        )


def check_options(cfg: RunConfig) -> None:
    """The profiler's Neuron options, the core selection and, where the config says so, the compile options. Raises
    ConfigError naming the key, the value and what is allowed."""
    nprof = cfg.profiler.neuron
    validate_units("profiler.neuron.capture_enabled_for_nc", nprof.capture_enabled_for_nc)
    if nprof.max_events_per_nc is not None and nprof.max_events_per_nc < 1:
        raise ConfigError("profiler.neuron.max_events_per_nc", nprof.max_events_per_nc, "must be an integer >= 1")
    if not nprof.modes:
        raise ConfigError("profiler.neuron.modes", [], "list at least one of DEVICE, RUNTIME, CPU_UTIL, HOST_MEMORY")
    if nprof.explorer_timeout_s <= 0:
        raise ConfigError("profiler.neuron.explorer_timeout_s", nprof.explorer_timeout_s, "must be > 0 seconds")
    validate_visible_cores("neuron.visible_cores", cfg.neuron.visible_cores)
    # Where the config alone says torch.compile will use the neuron backend (backend=auto decides later).
    if (cfg.compile.backend or ("neuron" if cfg.backend == BackendName.neuron else None)) == "neuron":
        check_neuron_compile(cfg.compile)
    if cfg.neuron.num_cores is not None and cfg.neuron.num_cores < 0:
        raise ConfigError("neuron.num_cores", cfg.neuron.num_cores, "must be an integer >= 0")
    if cfg.backend == BackendName.neuron or (cfg.backend == BackendName.auto and neuron_present()):
        check_cache(nprof)  # the NEFF cache's folders: this user's, written by no one else, reached through no link
