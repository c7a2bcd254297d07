"""The cache key: every key that changes how a cell is measured changes its run_id, so a resume never reuses a
cell timed or profiled differently; where it runs and what it is compared with do not (Hydra compose API)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from hydra import compose, initialize_config_module
from hydra.core.global_hydra import GlobalHydra
from omegaconf import OmegaConf, open_dict

import neuronexp.conf
from neuronexp.config.compose import spec_from

BASE = ["backend=cpu", "input.shape=[1,8,64]", "input.dtype=float32"]

# Each measurement key with a value other than its default (docs/configuration.md).
MEASUREMENT = [
    "timing.warmup=3",
    "timing.iters=7",
    "timing.max_seconds=2.5",
    "timing.min_iters=2",
    "timing.rounds=3",
    "timing.round_gap_s=0.2",
    "threads=1",
    "allocator=system",
    "profiler.schedule.wait=2",
    "profiler.schedule.warmup=2",
    "profiler.schedule.active=2",
    "profiler.schedule.repeat=2",
    "profiler.record_shapes=true",
    "input.dtype=bfloat16",
    "compile.enabled=true",
    "correctness.enabled=false",
]
# Not measured: where the cell runs, what it is compared with, how roofs and tolerances are read.
NOT_MEASURED_OVERRIDES = [
    "launcher.cell_timeout_s=60",
    "baseline={module: rmsnorm_naive}",
    "roofline.probe=refresh",
    "correctness.rtol=0.5",
    "correctness.atol=0.1",
    "sweep.dry_run=true",
    "noise.round_spread=0.5",
    "correctness.float32_reference=false",
]


@pytest.fixture(scope="module")
def run_id():
    """run_id of the base config with `key=value` overrides set on it (one composition: each costs ~0.5 s)."""
    GlobalHydra.instance().clear()
    with initialize_config_module("neuronexp.conf", version_base="1.3"):
        base = compose("config", overrides=BASE, return_hydra_config=True)
    GlobalHydra.instance().clear()

    def of(*extra: str) -> str:
        cfg = copy.deepcopy(base)
        with open_dict(cfg):
            for override in extra:
                key, value = override.split("=", 1)
                OmegaConf.update(cfg, key, yaml.safe_load(value), merge=False)
        overrides = [*BASE, *extra]
        return spec_from(cfg, dict(cfg.hydra.runtime.choices), overrides, ",".join(overrides), check_code=False).run_id

    return of


@pytest.mark.parametrize("override", MEASUREMENT)
def test_each_measurement_key_changes_the_run_id(run_id, override: str) -> None:
    assert run_id(override) != run_id(), f"{override} would let a resume reuse a cell measured otherwise"


def test_the_measurement_keys_are_distinct_cells(run_id) -> None:
    assert len({run_id(o) for o in MEASUREMENT}) == len(MEASUREMENT)


@pytest.mark.parametrize("override", NOT_MEASURED_OVERRIDES)
def test_keys_that_change_no_measurement_keep_the_run_id(run_id, override: str) -> None:
    assert run_id(override) == run_id()


def test_the_run_id_is_stable_across_compositions(run_id) -> None:
    assert run_id("timing.iters=7") == run_id("timing.iters=7")


def test_one_list_says_what_a_cell_did_not_measure() -> None:
    """run_id, the `overrides` label and the names read from it leave out the same keys."""
    from neuronexp.analysis import overrides
    from neuronexp.config.compose import override_dirname

    task = ["module=rmsnorm_fused", *NOT_MEASURED_OVERRIDES]
    assert override_dirname(task) == "module=rmsnorm_fused"
    assert overrides.override_values(",".join(task)) == {"module": "rmsnorm_fused"}


def _every_option() -> list[list[str]]:
    conf = Path(neuronexp.conf.__file__).parent
    modules = [[f"module={p.stem}"] for p in sorted((conf / "module").glob("*.yaml"))]
    return modules + [[f"+experiment={p.stem}"] for p in sorted((conf / "experiment").glob("*.yaml"))]


def test_the_resolved_config_behind_a_run_id_is_omegaconfs_for_every_option() -> None:
    """as_plain replaced OmegaConf.structured + to_container (a third of planning a cell): the same data, so the same
    run_ids, for every module option and experiment shipped, with enums and nested dataclasses."""
    from neuronexp.config.compose import as_plain, to_run_config

    GlobalHydra.instance().clear()
    with initialize_config_module("neuronexp.conf", version_base="1.3"):
        for extra in _every_option():
            cfg = compose("config", overrides=["backend=cpu", *extra, "threads=2", "allocator=system"])
            run_cfg = to_run_config(cfg)
            before = OmegaConf.to_container(OmegaConf.structured(run_cfg), resolve=True, enum_to_str=True)
            assert as_plain(run_cfg) == before, extra
    GlobalHydra.instance().clear()


def test_a_jobs_config_without_hydras_node_leaves_the_composed_config_whole() -> None:
    from neuronexp.config.compose import without_hydra

    GlobalHydra.instance().clear()
    with initialize_config_module("neuronexp.conf", version_base="1.3"):
        cfg = compose("config", overrides=BASE, return_hydra_config=True)
    GlobalHydra.instance().clear()
    whole = OmegaConf.to_yaml(cfg)
    job = without_hydra(cfg)
    assert "hydra" not in job and "hydra" in cfg and OmegaConf.to_yaml(cfg) == whole
    assert cfg._get_node("hydra")._get_parent() is cfg  # the node shared during the copy still belongs to cfg
    expected = copy.deepcopy(cfg)
    with open_dict(expected):
        del expected["hydra"]
    assert OmegaConf.to_yaml(job) == OmegaConf.to_yaml(expected)
    job.timing.iters = 3  # a copy: the composed config keeps its value
    assert cfg.timing.iters != 3 and without_hydra(job) is job
