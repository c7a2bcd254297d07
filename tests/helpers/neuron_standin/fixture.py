"""Fixtures that put the torch-neuronx STAND-IN and the fake `neuron-explorer` in place for one test."""

from __future__ import annotations

import importlib
import io
import os
import stat
import sys
from collections.abc import Iterator
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest
import torch

from neuronexp.backends.neuron.neuron_backend import NeuronBackend
from neuronexp.config import NeuronDeviceConfig, NeuronProfilerConfig, ProfilerConfig, RunConfig

STANDIN_DIR = Path(__file__).resolve().parent
# Process environment the backend sets for a cell (the NEFF cache is set for the process): put back after each test.
CORE_ENV = (
    "NEURON_RT_VISIBLE_CORES",
    "NEURON_RT_NUM_CORES",
    "NEURON_RT_INSPECT_ENABLE",
    "TORCH_NEURONX_NEFF_CACHE_DIR",
    "NEURONEXP_NEFF_CACHE_PINNED",
    "NEURONEXP_NEURON_DEBUG",
    "NEURONEXP_NEURON_CORES_DEFAULT",
)


def neuron_config(device: NeuronDeviceConfig | None = None, profiler: NeuronProfilerConfig | None = None) -> RunConfig:
    """A config with these Neuron options (the rest the schema's defaults), for resolve_backend("neuron", ...)."""
    return RunConfig(
        neuron=device or NeuronDeviceConfig(), profiler=ProfilerConfig(neuron=profiler or NeuronProfilerConfig())
    )


def _drop_standin() -> None:
    for part in ("_device_events", "_runtime", "_dynamo_backend"):
        module = sys.modules.get(f"torch_neuronx.{part}")
        if module is not None:
            getattr(module, "uninstall", getattr(module, "unregister", None))()
    for name in [m for m in sys.modules if m == "torch_neuronx" or m.startswith("torch_neuronx.")]:
        del sys.modules[name]
    if hasattr(torch, "neuron"):
        delattr(torch, "neuron")


@pytest.fixture
def standin(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The stand-in `torch_neuronx` (API variant from `request.param`, default "documented"), imported.

    The backend's device becomes "cpu" for the test; NEURON_RT_*, the NEFF cache variable and `torch.neuron` are
    restored after it. Set `STATE.switches` before the backend runs to pick an answer to each open question.
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
    tnx.STATE.switches.api = getattr(request, "param", "documented")
    tnx.profiling.select_api(tnx.STATE.switches.api)
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


@pytest.fixture
def explorer_in_process(fake_explorer: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The fake `neuron-explorer`, run in this process where neuronexp would start it as a command: the same exit
    status and output, without a Python start-up per cell (for tests that run many cells)."""
    monkeypatch.syspath_prepend(str(STANDIN_DIR))
    fake = importlib.import_module("fake_neuron_explorer")

    def run(cmd: list[str], timeout_s: float) -> tuple[int | None, str]:
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            try:
                code = fake.main(cmd[1:])
            except SystemExit as exc:  # argparse rejecting a flag
                code = exc.code if isinstance(exc.code, int) else 2
        return code, out.getvalue() + "\n" + err.getvalue()

    monkeypatch.setattr("neuronexp.backends.neuron.explorer._run", run)
    return fake_explorer
