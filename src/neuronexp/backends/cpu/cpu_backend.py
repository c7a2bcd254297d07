"""The host CPU: always available; the profile's "device" columns hold CPU self time."""

from __future__ import annotations

import platform
from functools import lru_cache

from neuronexp.backends.base import Backend


@lru_cache(maxsize=1)
def cpu_model_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "cpu"


class CpuBackend(Backend):
    name = "cpu"
    relocates_inputs = True  # a kernel's speed here depends on where its operands sit (cell.build.Built.relocate)

    def device_name(self) -> str:
        return cpu_model_name()
