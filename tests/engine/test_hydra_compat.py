"""sweep/_hydra.py repeats a few Hydra semantics to compose a sweep once per group choice; checked here
against Hydra's own full composition of every cell, so a Hydra upgrade that changes them fails loudly."""

from __future__ import annotations

import pytest
from hydra import compose, initialize_config_module
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import OmegaConf

from neuronexp.config import ConfigError
from neuronexp.engine._hydra import CellComposer, subdir_override
from neuronexp.engine.plan import grid

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
