"""`module=rmsnorm_compiled` on Neuron through the command line (in this process) over the torch-neuronx STAND-IN,
whose `neuron` torch.compile backend runs the graph eagerly on the CPU and whose runtime counts the compiled region
as one NEFF execution (planted.py): one graph, no break, no fullgraph note, the region's device time."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

import neuronexp


@pytest.mark.slow  # torch.compile (Dynamo's first trace in the process): about 7 s
def test_rmsnorm_compiled_is_one_full_graph_with_its_device_time(standin, no_explorer: None, cli, tmp_path: Path):
    importlib.import_module("torch_neuronx._dynamo_backend").register()  # Dynamo looked its entry points up already
    res = cli(
        "backend=neuron", "module=rmsnorm_compiled", "input.shape=[1,8,64]", "profiler=quick", "hydra.run.dir=run"
    )
    assert res.returncode == 0, res.stderr
    cells, ops = neuronexp.load(tmp_path / "run").cells, neuronexp.load(tmp_path / "run").ops
    cell = cells.iloc[0]
    assert cell["status"] == "ok" and bool(cell["compiled"]), cell["error"]
    assert cell["neuron_graph_breaks"] == 0 and cell["neuron_compiled_graphs"] == 1
    assert "fullgraph" not in str(cell["warnings"])  # conf/module/rmsnorm_compiled.yaml sets fullgraph: true
    # planted: the compiled graph runs as one NEFF of 18 us; its ops inside run as part of it, not on their own.
    assert cell["device_time_source"] == "profiler_device_events"
    assert cell["device_time_us"] == pytest.approx(18)  # a mean over the active steps, summed in float
    device = ops[ops["device_type"] == "PrivateUse1"]
    assert cell["device_ops"] == 1 and len(device) == 1
    assert device["op_raw"].iloc[0].startswith("neuron_exec::Torch-Compiled Region")
    assert device["self_device_us"].iloc[0] == pytest.approx(18)
    assert "Trainium first contact" in res.stdout
