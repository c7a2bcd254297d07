"""Whether the device slots a config asks for (`launcher.devices`, `launcher.per_device`, `launcher.pool`) exist
on this machine, checked before any cell runs: otherwise every cell would become the same error row, or wait
for a slot that can never be free."""

from __future__ import annotations

from neuronexp.backends.table import backend_info
from neuronexp.cellprocess.launch import default_pool
from neuronexp.cellprocess.placement import PlacementError, plan_slots
from neuronexp.config import ConfigError, RunConfig, format_units, parse_units
from neuronexp.host.threads import host_cpus


def check_slots_fit(kind: str, config: RunConfig) -> None:
    """ConfigError: `launcher.pool` names units this machine lacks, or the slots need more units than there are."""
    info, launcher = backend_info(kind), config.launcher
    units = info.count_units()  # None where they cannot be counted without starting the device runtime
    if launcher.pool and units is not None:
        beyond = [u for u in parse_units(launcher.pool) if u not in units]
        if beyond:
            raise ConfigError(
                "launcher.pool",
                launcher.pool,
                f"{info.unit} {format_units(beyond)} are not on this machine; it has {format_units(units) or 'none'}",
            )
    try:
        plan_slots(kind, launcher.devices, launcher.per_device, default_pool(kind, config), host_cpus())
    except PlacementError as exc:
        raise ConfigError("launcher.devices", launcher.devices, f"does not fit this machine ({exc})") from None
