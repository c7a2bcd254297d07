"""What TorchNeuron says of a cell's compiles and memory, read as neuronexp reads it, over the torch-neuronx STAND-IN
(its emulated compiler counts compilations and cache hits as the April-2026 source names them, and records planted
per-graph compile phases): per cell, never the process's running totals. Planted figures, not Trainium's."""

from __future__ import annotations

import dataclasses
import importlib
import math
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from tests.backends.neuron.test_open_questions import _spec

from neuronexp.backends.neuron.checks import memory_columns
from neuronexp.cell.group import run_cell
from neuronexp.config import CompileConfig, NeuronProfilerConfig


def _cell(tmp_path: Path, name: str, compiled: bool = False):
    spec = _spec()  # its NEFF cache a folder of this test's: nothing another test compiled is on disk there
    profiler = dataclasses.replace(
        spec.config.profiler, neuron=NeuronProfilerConfig(neff_cache_dir=str(tmp_path / "c"))
    )
    spec = dataclasses.replace(spec, config=dataclasses.replace(spec.config, profiler=profiler))
    if compiled:
        spec = dataclasses.replace(spec, config=dataclasses.replace(spec.config, compile=CompileConfig(enabled=True)))
    (tmp_path / name).mkdir()
    cell = run_cell(dataclasses.replace(spec, run_id=name), tmp_path / name).cells.iloc[0]
    assert cell["status"] == "ok", cell["error"]
    return cell


def test_compiles_and_cache_hits_are_the_cells_own(standin, explorer_in_process: Path, tmp_path: Path) -> None:
    first = _cell(tmp_path, "first")  # naive RMSNorm: four NEFFs (mul, mean, add, rsqrt), each compiled once
    assert (first["neuron_compilations"], first["neuron_compile_cache_hits"]) == (4, 0)
    assert math.isnan(first["neuron_compile_s"])  # eager: first_call_s
    second = _cell(tmp_path, "second")  # the same graphs again in this process: all from the cache
    assert (second["neuron_compilations"], second["neuron_compile_cache_hits"]) == (0, 4)
    assert standin.STATE.metrics_enabled  # collection is off by default: neuronexp turned it on


@pytest.mark.slow  # torch.compile (Dynamo's first trace in the process): about 7 s
def test_a_compiled_cells_compile_seconds_are_its_graphs(standin, explorer_in_process: Path, tmp_path: Path) -> None:
    importlib.import_module("torch_neuronx._dynamo_backend").register()  # Dynamo looked its entry points up already
    _cell(tmp_path, "eager")
    cell = _cell(tmp_path, "compiled", compiled=True)
    # planted per graph: FX passes 100 us, lowering 400, neuronx-cc 29,500; one graph
    assert cell["neuron_compile_s"] == pytest.approx(0.03) and cell["neuron_compiled_graphs"] == 1


def test_counters_a_version_lacks_are_nan(standin, explorer_in_process: Path, tmp_path, monkeypatch) -> None:
    monkeypatch.delattr(standin.metrics, "get_counter_value")
    monkeypatch.delattr(standin.neuron, "get_dynamo_metrics")
    cell = _cell(tmp_path, "bare")
    assert all(math.isnan(cell[c]) for c in ("neuron_compilations", "neuron_compile_cache_hits", "neuron_compile_s"))


def test_device_memory_comes_from_torch_accelerator_where_it_is_this_device(standin, monkeypatch) -> None:
    assert memory_columns(standin)["neuron_memory_source"] == "torch.neuron"  # the stand-in's accelerator is none
    accelerator = SimpleNamespace(
        current_accelerator=lambda: SimpleNamespace(type="neuron"),
        max_memory_allocated=lambda: 7,
        max_memory_reserved=lambda: 9,
    )
    monkeypatch.setattr(torch, "accelerator", accelerator)
    cols = memory_columns(standin)
    assert cols == {
        "neuron_max_memory_allocated_bytes": 7.0,
        "neuron_max_memory_reserved_bytes": 9.0,
        "neuron_memory_source": "torch.accelerator",
    }
