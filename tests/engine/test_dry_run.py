"""`sweep.dry_run=true` lists every cell of a sweep (its directory, run_id, label, whether it is cached) with a
time estimate, and runs and writes nothing; `-m` with `--cfg job` is one line, not Hydra's traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from omegaconf import OmegaConf

from helpers import FAST
from neuronexp.engine.dryrun import COMPILE_S, OVERHEAD_S, dry_run_lines, estimate_s
from neuronexp.engine.planned import PlannedCell
from neuronexp.results import arrow_table
from neuronexp.results.files import write_job_tables


def _cells() -> list[PlannedCell]:
    return [
        PlannedCell(
            num=0,
            dir="0",
            overrides=["module=rmsnorm_naive"],
            run_id="aaaa000000000000",
            backend="cpu",
            label="module=rmsnorm_naive",
        ),
        PlannedCell(
            num=1,
            dir="1",
            overrides=["module=rmsnorm_compiled"],
            run_id="bbbb000000000000",
            backend="cpu",
            label="module=rmsnorm_compiled",
            compiled=True,
        ),
    ]


def test_the_list_says_which_cells_are_cached_and_estimates_the_rest(tmp_path: Path) -> None:
    (tmp_path / "0").mkdir()
    write_job_tables(
        tmp_path / "0",
        {
            "cells": arrow_table("cells", [{"run_id": "aaaa000000000000", "status": "ok"}]),
            "ops": arrow_table("ops", []),
            "samples": arrow_table("samples", []),
        },
    )
    before = sorted(p.name for p in tmp_path.rglob("*"))
    cells = _cells()
    lines = dry_run_lines(cells, tmp_path, OmegaConf.create({"timing": {"max_seconds": 3.0}}))
    assert lines[0] == f"dry run: 2 cell(s) for {tmp_path} (nothing is run or written)"
    assert lines[2].split() == ["0", "aaaa000000000000", "cached", "module=rmsnorm_naive"]
    assert lines[3].split()[:4] == ["1", "bbbb000000000000", "to", "run"]
    assert lines[-1].startswith(f"1 to run, 1 cached · estimate: about {3 + OVERHEAD_S + COMPILE_S:.0f} s")
    assert sorted(p.name for p in tmp_path.rglob("*")) == before and [c.dir for c in cells] == ["0", "1"]
    assert estimate_s(cells, 5.0) == 2 * (5 + OVERHEAD_S) + COMPILE_S


def test_with_a_precision_the_estimate_runs_from_the_least_a_group_takes_up_to_its_budget(tmp_path: Path) -> None:
    timing = {"max_seconds": 3.0, "min_seconds": 0.5, "precision": 0.02, "min_rounds": 10, "rounds": 20}
    cells = [c for c in _cells() if not c.compiled]
    line = dry_run_lines(cells, tmp_path, OmegaConf.create({"timing": timing, "baseline": "rmsnorm_naive"}))[-1]
    least, most = 0.5 * 10 / 20 + OVERHEAD_S, 3 + OVERHEAD_S
    assert line.startswith(
        f"1 to run, 0 cached · estimate: {least:.0f} s up to {most:.0f} s: each comparison group is "
    )
    assert "known within ±2% (timing.precision), up to 3 s of timing a cell (timing.max_seconds)" in line
    alone = dry_run_lines(cells, tmp_path, OmegaConf.create({"timing": timing}))[-1]  # no baseline: no groups
    assert alone.startswith(f"1 to run, 0 cached · estimate: about {most:.0f} s (up to 3 s of timing a cell")
    fixed = dry_run_lines(cells, tmp_path, OmegaConf.create({"timing": {**timing, "precision": None}, "baseline": "x"}))
    assert "about 5 s (up to 3 s" in fixed[-1] and "precision" not in fixed[-1]


@pytest.mark.slow  # two commands, about 8 s on the 2-core VM
def test_a_dry_run_sweep_lists_its_cells_and_writes_nothing(cli, tmp_path: Path) -> None:
    sweep = tmp_path / "sweep"
    res = cli("-m", "module=rmsnorm_naive,rmsnorm_fused", *FAST, "sweep.dry_run=true", f"hydra.sweep.dir={sweep}")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0] == f"dry run: 2 cell(s) for {sweep} (nothing is run or written)"
    assert sum(" to run " in ln for ln in lines) == 2 and "2 to run, 0 cached · estimate: about " in res.stdout
    assert not sweep.exists()
    clash = cli("-m", "module=rmsnorm_naive,rmsnorm_fused", "--cfg", "job")
    assert clash.returncode == 2 and "Traceback" not in clash.stderr
    assert clash.stderr.strip().splitlines() == [clash.stderr.strip()] and "sweep.dry_run=true" in clash.stderr
