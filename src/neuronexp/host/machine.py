"""What the kernel says about CPU noise on this host, as pyperf records it: the frequency governor, turbo/boost, SMT,
the CPUs kept from the scheduler (isolcpus) and from the timer tick (nohz_full), and the kernel command line. For
env.json, and for compare to name what differs between two machines. Read from /sys and /proc as they are: a value
the kernel does not expose here is "unknown", never guessed (a VM often has no cpufreq at all)."""

from __future__ import annotations

from pathlib import Path

UNKNOWN = "unknown"
_CPU = Path("/sys/devices/system/cpu")
_PROC = Path("/proc")


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _cpu_list(path: Path) -> str:
    """A CPU list file (`isolated`, `nohz_full`): its list, "none" when empty, unknown when the kernel has none."""
    text = _read(path)
    return UNKNOWN if text is None else text if text and text != "(null)" else "none"


def _governor(cpu: Path) -> str:
    """Each CPU's scaling governor: one word when all agree, else `cpu0=performance,cpu1=powersave`."""
    found = {
        d.name: text
        for d in sorted(cpu.glob("cpu[0-9]*"), key=lambda d: int(d.name[3:]))
        if (text := _read(d / "cpufreq" / "scaling_governor"))
    }
    if not found:
        return UNKNOWN
    kinds = set(found.values())
    return kinds.pop() if len(kinds) == 1 else ",".join(f"{k}={v}" for k, v in found.items())


def _boost(cpu: Path) -> str:
    """Turbo/boost: cpufreq's `boost` (acpi-cpufreq, amd-pstate), or intel_pstate's `no_turbo` (1: off)."""
    boost = _read(cpu / "cpufreq" / "boost")
    if boost in ("0", "1"):
        return "on" if boost == "1" else "off"
    no_turbo = _read(cpu / "intel_pstate" / "no_turbo")
    if no_turbo in ("0", "1"):
        return "off" if no_turbo == "1" else "on"
    return UNKNOWN


def _smt(cpu: Path) -> str:
    """Simultaneous multithreading: `smt/active` (1 on, 0 off), with `smt/control` where it says more (forceoff,
    notsupported)."""
    active, control = _read(cpu / "smt" / "active"), _read(cpu / "smt" / "control")
    if active not in ("0", "1"):
        return control or UNKNOWN
    state = "on" if active == "1" else "off"
    return state if control in (None, state) else f"{state} ({control})"


def cpu_noise(cpu: Path = _CPU, proc: Path = _PROC) -> dict[str, str]:
    """{governor, boost, smt, isolcpus, nohz_full, kernel_cmdline} of this host (`cpu`, `proc`: where to read them)."""
    return {
        "governor": _governor(cpu),
        "boost": _boost(cpu),
        "smt": _smt(cpu),
        "isolcpus": _cpu_list(cpu / "isolated"),
        "nohz_full": _cpu_list(cpu / "nohz_full"),
        "kernel_cmdline": _read(proc / "cmdline") or UNKNOWN,
    }
