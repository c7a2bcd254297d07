"""sweep/_hydra.py repeats a few Hydra semantics to compose a sweep once per group choice; checked here
against Hydra's own full composition of every cell, so a Hydra upgrade that changes them fails loudly."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_module
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import OmegaConf

from neuronexp.config import ConfigError
from neuronexp.engine._hydra import CellComposer, subdir_override
from neuronexp.engine.plan import check_distinct, grid, plan_sweep
from neuronexp.engine.planned import PlannedCell

JOBS = [
    ["module=rmsnorm_fused", "input.shape=[1,8,64]", "input.dtype=float32"],
    ["module=rmsnorm_naive", "input.shape=[2,4,32]", "timing.iters=7", "+experiment=rmsnorm_sweep"],
    ["module=rmsnorm_compiled", "++compile.mode=max-autotune", "profiler=quick", "~module.eps"],
    ["input.shape=[1,16,128]", "profiler.schedule.repeat=3", "baseline=null"],
    # What a sweep's job carries besides its task overrides: its planned directory (sweep.sweeper).
    ["module=rmsnorm_fused", "input.shape=[1,8,64]", subdir_override("input.shape=[1,8,64],it's")],
    ["hydra/launcher=basic", "module=rmsnorm_naive", subdir_override("7")],
]


@pytest.fixture
def loader():
    GlobalHydra.instance().clear()
    with initialize_config_module("neuronexp.conf", version_base="1.3"):
        yield GlobalHydra.instance().config_loader()
    GlobalHydra.instance().clear()


@pytest.mark.parametrize("job", JOBS)
def test_composing_once_per_group_choice_equals_hydras_composition(loader, job: list[str]) -> None:
    master = compose("config", return_hydra_config=True)
    fast = CellComposer(master, loader).compose(job, num=3)
    full = loader.load_sweep_config(master, job)
    plain = []
    for cfg in (fast, full):  # what differs by design: when it was composed, and the job's number
        c = OmegaConf.to_container(cfg, resolve=False)
        c["hydra"].pop("runtime"), c["hydra"]["job"].pop("num"), c["hydra"]["job"].pop("id")
        plain.append(c)
    assert plain[0] == plain[1]
    assert fast.hydra.overrides.task == full.hydra.overrides.task


@pytest.mark.parametrize("job", [j for j in JOBS if not any(o.startswith("hydra") for o in j)])
def test_a_single_runs_cell_is_hydras_composition_of_its_job(loader, job: list[str]) -> None:
    # A single run's invocation (Hydra's multirun mode, every override applied, none swept) is its cell's config.
    from hydra.types import RunMode

    overrides = [*job, "hydra.sweeper.single=true", "hydra.mode=MULTIRUN"]  # (as cli.main and Hydra's _run_app add)
    master = loader.load_configuration("config", overrides, run_mode=RunMode.MULTIRUN)
    fast = CellComposer(master, loader).compose_single(job)
    full = loader.load_sweep_config(master, job)
    plain = []
    for cfg in (fast, full):  # what differs by design: when it was composed, and the job's number
        c = OmegaConf.to_container(cfg, resolve=False)
        c["hydra"].pop("runtime"), c["hydra"]["job"].pop("num"), c["hydra"]["job"].pop("id")
        plain.append(c)
    assert plain[0] == plain[1]


def test_a_bad_value_names_its_key(loader) -> None:
    master = compose("config", return_hydra_config=True)
    with pytest.raises(ConfigError, match="timing.iters"):
        CellComposer(master, loader).compose(["timing.iters=many"], num=0)


def test_the_grid_is_the_basic_sweepers_product_in_its_order() -> None:
    jobs = grid({"module": "a,b"}, ["input.shape=[1,2],[3,4]", "timing.iters=5"])
    assert jobs == [
        ["module=a", "input.shape=[1,2]", "timing.iters=5"],
        ["module=a", "input.shape=[3,4]", "timing.iters=5"],
        ["module=b", "input.shape=[1,2]", "timing.iters=5"],
        ["module=b", "input.shape=[3,4]", "timing.iters=5"],
    ]


@pytest.mark.parametrize("subdir", ["3", "input.shape=[1,8,64],module=x", "it's a \\ dir", "a/b", "ends\\", "q\\'x"])
def test_a_planned_subdir_survives_hydras_override_parser(subdir: str) -> None:
    (parsed,) = OverridesParser.create().parse_overrides([subdir_override(subdir)])
    assert parsed.key_or_group == "hydra.sweep.subdir" and parsed.value() == subdir


def test_a_sweep_of_anything_but_a_list_of_values_is_refused_naming_its_key_and_value() -> None:
    with pytest.raises(ConfigError) as err:
        grid({}, ["module=a,b", "timing.iters=interval(1,3)"])
    assert str(err.value) == "timing.iters=interval(1,3): only lists of values can be swept (a,b,c or range())"


def test_each_planned_cell_carries_its_job_its_label_and_what_its_executor_reads(loader) -> None:
    master = compose("config", return_hydra_config=True)
    fixed = ["input.shape=[1,8,64]", "correctness.rtol=0.02", "correctness.atol=0.001", "launcher.isolate=true"]
    jobs = grid({"module": "rmsnorm_naive,rmsnorm_compiled"}, [*fixed, "++timing.iters=5,7"])
    cells = plan_sweep(master, jobs, CellComposer(master, loader))
    assert [(c.num, c.dir, c.overrides) for c in cells] == [(n, str(n), job) for n, job in enumerate(jobs)]
    # The label shows only what tells the cells apart ("+"-prefixed keys too), as the progress lines show it.
    assert [c.label for c in cells] == [
        "module=rmsnorm_naive ++timing.iters=5",
        "module=rmsnorm_naive ++timing.iters=7",
        "module=rmsnorm_compiled ++timing.iters=5",
        "module=rmsnorm_compiled ++timing.iters=7",
    ]
    assert [c.compiled for c in cells] == [False, False, True, True]  # the fork server warms the compiler for these
    assert all(c.isolated and (c.rtol, c.atol) == (0.02, 0.001) and c.backend == "auto" for c in cells)
    assert len({c.run_id for c in cells}) == 4 and all(c.spec is not None and c.spec.run_id == c.run_id for c in cells)
    assert cells[0].process_key != cells[1].process_key  # another timing: never timed in one process together
    # The files a later sweep names when they change (where the layers' package sits: a checkout or site-packages).
    assert cells[0].code and all("neuronexp/modules/" in path for path in cells[0].code)
    assert "_target_: neuronexp.modules.NaiveRMSNorm" in cells[0].yaml() and "iters: 5" in cells[0].yaml()
    # A sweep of one cell: nothing tells cells apart, the label is the whole job.
    (one,) = plan_sweep(master, [fixed], CellComposer(master, loader))
    assert one.label == " ".join(fixed)


def _cell(num: int, where: str, run_id: str) -> PlannedCell:
    return PlannedCell(num=num, dir=where, overrides=[], run_id=run_id, backend="cpu", label=f"module=m{num}")


def test_two_cells_in_one_directory_or_of_one_configuration_are_refused_in_one_line() -> None:
    master = OmegaConf.create({"hydra": {"sweep": {"dir": "s", "subdir": "x${oc.env:NOWHERE,}"}}})
    check_distinct([_cell(0, "a", "r0"), _cell(1, "b", "r1"), _cell(2, "c", "r2")], master)  # all distinct: fine
    with pytest.raises(ConfigError) as err:
        check_distinct([_cell(0, "a", "r0"), _cell(1, "b", "r1"), _cell(2, "a", "r2")], master)
    assert str(err.value) == (
        "hydra.sweep.subdir=x${oc.env:NOWHERE,}: cells 0 and 2 would share the job directory 'a'; "
        "keep ${hydra.job.num} in it, or every swept key"
    )
    with pytest.raises(ConfigError) as err:
        check_distinct([_cell(0, "a", "r0"), _cell(1, "b", "r1"), _cell(2, "c", "r1")], master)
    assert str(err.value) == "sweep=module=m2: cells 1 and 2 are the same configuration"
    with pytest.raises(ConfigError) as err:
        check_distinct([_cell(0, "a", "r0"), _cell(1, "/abs", "r1")], master)
    assert str(err.value) == (
        "hydra.sweep.subdir=x${oc.env:NOWHERE,}: a cell's job directory would be '/abs': it must be a relative path "
        "inside hydra.sweep.dir (no '..', '.', or leading '/'), such as the default ${hydra.job.num}"
    )


def test_planning_a_sweep_imports_none_of_its_layers(loader, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The code checks run in a process forked from the fork server's template (tests/engine/test_checks_forked.py):
    # the sweep's own process plans its cells from their plain values and never imports a user's layer.
    (tmp_path / "planned_layer.py").write_text("raise RuntimeError('imported while planning')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    master = compose("config", return_hydra_config=True)
    jobs = grid({}, ["module._target_=planned_layer.Scale", "~module.hidden_size", "~module.eps", "timing.iters=5,7"])
    cells = plan_sweep(master, jobs, CellComposer(master, loader))
    assert len(cells) == 2 and "planned_layer" not in sys.modules
