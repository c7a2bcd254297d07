"""The cache key: every key that changes how a cell is measured changes its run_id, so a resume never reuses a
cell timed or profiled differently; where it runs and what it is compared with do not (Hydra compose API)."""

from __future__ import annotations

import copy

import pytest
import yaml
from hydra import compose, initialize_config_module
from hydra.core.global_hydra import GlobalHydra
from omegaconf import OmegaConf, open_dict

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
