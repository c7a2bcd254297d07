"""Hydra finds both neuronexp plugins the way it finds any plugin: namespace-package discovery under
`hydra_plugins` (that each ships `py.typed` is checked with the wheel's contents, test_packaging)."""

from __future__ import annotations

import pytest
from hydra.core.plugins import Plugins
from hydra.plugins.launcher import Launcher
from hydra.plugins.sweeper import Sweeper


def _found(kind: type) -> set[str]:
    return {f"{c.__module__}.{c.__name__}" for c in Plugins.instance().discover(kind)}


def test_hydra_discovers_the_sweeper() -> None:
    assert "hydra_plugins.neuronexp_sweeper.neuronexp_sweeper.NeuronexpSweeper" in _found(Sweeper)


def test_hydra_discovers_the_slurm_launcher() -> None:
    # The launcher extends hydra-submitit-launcher's, so it exists only with the `slurm` extra.
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher", reason="pip install '.[slurm]'")
    assert "hydra_plugins.neuronexp_slurm.neuronexp_slurm.NeuronexpSlurmLauncher" in _found(Launcher)
