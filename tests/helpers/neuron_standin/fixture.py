"""Fixtures that put the torch-neuronx STAND-IN and the fake `neuron-explorer` in place for one test."""

from __future__ import annotations

import importlib
import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from neuronexp.backends.neuron import NeuronBackend

STANDIN_DIR = Path(__file__).resolve().parent
CORE_ENV = ("NEURON_RT_VISIBLE_CORES", "NEURON_RT_NUM_CORES", "NEURON_RT_INSPECT_ENABLE")


def _drop_standin() -> None:
    events = sys.modules.get("torch_neuronx._device_events")
    if events is not None:
        events.uninstall()
    for name in [m for m in sys.modules if m == "torch_neuronx" or m.startswith("torch_neuronx.")]:
        del sys.modules[name]
    if hasattr(torch, "neuron"):
        delattr(torch, "neuron")


@pytest.fixture
def standin(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The stand-in `torch_neuronx` (API variant from `request.param`, default "documented"), imported.

    The backend's device becomes "cpu" for the test; NEURON_RT_* and `torch.neuron` are restored after it.
    """
    if "torch_neuronx" in sys.modules or hasattr(torch, "neuron"):
        pytest.skip("a real torch-neuronx is loaded; the stand-in tests run where it is absent")
    saved = {k: os.environ.get(k) for k in CORE_ENV}
    for k in CORE_ENV:
        os.environ.pop(k, None)
    monkeypatch.syspath_prepend(str(STANDIN_DIR))
    monkeypatch.setattr(NeuronBackend, "device_type", "cpu")
    monkeypatch.setenv("PATH", os.environ.get("PATH", ""))  # explorer fixtures prepend to it
    tnx = importlib.import_module("torch_neuronx")
    tnx.profiling.select_api(getattr(request, "param", "documented"))
    try:
        yield tnx
    finally:
        _drop_standin()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.fixture
def fake_explorer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A `neuron-explorer` on PATH that runs fake_neuron_explorer.py; returns the file its argv is logged to."""
    bin_dir = tmp_path / "fake-bin"
    bin_dir.mkdir()
    exe = bin_dir / "neuron-explorer"
    exe.write_text(
        f"#!{sys.executable}\nimport runpy, sys\nsys.argv[0] = 'neuron-explorer'\n"
        f"runpy.run_path({str(STANDIN_DIR / 'fake_neuron_explorer.py')!r}, run_name='__main__')\n"
    )
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    log = tmp_path / "explorer-argv.jsonl"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("FAKE_EXPLORER_LOG", str(log))
    return log


@pytest.fixture
def no_explorer(monkeypatch: pytest.MonkeyPatch) -> None:
    """No `neuron-explorer` anywhere neuronexp looks."""
    monkeypatch.setenv("PATH", os.defpath)
    monkeypatch.setattr("neuronexp.backends.neuron.explorer.SEARCH_DIRS", ())
