"""launcher.* keys from the command line as a user types them: launcher.isolate=true puts the basic launcher's
cells on a device slot, and launcher.pool decides which cores that slot is made of."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import neuronexp
from helpers import FAST

QUICK = [a for a in FAST if not a.startswith("input.shape")]


@pytest.mark.slow
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 CPU cores: a pool smaller than the host")
def test_isolate_true_under_the_basic_launcher_pins_cells_to_a_slot_from_launcher_pool(cli, tmp_path: Path) -> None:
    cores = sorted(os.sched_getaffinity(0))
    last = cores[-1]
    sweep = tmp_path / "sweep"
    res = cli(
        "-m",
        "module=rmsnorm_naive,rmsnorm_fused",
        "input.shape=[1,8,64]",
        *QUICK,
        "launcher.isolate=true",
        f"launcher.pool={last}",
        f"launcher.lock_dir={tmp_path / 'locks'}",
        f"hydra.sweep.dir={sweep}",
    )
    assert res.returncode == 0, res.stderr
    cells = neuronexp.load(sweep).cells
    assert len(cells) == 2 and (cells["status"] == "ok").all()
    # Without a slot (isolate null, basic launcher) or without the pool (the host's cores split over one slot),
    # the cells would run on every core of the sweep: cpu:0-1 here. With both: the one core the pool names.
    assert set(cells["placement"]) == {f"cpu:{last}"} and set(cells["placement_cpus"].astype(str)) == {str(last)}
    assert os.getpid() not in set(cells["worker_pid"]) and cells["worker_pid"].nunique() == 2
