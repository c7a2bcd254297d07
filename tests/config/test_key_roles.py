"""One table of what each config key is (config.key_roles), read by the three stages that used to keep a list each: the
run_id and the `overrides` label (config.compose), the cells that may be timed together (engine.grouping), and the
labels neuronexp-compare joins cells on (compare.keys)."""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest

from neuronexp.compare.keys import LABELS as COLUMNS
from neuronexp.compare.keys import join_labels
from neuronexp.config.key_roles import LABELS, MEASURED, ROLES, SHARED, Role, drop_unmeasured, measured, role, shared
from neuronexp.config.schema import RunConfig
from neuronexp.engine.grouping import process_key


def _schema_keys(cls: type = RunConfig, prefix: str = "") -> list[str]:
    keys = []
    for f in dataclasses.fields(cls):
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else None
        nested = dataclasses.is_dataclass(default)
        keys += _schema_keys(type(default), f"{prefix}{f.name}.") if nested else [prefix + f.name]
    return keys


SCHEMA_KEYS = _schema_keys()


def test_every_key_of_the_schema_has_a_role() -> None:
    assert not [k for k in SCHEMA_KEYS if role(k) is None]


def test_every_key_of_the_table_is_the_schemas() -> None:
    nodes = {k.rsplit(".", i)[0] for k in SCHEMA_KEYS for i in range(k.count(".") + 1)}
    assert not set(ROLES) - nodes


def test_a_longer_key_beats_its_node_and_a_prefix_is_not_a_node() -> None:
    assert role("correctness.enabled") == Role.IDENTITY and role("correctness.rtol") == Role.JUDGED
    assert role("+timing.iters") == Role.TIMING and role("~launcher.pool") == Role.PLACEMENT
    assert role("timings.iters") is None and role("hydra.sweep.dir") is None
    assert measured("module.hidden_size") and not measured("launcher.devices") and not measured("correctness.atol")
    assert shared("timing.iters") and shared("threads") and not shared("profiler.with_stack")


@pytest.mark.parametrize("key", SCHEMA_KEYS)
def test_the_run_id_leaves_out_exactly_the_keys_not_measured(key: str) -> None:
    resolved: dict = {}
    node = resolved
    *path, leaf = key.split(".")
    for part in path:
        node = node.setdefault(part, {})
    node[leaf] = 1
    drop_unmeasured(resolved)
    kept = resolved
    for part in key.split("."):
        kept = kept.get(part) if isinstance(kept, dict) else None
    assert (kept == 1) == (role(key) in MEASURED)


@pytest.mark.parametrize("node", sorted({k.split(".")[0] for k in SCHEMA_KEYS}))
def test_cells_timed_together_agree_on_exactly_the_shared_nodes(node: str) -> None:
    config = RunConfig(module={"_target_": "x"})
    other = dataclasses.replace(config, **{node: object()})
    assert (process_key(config) != process_key(other)) == (ROLES.get(node) in SHARED)


def test_compare_joins_on_exactly_the_labels() -> None:
    overrides = ["threads=2", "module.eps=0.1", "timing.iters=5", "profiler.record_shapes=true", "input.seed=3"]
    cell = pd.Series({**dict.fromkeys(COLUMNS, "x"), "overrides": ",".join(overrides)})
    joined = set(join_labels(cell, [])) - set(COLUMNS)
    assert joined == {o.split("=")[0] for o in overrides if role(o.split("=")[0]) in LABELS}
    assert joined == {"threads", "module.eps", "input.seed"}
