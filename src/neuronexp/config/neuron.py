"""The checks only Neuron needs, on top of the shared unit grammar (config.units) and config.validate.

Sources: the Neuron runtime developer guide (NEURON_RT_VISIBLE_CORES) and the TorchNeuron torch.compile
backend reference (SDK 2.33); docs/neuron.md quotes them.
"""

from __future__ import annotations

from neuronexp.config.errors import ConfigError
from neuronexp.config.schema import BackendName, CompileConfig, RunConfig
from neuronexp.config.units import parse_units, validate_units


def validate_visible_cores(key: str, value: str | None) -> None:
    """A core list the Neuron runtime accepts: one contiguous ascending run, written in any mix of indices and
    ranges ("3", "3-6", "3,4,5,6", "3-5,6"). "0,2" or "2,1" pass the shared grammar but not the runtime.

    Raises:
        ConfigError: naming `key`, the value and what the runtime accepts.
    """
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
    """What torch.compile(backend="neuron") rejects or ignores, refused before any work.

    Raises:
        ConfigError: `compile.dynamic=true`, or a `compile.mode` other than the default.
    """
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


def compiles_for_neuron(cfg: RunConfig) -> bool:
    """Whether the config alone says torch.compile will use the neuron backend (backend=auto decides later)."""
    return (
        cfg.compile.enabled
        and (cfg.compile.backend or ("neuron" if cfg.backend == BackendName.neuron else None)) == "neuron"
    )


def validate_neuron(cfg: RunConfig) -> None:
    """Neuron's part of config.validate: the core list and, where the config says so, the compile options."""
    validate_visible_cores("neuron.visible_cores", cfg.neuron.visible_cores)
    if compiles_for_neuron(cfg):
        check_neuron_compile(cfg.compile)
