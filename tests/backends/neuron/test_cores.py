"""How Neuron's options map onto NeuronCores when the generic sweep code asks the backend's row (backends/neuron/):
the pool the slots split, the check that they fit before any cell runs, and a slotted cell's config unpinned."""

from __future__ import annotations

import pytest

from neuronexp.cellprocess.launch import _unpinned, check_slots_fit, default_pool
from neuronexp.config import CellSpec, ConfigError, LauncherConfig, NeuronDeviceConfig, RunConfig
from neuronexp.engine.preflight import _slot_ask


def _cfg(visible_cores: str | None = None, **launcher: object) -> RunConfig:
    return RunConfig(launcher=LauncherConfig(**launcher), neuron=NeuronDeviceConfig(visible_cores=visible_cores))


def test_the_pool_is_the_launchers_else_the_configs_cores_else_the_runtimes_else_the_first_the_slots_need(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("NEURON_RT_VISIBLE_CORES", raising=False)
    assert default_pool("neuron", _cfg(devices=2, per_device=2)) == ["0", "1", "2", "3"]
    monkeypatch.setenv("NEURON_RT_VISIBLE_CORES", "8-9")
    assert default_pool("neuron", _cfg(devices=2)) == ["8", "9"]
    assert default_pool("neuron", _cfg("4-7", devices=2)) == ["4", "5", "6", "7"]
    assert default_pool("neuron", _cfg("4-7", devices=2, pool="12-13")) == ["12", "13"]


def test_slots_beyond_the_selected_cores_are_refused_before_any_cell(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NEURON_RT_VISIBLE_CORES", raising=False)
    check_slots_fit("neuron", _cfg(devices=4))  # nothing selected: the first four cores are assumed
    with pytest.raises(ConfigError, match=r"^launcher.devices=4: does not fit .* needs 4 NeuronCores; 2 available"):
        check_slots_fit("neuron", _cfg("0-1", devices=4))


def test_cells_that_select_other_cores_have_their_slots_checked_apart() -> None:
    def spec(cores: str | None) -> CellSpec:
        return CellSpec(config=_cfg(cores, devices=2), run_id="r", experiment="e", module_name="m")

    assert _slot_ask(spec("0-1")) == _slot_ask(spec("0-1")) != _slot_ask(spec("0-3")) != _slot_ask(spec(None))


def test_a_slotted_cell_drops_the_configs_core_selection_on_a_copy() -> None:
    spec = CellSpec(config=_cfg("0-3"), run_id="r", experiment="e", module_name="m")
    spec.config.neuron.num_cores = 4
    placed = _unpinned(spec, "neuron")
    assert (placed.config.neuron.visible_cores, placed.config.neuron.num_cores) == (None, None)
    assert (spec.config.neuron.visible_cores, spec.config.neuron.num_cores) == ("0-3", 4)  # the sweep's spec
    assert _unpinned(spec, "cpu").config.neuron.visible_cores == "0-3"  # not the host's option to drop
