"""host.machine: the CPU settings env.json records, read from a /sys and /proc laid out as kernels lay them out, and
from this machine's own (whatever it exposes, the record has every key, "unknown" where the kernel says nothing)."""

from __future__ import annotations

from pathlib import Path

from neuronexp.host.machine import UNKNOWN, cpu_noise


def _tree(root: Path, files: dict[str, str]) -> tuple[Path, Path]:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n")
    (root / "cpu").mkdir(exist_ok=True)
    (root / "proc").mkdir(exist_ok=True)
    return root / "cpu", root / "proc"


def test_a_tuned_benchmark_host(tmp_path: Path) -> None:
    """pyperf's advice applied: performance governor, turbo off (intel_pstate), SMT off, CPU 1 isolated and tickless."""
    cpu, proc = _tree(
        tmp_path,
        {
            "cpu/cpu0/cpufreq/scaling_governor": "performance",
            "cpu/cpu1/cpufreq/scaling_governor": "performance",
            "cpu/intel_pstate/no_turbo": "1",
            "cpu/smt/active": "0",
            "cpu/smt/control": "off",
            "cpu/isolated": "1",
            "cpu/nohz_full": "1",
            "proc/cmdline": "BOOT_IMAGE=/vmlinuz isolcpus=1 nohz_full=1",
        },
    )
    assert cpu_noise(cpu, proc) == {
        "governor": "performance",
        "boost": "off",
        "smt": "off",
        "isolcpus": "1",
        "nohz_full": "1",
        "kernel_cmdline": "BOOT_IMAGE=/vmlinuz isolcpus=1 nohz_full=1",
    }


def test_a_laptop_with_mixed_governors_and_boost(tmp_path: Path) -> None:
    cpu, proc = _tree(
        tmp_path,
        {
            "cpu/cpu0/cpufreq/scaling_governor": "performance",
            "cpu/cpu10/cpufreq/scaling_governor": "powersave",
            "cpu/cpu2/cpufreq/scaling_governor": "powersave",
            "cpu/cpufreq/boost": "1",
            "cpu/smt/active": "1",
            "cpu/smt/control": "on",
            "cpu/isolated": "",
            "cpu/nohz_full": "(null)",
        },
    )
    found = cpu_noise(cpu, proc)
    assert found["governor"] == "cpu0=performance,cpu2=powersave,cpu10=powersave"  # in CPU order, not text order
    assert (found["boost"], found["smt"], found["isolcpus"], found["nohz_full"]) == ("on", "on", "none", "none")


def test_a_vm_that_exposes_nothing_says_unknown_not_a_guess(tmp_path: Path) -> None:
    cpu, proc = _tree(tmp_path, {"cpu/smt/control": "notsupported", "cpu/smt/active": "0"})
    found = cpu_noise(cpu, proc)
    assert found == {
        "governor": UNKNOWN,
        "boost": UNKNOWN,
        "smt": "off (notsupported)",
        "isolcpus": UNKNOWN,
        "nohz_full": UNKNOWN,
        "kernel_cmdline": UNKNOWN,
    }


def test_this_machine_has_every_key() -> None:
    found = cpu_noise()
    assert set(found) == {"governor", "boost", "smt", "isolcpus", "nohz_full", "kernel_cmdline"}
    assert all(isinstance(v, str) and v for v in found.values())
    assert found["kernel_cmdline"] == (Path("/proc/cmdline").read_text().strip() or UNKNOWN)
