"""Hydra finds neuronexp's sweeper the way it finds any plugin: namespace-package discovery under `hydra_plugins` (that
it ships `py.typed` is checked with the wheel's contents, test_packaging). `hydra/launcher=slurm` is a preset of
submitit's own launcher, whose keys neuronexp's Slurm executor reads (engine.launched)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra.core.plugins import Plugins
from hydra.plugins.launcher import Launcher
from hydra.plugins.sweeper import Sweeper


def _found(kind: type) -> set[str]:
    return {f"{c.__module__}.{c.__name__}" for c in Plugins.instance().discover(kind)}


def test_hydra_discovers_the_sweeper() -> None:
    assert "hydra_plugins.neuronexp_sweeper.neuronexp_sweeper.NeuronexpSweeper" in _found(Sweeper)


def test_the_slurm_preset_is_submitits_launcher() -> None:
    # With the `slurm` extra only.
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher", reason="pip install '.[slurm]'")
    assert "hydra_plugins.hydra_submitit_launcher.submitit_launcher.SlurmLauncher" in _found(Launcher)
    text = (Path(__file__).parents[2] / "conf" / "hydra" / "launcher" / "slurm.yaml").read_text()
    assert "_target_" not in text and "- submitit_slurm" in text
