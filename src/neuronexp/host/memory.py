"""The host's memory available to a new allocation now: the kernel's estimate, MemAvailable in /proc/meminfo (free
memory plus the page cache and reclaimable slabs it can drop without swapping). Imports nothing heavy: the planning
of a run asks it before torch is imported."""

from __future__ import annotations

from pathlib import Path


def available_bytes(meminfo: Path = Path("/proc/meminfo")) -> int | None:
    """MemAvailable in bytes; None where the file or the line is missing (not Linux, a kernel before 3.14)."""
    try:
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None
