"""The NEFF cache, pinned before the first compile (TORCH_NEURONX_NEFF_CACHE_DIR in the cell's process, the same
path given to NeuronConfig), over the torch-neuronx STAND-IN, whose emulated compiler writes each NEFF into the cache
the variable names when it first sees the NEFF."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from helpers.neuron_standin.fixture import _drop_standin, neuron_config
from neuronexp.backends import resolve_backend
from neuronexp.backends.neuron.neuron_backend import NeuronBackend
from neuronexp.config import ConfigError, NeuronDeviceConfig, NeuronProfilerConfig

VAR = "TORCH_NEURONX_NEFF_CACHE_DIR"


def _backend(**profiler: object) -> NeuronBackend:
    backend = resolve_backend("neuron", neuron_config(NeuronDeviceConfig(), NeuronProfilerConfig(**profiler)))
    assert isinstance(backend, NeuronBackend)
    return backend


def test_by_default_one_per_user_cache_serves_every_cell(standin, probe_cache: Path, tmp_path: Path) -> None:
    first, second = _backend(), _backend()  # two cells of one process (a comparison group, a sweep's fork)
    assert first.neff_cache.path == second.neff_cache.path == str(probe_cache / "neff") == os.environ[VAR]
    assert first.neff_cache.source == second.neff_cache.source == "neuronexp cache"  # the second's is still ours
    assert (probe_cache / "neff").is_dir() and oct((probe_cache / "neff").stat().st_mode & 0o777) == "0o700"
    first.profiler_kwargs(tmp_path)
    assert standin.STATE.configs[-1]["neff_cache_dir"] == first.neff_cache.path  # the same path to NeuronConfig


def test_the_users_own_variable_wins_and_is_recorded(standin, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(VAR, str(tmp_path / "mine"))
    backend = _backend(neff_cache_dir=str(tmp_path / "key"))
    assert backend.neff_cache.path == str(tmp_path / "mine") == os.environ[VAR]
    assert backend.neff_cache.source == "TORCH_NEURONX_NEFF_CACHE_DIR"
    assert backend.notes == [
        f"profiler.neuron.neff_cache_dir={tmp_path / 'key'} not used: {VAR}={tmp_path / 'mine'} is set"
    ]


def test_the_config_key_names_it_when_the_variable_is_unset(standin, tmp_path: Path) -> None:
    backend = _backend(neff_cache_dir=str(tmp_path / "key"))
    assert backend.neff_cache.path == str(tmp_path / "key") == os.environ[VAR]
    assert backend.neff_cache.source == "profiler.neuron.neff_cache_dir" and backend.notes == []


def test_it_is_pinned_before_neuronexp_imports_torch_neuronx(standin) -> None:
    _drop_standin()  # as in a process where nothing imported it yet (no autoload)
    backend = _backend()
    fresh = sys.modules["torch_neuronx"]
    assert fresh is not standin and fresh.STATE.neff_cache_at_import == backend.neff_cache.path
    assert backend.neff_cache.imported_before is False


def test_a_linked_default_cache_is_not_used(standin, probe_cache: Path, tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    link = probe_cache / "neff"
    moved = probe_cache / "neff.kept"
    if link.exists():
        link.rename(moved)
    link.symlink_to(tmp_path / "elsewhere")
    try:
        backend = _backend()
        assert backend.neff_cache.path != str(link) and Path(backend.neff_cache.path).is_dir()
        assert backend.notes == [f"{link} is a symbolic link: NEFFs compiled into a new folder instead"]
    finally:
        link.unlink()
        if moved.exists():
            moved.rename(link)


@pytest.mark.parametrize("standin", ["none"], indirect=True)
def test_a_backend_that_cannot_start_leaves_the_variable_as_it_was(standin, tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        _backend(neff_cache_dir=str(tmp_path / "new"))
    assert VAR not in os.environ and not (tmp_path / "new").exists()
