"""What TorchNeuron says of a cell's compiles and memory, read as neuronexp reads it, over the torch-neuronx STAND-IN
(its emulated compiler counts compilations and cache hits as the April-2026 source names them, and records planted
per-graph compile phases): per cell, never the process's running totals. Planted figures, not Trainium's."""

from __future__ import annotations

import dataclasses
import importlib
import math
from pathlib import Path
from types import ModuleType, SimpleNamespace

import pytest
import torch
from tests.backends.neuron.test_open_questions import _spec

from neuronexp.backends.neuron.checks import memory_columns
from neuronexp.backends.neuron.compile_metrics import CompileMetrics
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


def _metrics_from_now(tnx) -> CompileMetrics:
    metrics = CompileMetrics(tnx)
    metrics.start()
    return metrics


def test_counters_count_from_the_cells_start_and_hits_from_either_cache(standin) -> None:
    standin.STATE.counters = {"CompilationCache.TotalCompilations": 5, "CompilationCache.PersistentHits": 2}
    metrics = _metrics_from_now(standin)
    assert standin.STATE.metrics_enabled  # off by default: turned on at the cell's start
    for name in ("TotalCompilations", "InMemoryHits", "PersistentHits", "PersistentHits", "InMemoryMisses"):
        standin.metrics.count(f"CompilationCache.{name}")
    cols = metrics.columns(compiled=False)
    assert (cols["neuron_compilations"], cols["neuron_compile_cache_hits"]) == (1.0, 3.0)
    assert math.isnan(cols["neuron_compile_s"])  # an eager cell: its compiles are in first_call_s


def test_a_counter_this_version_lacks_or_refuses_is_nan(standin, monkeypatch: pytest.MonkeyPatch) -> None:
    kept = standin.metrics.get_counter_value
    monkeypatch.setattr(standin.metrics, "get_counter_value", lambda k: None if "Persistent" in k else kept(k))
    cols = _metrics_from_now(standin).columns(compiled=False)
    assert cols["neuron_compilations"] == 0.0 and math.isnan(cols["neuron_compile_cache_hits"])

    def refuse(name: str) -> int:
        raise KeyError(name)  # a binding that refuses a name it does not keep

    monkeypatch.setattr(standin.metrics, "get_counter_value", refuse)
    cols = _metrics_from_now(standin).columns(compiled=False)
    assert math.isnan(cols["neuron_compilations"]) and math.isnan(cols["neuron_compile_cache_hits"])


def test_a_version_whose_metrics_cannot_say_if_enabled_still_counts(standin, monkeypatch: pytest.MonkeyPatch) -> None:
    def unknown() -> bool:
        raise RuntimeError("no such switch in this version")

    monkeypatch.setattr(standin.metrics, "is_enabled", unknown)
    standin.STATE.metrics_enabled = True
    metrics = _metrics_from_now(standin)
    standin.metrics.count("CompilationCache.TotalCompilations")
    assert metrics.columns(compiled=False)["neuron_compilations"] == 1.0


def test_collection_off_in_a_version_that_cannot_say_if_enabled_is_turned_on(standin, monkeypatch) -> None:
    """Left off, the counters would not move, and the cell would read 0 compilations for one it compiled."""

    def unknown() -> bool:
        raise RuntimeError("no such switch in this version")

    monkeypatch.setattr(standin.metrics, "is_enabled", unknown)
    metrics = _metrics_from_now(standin)
    standin.metrics.count("CompilationCache.TotalCompilations")
    assert metrics.columns(compiled=False)["neuron_compilations"] == 1.0


def test_a_package_without_metrics_gives_nan_counters() -> None:
    cols = _metrics_from_now(ModuleType("not_torch_neuronx")).columns(compiled=True)
    assert all(math.isnan(v) for v in cols.values())


def test_a_compiled_cell_counts_the_graphs_compiled_since_its_start(standin) -> None:
    """The stand-in's torch.compile backend, called as Dynamo calls it, records a graph's planted compile phases
    (FX passes 100 us, lowering 400, neuronx-cc 29,500)."""
    from torch_neuronx._dynamo_backend import neuron_backend

    graph = torch.fx.symbolic_trace(torch.nn.ReLU())
    neuron_backend(graph, [])  # an earlier cell's graph
    metrics = _metrics_from_now(standin)
    assert math.isnan(metrics.columns(compiled=True)["neuron_compile_s"])  # nothing compiled since: not 0
    neuron_backend(graph, [])
    neuron_backend(graph, [])
    standin.STATE.graphs.append(SimpleNamespace(torch_neuronx_lower_us=1000, torch_neuronx_compile_us=None))
    assert metrics.columns(compiled=True)["neuron_compile_s"] == pytest.approx(0.061)
    assert math.isnan(metrics.columns(compiled=False)["neuron_compile_s"])


def test_graph_records_from_torch_neuronx_when_torch_neuron_has_none(standin, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(standin.neuron, "get_dynamo_metrics")
    records = [SimpleNamespace(torch_neuronx_compile_us=2e6)]
    monkeypatch.setattr(standin, "get_dynamo_metrics", lambda: list(records), raising=False)
    metrics = _metrics_from_now(standin)
    records.append(SimpleNamespace(torch_neuronx_compile_us=3e6))
    assert metrics.columns(compiled=True)["neuron_compile_s"] == 3.0  # microseconds to seconds, exactly

    def needs_more() -> list:
        raise RuntimeError("an older helper that needs what this process lacks")

    monkeypatch.setattr(standin, "get_dynamo_metrics", needs_more)
    assert math.isnan(_metrics_from_now(standin).columns(compiled=True)["neuron_compile_s"])
