"""The table of backends: read without torch, tried by backend=auto in its order, one row per backend that says what
the other stages need (slot environment, pool, placement, the peaks key) and agrees with the backend it builds."""

from __future__ import annotations

import subprocess
import sys

import pytest

from neuronexp.backends import BACKENDS, HOST, backend_info, backend_kind, named_backend, resolve_backend
from neuronexp.cellprocess.launch import default_pool
from neuronexp.cellprocess.placement import plan_slots
from neuronexp.config import ConfigError, LauncherConfig, RunConfig, format_units
from neuronexp.host.threads import host_cpus


def test_reading_the_table_imports_no_torch() -> None:
    # The sweep plans with it, and the fork server's template reads it before torch sets its environment up.
    code = (
        "import sys\nimport neuronexp.backends.table, neuronexp.cellprocess.placement\n"
        "import neuronexp.cellprocess.forksafety\n"
        "print([m for m in ('torch', 'pandas') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "[]", out.stderr[-2000:]


def test_auto_tries_the_table_in_order_and_ends_on_the_host() -> None:
    assert BACKENDS[-1] is HOST and HOST.on_host and HOST.present()
    assert named_backend("auto") is None and named_backend(HOST.name) is HOST
    assert backend_kind("auto") == next(b.name for b in BACKENDS if b.present())
    assert resolve_backend(HOST.name).name == HOST.name
    with pytest.raises(KeyError, match="the table has"):
        backend_info("nosuch")


def test_each_row_says_what_the_sweep_and_the_cell_need() -> None:
    for info in BACKENDS:
        assert info.unit and info.placement(None).startswith(f"{info.name}:")
        assert info.on_host == (info.peaks_key is None)  # nothing is published for the host: its roofs are measured
        assert not info.unit_ranges or info.visible_devices  # a range is what its visible-devices variable takes


def test_the_host_pool_is_this_process_s_cores_and_a_gpu_pool_the_visible_devices(monkeypatch) -> None:
    assert HOST.count_units() == [str(c) for c in host_cpus()]
    assert HOST.placement(None) == f"{HOST.name}:{format_units(host_cpus())}"
    gpus = [b for b in BACKENDS if b.visible_devices and not b.unit_ranges]
    # counted once, for the slot plan and the machine check alike (cellprocess.launch)
    for info in gpus:
        monkeypatch.setenv(info.visible_devices, "3,5")
        assert (
            info.count_units() == ["3", "5"] == default_pool(info.name, RunConfig(launcher=LauncherConfig(devices=2)))
        )
        assert [s.env()[info.visible_devices] for s in plan_slots(info.name, 2, None, ["3", "5"], [0])] == ["3", "5"]


def test_a_backend_that_is_not_here_says_why_in_one_line() -> None:
    for info in BACKENDS:
        if info.present():
            continue
        with pytest.raises(ConfigError, match=f"^backend={info.name}: .*; use backend=auto or backend={HOST.name}$"):
            resolve_backend(info.name)
