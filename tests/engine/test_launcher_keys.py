"""launcher.* keys from the command line as a user types them: launcher.isolate=true puts the basic launcher's
cells on a device slot, and launcher.pool decides which cores that slot is made of."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest

import neuronexp
from helpers import FAST

QUICK = [a for a in FAST if not a.startswith("input.shape")]


@pytest.mark.slow
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 CPU cores: a pool smaller than the host")
@pytest.mark.parametrize("sweeper", [[], ["hydra/sweeper=basic"]], ids=["neuronexp's sweeper", "another sweeper"])
def test_isolate_true_under_the_basic_launcher_pins_cells_to_a_slot_from_launcher_pool(
    cli, tmp_path: Path, sweeper: list[str]
) -> None:
    # Under another sweeper, Hydra runs each cell as a job of its own (engine.job.run_hydra_job): the same slot.
    cores = sorted(os.sched_getaffinity(0))
    last = cores[-1]
    sweep = tmp_path / "sweep"
    res = cli(
        "-m",
        *sweeper,
        "module=rmsnorm_naive,rmsnorm_fused",
        "input.shape=[1,8,64]",
        *QUICK,
        "launcher.isolate=true",
        f"launcher.pool={last}",
        f"launcher.lock_dir={tmp_path / 'locks'}",
        f"hydra.sweep.dir={sweep}",
    )
    assert res.returncode == 0, res.stderr
    # Hydra's own sweeper aggregates nothing: each job directory holds its cell.
    jobs = [sweep] if not sweeper else sorted(p.parent for p in sweep.glob("*/cells.parquet"))
    cells = pd.concat([neuronexp.load(job).cells for job in jobs], ignore_index=True)
    assert len(cells) == 2 and (cells["status"] == "ok").all()
    # Without a slot (isolate null, basic launcher) or without the pool (the host's cores split over one slot),
    # the cells would run on every core of the sweep: cpu:0-1 here. With both: the one core the pool names.
    assert set(cells["placement"]) == {f"cpu:{last}"} and set(cells["placement_cpus"].astype(str)) == {str(last)}
    assert os.getpid() not in set(cells["worker_pid"]) and cells["worker_pid"].nunique() == 2
