"""The cell process, as a sweep makes it: forked from the fork server's template, sent its cell as a typed spec,
run through the cell processes' own entry point. It builds and runs the cell with no Hydra in it (the config was
composed and checked before it; the module is built from plain values: config.targets.instantiate)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pandas as pd

from helpers import forked
from neuronexp.cellprocess.childproc import ForkRequest
from neuronexp.cellprocess.forkserver import ForkServer, run_forked
from neuronexp.config import (
    BackendName,
    CellSpec,
    DType,
    InputConfig,
    ProbeMode,
    ProfilerConfig,
    RooflineConfig,
    RunConfig,
    ScheduleConfig,
    TimingConfig,
)


def test_a_cell_process_runs_its_cell_without_hydra(tmp_path: Path) -> None:
    job = tmp_path / "job"
    job.mkdir()
    config = RunConfig(
        module={"_target_": "neuronexp.modules.NaiveRMSNorm", "hidden_size": 64},
        input=InputConfig(shape=[1, 8, 64], dtype=DType.float32),
        backend=BackendName.cpu,
        profiler=ProfilerConfig(schedule=ScheduleConfig(wait=0, warmup=1, active=1, repeat=1)),
        timing=TimingConfig(min_seconds=0, warmup=1, iters=3, min_iters=3, rounds=1),
        roofline=RooflineConfig(probe=ProbeMode.off),
    )
    spec = CellSpec(config=config, run_id="no-hydra", experiment="test", module_name="rmsnorm_naive", out_dir=str(job))
    seen = tmp_path / "seen.json"
    request = ForkRequest.to_run(
        forked.cell_then_modules,
        {"spec": spec, "out": str(seen)},
        env=dict(os.environ),
        cwd=str(tmp_path),
        sys_path=list(sys.path),
        log=str(job / "cell.log"),
    )
    with ForkServer():
        ended = run_forked(request, timeout_s=300)
    assert ended.code == 0, (job / "cell.log").read_text()
    assert pd.read_parquet(job / "cells.parquet")["status"].tolist() == ["ok"]
    assert json.loads(seen.read_text())["hydra"] == []
