"""The torch-neuronx STAND-IN switched from outside, as a developer or an outside check uses it: its folder on
PYTHONPATH (torch's device-backend autoload loads it with `import torch`, as TorchNeuron's entry point does), its
answers in NEURON_STANDIN_SWITCHES, the fake neuron-explorer on PATH, and a plain `neuronexp backend=neuron` process.
Each route issue 42 names ends as the docs promise. Planted figures, not Trainium's."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import neuronexp
from helpers import FAST
from helpers.neuron_standin.fixture import STANDIN_DIR

# planted.DEVICE_US, naive RMSNorm per step: 112 us in six executions, 90 of them three aten::mul.
STEP_US, MUL_US = 112.0, 90.0


def _run(cli_process, tmp_path: Path, switches: str, name: str, *args: str):
    env = {
        "PYTHONPATH": os.pathsep.join([str(STANDIN_DIR), os.environ.get("PYTHONPATH", "")]),
        "NEURON_STANDIN_SWITCHES": switches,
        "FAKE_EXPLORER_FRAMEWORK": "off",  # NEFFs without debug names: no per-op table from Explorer
    }
    res = cli_process("backend=neuron", *FAST, "profiler.schedule.repeat=1", f"hydra.run.dir={name}", *args, env=env)
    assert res.returncode == 0, res.stderr[-3000:]
    results = neuronexp.load(tmp_path / name)
    cell = results.cells.iloc[0]
    assert cell["status"] == "ok", cell["error"]
    return res, cell, results.ops[results.ops["device_type"] == "CPU"]


@pytest.mark.slow  # four neuronexp processes, each importing torch and the stand-in: about 40 s
def test_every_route_from_outside(cli_process, fake_explorer: Path, tmp_path: Path) -> None:
    # The runtime trace only: no per-op split, NaN per op, said in the row and on the screen.
    res, cell, host = _run(cli_process, tmp_path, "key_averages=none", "r1")
    assert cell["device_time_source"] == "neuron_runtime" and cell["device_time_us"] == pytest.approx(STEP_US)
    assert cell["neuron_per_op_source"] == "none" and host["self_device_us"].isna().all()
    assert "per-op split missing: " in cell["warnings"] and "MISSING: per-op split missing: " in res.stdout
    # Device time on the host rows (profiler stubs): a source, reconciled with the runtime trace.
    res, cell, host = _run(cli_process, tmp_path, "key_averages=host_rows,runtime_rows=true", "r2")
    assert cell["device_time_sources"] == "profiler_host_rows,neuron_runtime" and cell["device_time_check"] == "agree"
    assert cell["neuron_device_time_host_rows_us"] == pytest.approx(STEP_US)
    # correlate_device_time dropped by a NeuronConfig(**kwargs): ignored, not taken.
    res, cell, host = _run(cli_process, tmp_path, "api=kwargs_drop", "r3")
    assert cell["neuron_correlate_device_time"] == "ignored" and "correlate_device_time given but IGNORED" in res.stdout
    # Six executions sharing one flow id: the busy time of six executions.
    res, cell, host = _run(cli_process, tmp_path, "flow_ids=shared", "r4")
    assert cell["neuron_device_time_runtime_us"] == pytest.approx(STEP_US)
    assert cell["neuron_runtime_executions_per_step"] == 6 and cell["neuron_cores"].startswith("NEURON_RT_NUM_CORES=1")
