"""`baseline=` on the command line as docs/layers.md writes it, with one pair of shell quotes: the documented
example is taken from the doc, split as a shell would, and composed by Hydra into the rule it names."""

from __future__ import annotations

import re
import shlex

import pytest
from hydra import compose, initialize_config_module
from hydra.core.global_hydra import GlobalHydra
from omegaconf import OmegaConf

from helpers import REPO
from neuronexp.analysis.baseline import parse_baseline
from neuronexp.cli.main import typed_baseline


def _compose(*overrides: str):
    GlobalHydra.instance().clear()
    try:
        with initialize_config_module("neuronexp.conf", version_base="1.3"):
            return compose("config", overrides=list(overrides))
    finally:
        GlobalHydra.instance().clear()


def test_the_documented_example_works_as_written() -> None:
    examples = re.findall(r"`(baseline='[^`]+')`", (REPO / "docs" / "layers.md").read_text())
    assert examples, "docs/layers.md shows no baseline= example"
    for example in examples:
        (typed,) = shlex.split(example)  # what the shell hands neuronexp
        cfg = _compose("+experiment=layernorm", *typed_baseline([typed]))
        rule = parse_baseline(OmegaConf.to_container(cfg)["baseline"])
        assert rule == parse_baseline(typed.split("=", 1)[1]) and len(rule) >= 2, (example, rule)
    assert parse_baseline(_compose("+experiment=layernorm", *typed_baseline(shlex.split(examples[0])))["baseline"]) == {
        "module": "layernorm_fused",
        "compile.enabled": "false",
    }


@pytest.mark.parametrize(
    "typed, given",
    [
        ("baseline=module=a,compile.enabled=false", "baseline='module=a,compile.enabled=false'"),
        ("+baseline=compile.enabled=false", "+baseline='compile.enabled=false'"),
        ("baseline=rmsnorm_naive", "baseline=rmsnorm_naive"),  # Hydra reads these already: left as typed
        ("baseline='module=a,compile.enabled=false'", "baseline='module=a,compile.enabled=false'"),
        ("baseline={module: a}", "baseline={module: a}"),
        ("baseline=null", "baseline=null"),
        ("module=a,b", "module=a,b"),  # not the baseline: a sweep stays a sweep
    ],
)
def test_only_a_baseline_hydra_cannot_read_is_quoted(typed: str, given: str) -> None:
    assert typed_baseline([typed]) == [given]
