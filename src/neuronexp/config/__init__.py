"""Stage 0, configuration: the schema, its validation (input specs and `_target_` paths included), the
device-unit grammar, the cell spec, and the composition of a Hydra config into that spec (config.compose,
the one Hydra edge of this package).

Imports nothing else from neuronexp.
"""

from neuronexp.config.errors import ConfigError
from neuronexp.config.schema import (
    BackendName,
    CompileConfig,
    DType,
    InputConfig,
    LauncherConfig,
    NeuronDeviceConfig,
    NeuronMode,
    NeuronProfilerConfig,
    ProbeMode,
    ProfilerConfig,
    RooflineConfig,
    RunConfig,
    ScheduleConfig,
    TimingConfig,
)
from neuronexp.config.spec import CellSpec, InMemory
from neuronexp.config.units import format_units, parse_units, unit_set, validate_units
from neuronexp.config.validate import validate

__all__ = [
    "BackendName",
    "CellSpec",
    "InMemory",
    "CompileConfig",
    "ConfigError",
    "DType",
    "InputConfig",
    "LauncherConfig",
    "NeuronDeviceConfig",
    "NeuronMode",
    "NeuronProfilerConfig",
    "ProbeMode",
    "ProfilerConfig",
    "RooflineConfig",
    "RunConfig",
    "ScheduleConfig",
    "TimingConfig",
    "format_units",
    "parse_units",
    "unit_set",
    "validate",
    "validate_units",
]
