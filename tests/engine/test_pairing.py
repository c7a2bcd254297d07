"""Which cells of a sweep are timed together (engine.grouping), and a real sweep timed paired: its speedups, intervals
and samples, and the fallbacks that say they are unpaired."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import neuronexp
from helpers import FAST, run_cli
from neuronexp.analysis.baseline import parse_baseline
from neuronexp.engine.grouping import comparison_units, still_to_run, unpaired_reason
from neuronexp.engine.planned import PlannedCell


def _cell(
    num: int, overrides: list[str], backend: str = "cpu", process_key: str = "p", isolated: bool = False
) -> PlannedCell:
    return PlannedCell(
        num=num,
        dir=str(num),
        overrides=overrides,
        run_id=f"r{num}",
        backend=backend,
        label=" ".join(overrides),
        process_key=process_key,
        isolated=isolated,
    )


def plan_units(cells: list[PlannedCell], baseline, todo: set[str], unpaired: str | None = None):
    """The units still to run, and every note the sweep logs: as engine.sweeper asks engine.grouping."""
    units, notes = comparison_units(cells, baseline, unpaired)
    waiting, more = still_to_run(units, todo)
    return waiting, [*notes, *more]


def _grid() -> list[PlannedCell]:
    mods, shapes = ["rmsnorm_naive", "rmsnorm_fused", "rmsnorm_compiled"], ["[1,8,64]", "[1,16,64]"]
    return [
        _cell(i, [f"module={m}", f"input.shape={s}"]) for i, (m, s) in enumerate((m, s) for m in mods for s in shapes)
    ]


def test_each_group_of_the_baseline_runs_as_one_unit_where_its_first_cell_stands() -> None:
    cells = _grid()  # module-major: naive 8, naive 16, fused 8, fused 16, compiled 8, compiled 16
    units, notes = plan_units(cells, parse_baseline({"module": "rmsnorm_naive"}), {c.run_id for c in cells})
    assert [[c.num for c in u.cells] for u in units] == [[0, 2, 4], [1, 3, 5]]
    assert all(u.group for u in units) and not notes


def test_without_a_baseline_every_cell_runs_alone() -> None:
    cells = _grid()
    units, _ = plan_units(cells, None, {c.run_id for c in cells})
    assert [len(u.cells) for u in units] == [1] * 6 and all(u.group is None for u in units)


def test_a_group_with_complete_cells_times_the_rest_together_and_says_so() -> None:
    cells = _grid()
    todo = {c.run_id for c in cells} - {"r0"}  # the naive [1,8,64] cell is cached
    units, notes = plan_units(cells, parse_baseline({"module": "rmsnorm_naive"}), todo)
    assert [[c.num for c in u.cells] for u in units] == [[1, 3, 5], [2, 4]]
    assert len(notes) == 1 and "complete already" in notes[0] and "unpaired" in notes[0]


@pytest.mark.parametrize(
    "change, reason",
    [
        ({"backend": "neuron"}, "Neuron"),
        ({"process_key": "other"}, "differ in threads"),
        ({"isolated": True}, "launcher.isolate"),
    ],
)
def test_cells_that_cannot_share_a_process_are_timed_alone_with_the_reason(change: dict, reason: str) -> None:
    cells = _grid()
    for k, v in change.items():
        setattr(cells[2], k, v)
    units, notes = plan_units(cells, parse_baseline({"module": "rmsnorm_naive"}), {c.run_id for c in cells})
    assert [len(u.cells) for u in units] == [1, 3, 1, 1]
    assert len(notes) == 1 and reason in notes[0]


def test_an_executor_that_runs_a_cell_a_process_pairs_nothing_and_says_why_once() -> None:
    cells = _grid()
    units, notes = plan_units(cells, parse_baseline({"module": "rmsnorm_naive"}), {c.run_id for c in cells}, "why")
    assert [len(u.cells) for u in units] == [1] * 6 and notes == [
        'speedups are unpaired: why (docs/timing.md, "Paired timing")'
    ]
    assert plan_units(cells, None, {c.run_id for c in cells}, "why")[1] == []  # no baseline: nothing to pair


def test_a_baseline_on_a_process_key_is_never_paired() -> None:
    cells = [_cell(0, ["threads=1"]), _cell(1, ["threads=2"])]
    assert "threads" in unpaired_reason(parse_baseline({"threads": "1"}), cells)
    units, notes = plan_units(cells, parse_baseline({"threads": "1"}), {"r0", "r1"})
    assert [len(u.cells) for u in units] == [1, 1] and "threads" in notes[0]


@pytest.mark.slow  # a real sweep of 4 cells, then a rerun (about 15 s on 2 busy cores)
def test_a_real_sweep_is_timed_paired_and_a_partial_rerun_says_what_is_unpaired(tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    args = [
        "-m",
        "module=rmsnorm_naive,rmsnorm_fused",
        "input.shape=[1,8,64],[1,16,64]",
        "baseline=rmsnorm_naive",
        *[a for a in FAST if not a.startswith("input.shape")],
        "timing.iters=30",
        "roofline.probe=off",
        f"hydra.sweep.dir={out}",
    ]
    res = run_cli(args, cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-2000:]
    cells, _, samples = neuronexp.load(out)
    fused = cells[cells["module"] == "rmsnorm_fused"]
    naive = cells[cells["module"] == "rmsnorm_naive"].set_index("input_shape")
    assert (fused["speedup_method"] == "paired").all()
    assert (fused["speedup_ci_low"] <= fused["speedup_vs_baseline"]).all()
    assert (fused["speedup_vs_baseline"] <= fused["speedup_ci_high"]).all()
    for _, f in fused.iterrows():  # each fused cell was timed with its own shape's naive cell, pair by pair
        ref = naive.loc[f["input_shape"]]
        assert f["timing_group"] == ref["timing_group"] and isinstance(f["timing_group"], str)
        mine = samples[samples["run_id"] == f["run_id"]]
        theirs = samples[samples["run_id"] == ref["run_id"]]
        assert list(mine["pair"]) == list(theirs["pair"]) == list(range(30))
    assert naive["speedup_method"].isna().all() and (naive["speedup_vs_baseline"] == 1.0).all()
    assert re.search(r"×\d+\.\d\d \(\d+\.\d\d–\d+\.\d\d\)", res.stdout)  # the interval is shown
    # One cell's files removed: rerun, it is timed alone against a reused baseline and says so.
    victim = fused[fused["input_shape"] == "[1,8,64]"].iloc[0]
    job = next(
        p
        for p in out.iterdir()
        if p.is_dir()
        and (p / "cells.parquet").is_file()
        and neuronexp.load(p).cells["run_id"].iloc[0] == victim["run_id"]
    )
    (job / "cells.parquet").unlink()
    res = run_cli(args, cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-2000:]
    again = neuronexp.load(out).cells.set_index("run_id")
    assert again.loc[victim["run_id"], "speedup_method"] == "unpaired"
    assert "speedup unpaired" in again.loc[victim["run_id"], "warnings"]
    assert "†" in res.stdout and "unpaired" in res.stdout


@pytest.mark.slow  # a real sweep under submitit's local launcher (about 10 s)
def test_a_launcher_that_runs_a_cell_a_process_gives_unpaired_speedups_and_says_so(tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    res = run_cli(
        [
            "-m",
            "module=rmsnorm_naive,rmsnorm_fused",
            "baseline=rmsnorm_naive",
            *FAST,
            "roofline.probe=off",
            "hydra/launcher=submitit_local",
            f"hydra.sweep.dir={out}",
        ],
        cwd=tmp_path,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    fused = neuronexp.load(out).cells.set_index("module").loc["rmsnorm_fused"]
    assert fused["speedup_method"] == "unpaired" and "speedup unpaired" in fused["warnings"]
    assert "speedups are unpaired" in res.stderr + res.stdout
